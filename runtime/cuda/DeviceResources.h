//===- DeviceResources.h - What the CUDA executor lends kernels -*- C++ -*-===//
//
// Owned by CudaExecutor. Kernel factories (CudaKernelRegistry.h) reserve
// device memory here while the steps are built; the executor allocates it
// once every step is built, when the sizes are known, and steps read the
// addresses when they run (LateAddress).
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_RUNTIME_CUDA_DEVICERESOURCES_H
#define TESSEL_RUNTIME_CUDA_DEVICERESOURCES_H

#include "tessel/runtime/CollectiveDriver.h"
#include "tessel/runtime/Program.h"

#include <algorithm>
#include <cstddef>
#include <cublasLt.h>
#include <cuda_runtime.h>
#include <utility>
#include <vector>

namespace tessel::runtime::cuda {

/// Device memory allocated after the steps are built: a step resolves its
/// address when it runs.
class LateAddress {
public:
  LateAddress() = default;
  LateAddress(void *const *base, size_t offset) : base(base), offset(offset) {}
  template <typename T = void> T *get() const {
    return static_cast<T *>(
        static_cast<void *>(static_cast<char *>(*base) + offset));
  }

private:
  void *const *base = nullptr;
  size_t offset = 0; // bytes
};

/// Gemini's moves of host chunks (DataMovement.cpp, chunk_fetch): copies
/// from pinned host memory into the arena on a copy stream of their own,
/// each fetch's copies followed by an event that the compute stream waits
/// on right before the first instruction that reads a copy.
struct ChunkMoves {
  /// The copy stream, created by the first fetch that needs it.
  cudaStream_t stream = nullptr;
  /// Every event the fetches created (the executor destroys them).
  std::vector<cudaEvent_t> events;
  /// (instruction, event): the compute stream waits on the event right
  /// before running the instruction.
  std::vector<std::pair<size_t, cudaEvent_t>> waits;

  /// A new event (no timing), owned here.
  cudaError_t newEvent(cudaEvent_t &out) {
    cudaError_t e = cudaEventCreateWithFlags(&out, cudaEventDisableTiming);
    if (e == cudaSuccess)
      events.push_back(out);
    return e;
  }
  cudaError_t copyStream(cudaStream_t &out) {
    if (!stream) {
      cudaError_t e =
          cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
      if (e != cudaSuccess) {
        stream = nullptr;
        return e;
      }
    }
    out = stream;
    return cudaSuccess;
  }
};

struct DeviceResources {
  /// Reserves `bytes` (256-byte aligned) at the end of a region of `total`
  /// bytes; returns their offset.
  static size_t reserve(size_t bytes, size_t &total) {
    size_t off = total;
    total += (bytes + 255) / 256 * 256;
    return off;
  }

  /// `bytes` of device memory of one instruction's own, kept between runs.
  LateAddress reserveExtra(size_t bytes) {
    return LateAddress(&extra, reserve(bytes, extraBytes));
  }
  /// `bytes` of scratch shared by every instruction (one stream: one user at
  /// a time).
  LateAddress reserveScratch(size_t bytes) {
    scratchBytes = std::max(scratchBytes, bytes);
    return LateAddress(&scratch, 0);
  }
  /// The two slots (position, value) of the index check of instruction
  /// `index` (gather, gather_elements, gather_grad: launchGatherCheck)
  /// against an axis of size `dim`: reset before each run and reported by
  /// run() after it.
  LateAddress addGatherCheck(size_t index, const Op &op, int64_t dim) {
    gathers.push_back({index, &op, dim});
    return LateAddress(&slots,
                       (gathers.size() - 1) * 2 * sizeof(unsigned long long));
  }

  // A world of several ranks (an NCCL communicator on this device), whose
  // collectives go through `collectives` (groups checked and subgroups
  // created at creation); otherwise collectives are device copies.
  bool multiRank = false;
  CollectiveDriver collectives;

  // Host chunks' fetches: the copy stream and its events.
  ChunkMoves moves;

  /// Pinned host allocations of the steps (custom_call's staging), freed
  /// by the executor.
  std::vector<void *> pinned;

  /// cuBLASLt's handle, created by the first bf16 GEMM (Bf16Gemm.h) and
  /// destroyed by the executor.
  cublasLtHandle_t lt = nullptr;

  // Allocated by the executor once every step is built.
  void *extra = nullptr;   // per-instruction memory; the gather slots last
  void *scratch = nullptr; // im2col columns, bf16 GEMM operands
  void *slots = nullptr;   // 2 unsigned long long per gather, inside `extra`
  size_t extraBytes = 0, scratchBytes = 0;
  struct GatherCheck {
    size_t index; // the instruction
    const Op *op;
    int64_t dim; // the size of the axis its indices address
  };
  std::vector<GatherCheck> gathers;
};

} // namespace tessel::runtime::cuda

#endif // TESSEL_RUNTIME_CUDA_DEVICERESOURCES_H
