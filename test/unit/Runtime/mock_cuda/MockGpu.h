//===- MockGpu.h - Controls of the host CUDA/NCCL mock ----------*- C++ -*-===//
//
// mock_cuda/cuda_runtime.h and nccl.h, implemented in MockGpu.cpp, run
// runtime/comm/NcclCommunicator.cpp on the host: ranks are threads of the
// test, "device memory" is host memory. What it models, as the CUDA and NCCL
// documentation state it:
//  - Streams run their work in order. A memcpy/memset runs when it reaches
//    the head of its stream; a collective or send/recv "arrives" there and
//    completes only when every member (the peer, for point-to-point) has
//    arrived too, so cudaStreamQuery says cudaErrorNotReady until then.
//  - Collectives of a communicator match by call order, sends and recvs by
//    order per (sender, receiver); calls between ncclGroupStart and
//    ncclGroupEnd arrive together (a grouped send and recv with one peer do
//    not deadlock; ungrouped they do, as NCCL documents).
//  - ncclCommInitRank meets the members that pass the same ncclUniqueId
//    (made by ncclGetUniqueId: fresh random bytes) and checks that they
//    agree on the size, that ranks are distinct and in range, and that no
//    two members share a device (NCCL refuses that: "Duplicate GPU").
//  - NCCL's semantics per op: ncclAvg pre-multiplies floats by 1/n (sums
//    and divides integers), ncclReduce writes only the root's buffer,
//    in-place only in the layouts NCCL allows.
//  - A member that is destroyed or aborted while others wait for it gives
//    them ncclRemoteError through ncclCommGetAsyncError; ncclCommAbort drops
//    the communicator's queued work (and what follows on its streams).
// What it checks and NCCL would not (bugs of the code under test): members
// that disagree on an op's kind, count, type, reduction or root; a grouped
// recv that overlaps a send of the same group, or other overlaps NCCL does
// not allow; a 2D copy or range beyond a cudaMalloc'd block; a stream on
// another device than its communicator; freeing what was not allocated.
// Each is recorded in takeViolations(), and the call (or the collective, as an
// async ncclInvalidUsage) fails.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_TEST_MOCK_CUDA_MOCKGPU_H
#define TESSEL_TEST_MOCK_CUDA_MOCKGPU_H

#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

namespace tessel::mockgpu {

/// Forgets every communicator, stream and record; `devices` devices. Call
/// when no rank thread is running.
void reset(int devices);
/// How long ncclCommInitRank waits for the other members (NCCL itself waits
/// without bound; this keeps a broken test bounded). Default 10 s.
void setInitTimeout(std::chrono::milliseconds timeout);

/// The calling thread's current device (cudaSetDevice).
int currentDevice();

/// One successful ncclCommInitRank.
struct InitRecord {
  std::string id; ///< the ncclUniqueId's bytes
  int nranks = 0;
  int rank = 0;
  int device = 0;
};
std::vector<InitRecord> inits();
/// ncclCommAbort calls so far.
int aborts();
/// Blocks of cudaMalloc not freed, streams not destroyed, communicators
/// neither destroyed nor aborted.
size_t liveAllocations();
size_t liveStreams();
size_t liveComms();
/// What the code under test did wrong (see above), one line each; cleared.
std::vector<std::string> takeViolations();

} // namespace tessel::mockgpu

#endif // TESSEL_TEST_MOCK_CUDA_MOCKGPU_H
