//===- GradientReductions.cpp - the data-parallel gradient all_reduces ----===//

#include "GradientReductions.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseSet.h"

namespace mlir::tessel {

bool isCollectiveOp(Operation *op) {
  return isa<AllReduceOp, AllGatherOp, ReduceScatterOp, AllToAllOp,
             CollectivePermuteOp, BroadcastOp, SendOp, RecvOp>(op);
}

SmallVector<AllReduceOp> findGradientReductions(Block &block) {
  // Ops whose results reach a collective or the function's results (an
  // optimizer update's all_gather, ZeRO stage 1's, aside: a gradient that
  // feeds an update is still a gradient).
  DenseSet<Operation *> feeds;
  for (Operation &op : llvm::reverse(block))
    for (Operation *user : op.getUsers())
      if (isCollectiveOp(user) || isa<func::ReturnOp>(user) ||
          (feeds.contains(user) && !isa<AdamUpdateOp, SgdUpdateOp>(user))) {
        feeds.insert(&op);
        break;
      }
  SmallVector<AllReduceOp> found;
  for (auto ar : block.getOps<AllReduceOp>())
    if (!feeds.contains(ar) && !ar->use_empty() &&
        !ar->hasAttr(TesselDialect::kBucketAttrName))
      found.push_back(ar);
  return found;
}

} // namespace mlir::tessel
