//===- Collectives.cpp - Collective instructions on the CPU ---------------===//
//
// The CPU's Collective family: every collective, send, recv and wait runs
// through the executor's CollectiveDriver (comm/CollectiveDriver.h), which
// the CUDA backend shares.
//
//===----------------------------------------------------------------------===//
#include "KernelRegistry.h"
#include "KernelResources.h"

namespace tessel::runtime::cpu {

void registerCollectiveKernels(KernelRegistry &r) {
  for (OpKind k : {OpKind::AllReduce, OpKind::AllGather, OpKind::ReduceScatter,
                   OpKind::AllToAll, OpKind::CollectivePermute,
                   OpKind::Broadcast, OpKind::Send, OpKind::Recv, OpKind::Wait})
    r.add(k, [](const KernelContext &c) {
      return c.resources.collectives.step(c.program, c.index, c.ptrs);
    });
}

} // namespace tessel::runtime::cpu
