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
// With prefetch=K, the parameter gathers become asynchronous and move ahead:
// the one for the i-th use is issued right before the (i-K)-th use (the
// first K before the first use), so the next K gathers run on the runtime's
// communication thread while a use computes; each is waited for right
// before its own use, and its copy still dies there.
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
    if (prefetch < 0) {
      getOperation().emitError()
          << "prefetch must be >= 0 (got " << static_cast<int64_t>(prefetch)
          << ")";
      return signalPassFailure();
    }
    if (prefetch > 0)
      for (auto fn : getOperation().getOps<func::FuncOp>())
        if (!fn.isExternal() && fn.getBody().hasOneBlock())
          issueAhead(fn.getBody().front());
  }

  /// Moves each parameter gather of `block` `prefetch` uses ahead and marks
  /// it asynchronous. Gathers keep their order (every rank issues them in
  /// program order on one thread).
  void issueAhead(Block &block) {
    SmallVector<std::pair<AllGatherOp, Operation *>> uses;
    for (auto g : block.getOps<AllGatherOp>()) {
      if (!g.getInput().getDefiningOp<WeightOp>() || !g->hasOneUse())
        continue;
      Operation *user = *g->getUsers().begin();
      // A shard_constraint is an alias, no instruction: the runtime could
      // not wait before what reads through it.
      if (user->getBlock() != &block || isa<ShardConstraintOp>(user))
        continue;
      uses.push_back({g, user});
    }
    // The ops' positions, numbered once: Operation::isBeforeInBlock would
    // renumber the block after every move (quadratic in a 7 B model's
    // thousands of gathers). Users never move, a gather moves once, and an
    // op moved right before `at` takes the position just below at's, which
    // orders it correctly against every user (all even).
    DenseMap<Operation *, int64_t> position;
    int64_t next = 0;
    for (Operation &op : block)
      position[&op] = 2 * next++;
    auto moveBefore = [&](Operation *op, Operation *at) {
      op->moveBefore(at);
      position[op] = position[at] - 1;
    };
    const size_t k = static_cast<size_t>(prefetch);
    for (size_t i = 0; i < uses.size(); ++i) {
      auto [g, user] = uses[i];
      Operation *at = uses[i < k ? 0 : i - k].second;
      if (position[at] < position[g]) {
        // The weight (no operands: it names a state) moves along when
        // defined after that point.
        Operation *weight = g.getInput().getDefiningOp();
        if (position[at] < position[weight])
          moveBefore(weight, at);
        moveBefore(g, at);
      }
      g->setAttr(TesselDialect::kAsyncAttrName, UnitAttr::get(&getContext()));
    }
  }
};

} // namespace
} // namespace mlir::tessel
