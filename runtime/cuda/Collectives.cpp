//===- Collectives.cpp - Collectives, send and recv on CUDA ---------------===//
//
// On one rank they are device copies with the local communicator's
// semantics (a collective_permute without a (0, 0) pair gives zeros). With
// a multi-rank world (an NCCL communicator, whose tensors are device
// pointers) the shared CollectiveDriver (comm/CollectiveDriver.h) drives it
// after the stream is synchronised. A gradient bucket's all_reduce runs in
// place there too (its `wait` does nothing): NCCL on a communication stream
// overlapping the compute stream, with an event for the wait, is the CUDA
// form of the CPU's communication thread, not written yet.
//
//===----------------------------------------------------------------------===//
#include "CudaKernelRegistry.h"
#include "CudaStatus.h"

#include <string>

namespace tessel::runtime::cuda {

namespace {

Status makeCollective(const KernelContext &ctx, Step &out) {
  const Op &op = ctx.op;
  cudaStream_t s = ctx.stream;
  if (ctx.resources.multiRank) {
    // NCCL runs synchronously on its own stream: the operands must be
    // complete first, and its results are complete when it returns.
    std::function<Status()> inner =
        ctx.resources.collectives.step(ctx.program, ctx.index, ctx.ptrs);
    out = [=] {
      TSL_CUDA(cudaStreamSynchronize(s), "waiting for a collective's operands");
      return inner();
    };
    return Status::ok();
  }
  // One rank: what the local communicator does, on device memory.
  if (op.kind == OpKind::Wait) {
    out = [] { return Status::ok(); };
    return Status::ok();
  }
  const CollectiveAttrs &c = op.coll;
  if (op.kind == OpKind::Send || op.kind == OpKind::Recv) {
    const std::string msg =
        std::string(op.kind == OpKind::Send ? "send to" : "recv from") +
        " rank " + std::to_string(c.peer) + ": this run has a single rank";
    out = [msg] { return Status::error(msg); };
    return Status::ok();
  }
  if (op.kind == OpKind::Broadcast && c.root != 0) {
    const std::string msg =
        "root " + std::to_string(c.root) + " is out of range for a group of 1";
    out = [msg] { return Status::error(msg); };
    return Status::ok();
  }
  void *x = ctx.operand(0), *y = ctx.result(0);
  const size_t bytes = ctx.out(0).bytes;
  if (op.kind == OpKind::CollectivePermute && c.pairs.empty()) {
    // No (0, 0) pair: nobody sends to this rank, which gets zeros.
    out = [=] {
      if (bytes)
        TSL_CUDA(cudaMemsetAsync(y, 0, bytes, s), "cudaMemsetAsync");
      return Status::ok();
    };
    return Status::ok();
  }
  out = deviceCopyStep(x, y, bytes, s);
  return Status::ok();
}

} // namespace

void registerCollectiveKernels(KernelRegistry &registry) {
  registerFamily(registry, kCollectiveKinds,
                 [](OpKind) -> KernelFactory { return makeCollective; });
}

} // namespace tessel::runtime::cuda
