//===- GatherAtUse.cpp - FSDP: gather a sharded parameter at each use -----===//
//
// The partitioner gathers a value once, right after its definition, for all
// its users: for a parameter that -tessel-zero stage 3 keeps in blocks that
// is the top of the step, and the whole parameter would stay alive from
// there to its last use in the backward. This pass repeats each all_gather
// of a tessel.weight right before each user instead, so each gathered copy
// lives only for its use (FSDP: gather, use, free; again in the backward).
// A local_slice of a weight (ZeRO stages 1 and 2: the block of a whole
// parameter that the sharded update reads) moves to its use likewise,
// instead of living from the top of the step.
//
//===----------------------------------------------------------------------===//

#include "dialects/tessel/TesselOps.h"
#include "tessel/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace mlir::tessel {
#define GEN_PASS_DEF_GATHERATUSEPASS
#include "tessel/Transforms/Passes.h.inc"

namespace {

struct GatherAtUsePass : impl::GatherAtUsePassBase<GatherAtUsePass> {
  using Base::Base;

  void runOnOperation() override {
    SmallVector<Operation *> gathers;
    getOperation().walk([&](Operation *op) {
      if (isa<AllGatherOp, LocalSliceOp>(op) &&
          op->getOperand(0).getDefiningOp<WeightOp>())
        gathers.push_back(op);
    });
    for (Operation *g : gathers) {
      // One gather per user op (an op reading it twice shares one).
      SmallVector<Operation *> users;
      for (Operation *user : g->getUsers())
        if (!llvm::is_contained(users, user))
          users.push_back(user);
      for (Operation *user : users) {
        OpBuilder b(user);
        Operation *copy = b.clone(*g);
        user->replaceUsesOfWith(g->getResult(0), copy->getResult(0));
      }
      g->erase();
    }
  }
};

} // namespace
} // namespace mlir::tessel
