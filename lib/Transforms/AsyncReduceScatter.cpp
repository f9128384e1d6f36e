//===- AsyncReduceScatter.cpp - ZeRO: gradient reduce_scatters in flight --===//
//
// ZeRO stages 2 and 3 reduce each gradient with a reduce_scatter that the
// partitioner inserts right where the gradient is computed, in the backward;
// its block is read only by the sharded update at the end of the step. This
// pass marks such reduce_scatters `tessel.async`: the runtime issues each on
// its communication thread and waits for it right before the first use of
// its result, so the rest of the backward overlaps the communication. The
// reduce_scatters keep their order (every rank issues them in program order
// on one thread) and their values.
//
//===----------------------------------------------------------------------===//

#include "dialects/tessel/TesselOps.h"
#include "tessel/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mlir::tessel {
#define GEN_PASS_DEF_ASYNCREDUCESCATTERPASS
#include "tessel/Transforms/Passes.h.inc"

namespace {

struct AsyncReduceScatterPass
    : impl::AsyncReduceScatterPassBase<AsyncReduceScatterPass> {
  using Base::Base;

  void runOnOperation() override {
    for (auto fn : getOperation().getOps<func::FuncOp>()) {
      if (fn.isExternal() || !fn.getBody().hasOneBlock())
        continue;
      Block &block = fn.getBody().front();
      for (auto rs : block.getOps<ReduceScatterOp>()) {
        // The exporter waits right before an instruction that reads the
        // result: a shard_constraint is an alias, no instruction, and a
        // user in a nested region is no instruction of this block.
        bool waitable = !rs->use_empty();
        for (Operation *user : rs->getUsers())
          if (user->getBlock() != &block || isa<ShardConstraintOp>(user))
            waitable = false;
        if (waitable)
          rs->setAttr(TesselDialect::kAsyncAttrName,
                      UnitAttr::get(&getContext()));
      }
    }
  }
};

} // namespace
} // namespace mlir::tessel
