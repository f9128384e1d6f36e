//===- BucketGradients.cpp - DDP's gradient buckets -----------------------===//
//
// Fuses the all_reduces that only feed the update (the dp gradients) into
// buckets, each one all_reduce marked `tessel.bucket`, issued as soon as its
// last gradient is computed and waited for at the first use of a gradient.
// See the pass description in Passes.td and docs/training.md.
//
//===----------------------------------------------------------------------===//

#include "GradientReductions.h"
#include "dialects/tessel/TesselOps.h"
#include "tessel/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"

namespace mlir::tessel {
#define GEN_PASS_DEF_BUCKETGRADIENTSPASS
#include "tessel/Transforms/Passes.h.inc"

namespace {

bool isUpdate(Operation *op) { return isa<AdamUpdateOp, SgdUpdateOp>(op); }

int64_t bytesOf(RankedTensorType t) {
  return t.getNumElements() *
         std::max<int64_t>(t.getElementTypeBitWidth() / 8, 1);
}

struct Bucket {
  SmallVector<AllReduceOp> members;
  int64_t bytes = 0;
  // The position of the earliest first use of a member's result.
  int64_t firstUse = INT64_MAX;
};

struct BucketGradientsPass
    : impl::BucketGradientsPassBase<BucketGradientsPass> {
  using Base::Base;

  void runOnOperation() override {
    if (bucketMb < 0) {
      getOperation().emitError() << "bucket-mb must be >= 0 (got " << bucketMb
                                 << ")";
      return signalPassFailure();
    }
    if (bucketMb == 0)
      return;
    const int64_t cap = static_cast<int64_t>(bucketMb * 1024 * 1024);
    int64_t next = 0;
    for (auto fn : getOperation().getOps<func::FuncOp>())
      if (!fn.isExternal() && fn.getBody().hasOneBlock())
        runOn(fn.getBody().front(), std::max<int64_t>(cap, 1), next);
  }

  /// Moves reshapes of `v` (and theirs) down to right before their first
  /// user: a gradient's all_reduce is often reshaped at once (a bias's
  /// [1, 1, C] sum to [C]), which is no use of the gradient yet.
  static void sinkReshapes(Value v) {
    for (Operation *user : llvm::make_early_inc_range(v.getUsers())) {
      auto reshape = dyn_cast<ReshapeOp>(user);
      if (!reshape)
        continue;
      sinkReshapes(reshape.getResult());
      Operation *first = nullptr;
      for (Operation *u : reshape->getUsers())
        if (!first || u->isBeforeInBlock(first))
          first = u;
      if (first && first->getBlock() == reshape->getBlock())
        reshape->moveBefore(first);
    }
  }

  /// Moves what only `ar`'s result feeds (the optimizer's update of its
  /// gradient, which -tessel-optimizer puts right after the gradient to
  /// free it early, and the update's assigns) to the end of the block:
  /// all-reduced with others in a bucket, the gradient is ready only after
  /// the bucket's wait. Nothing moves when the result reaches a collective
  /// or the function's results (it is no plain gradient then).
  /// After an update (ZeRO stage 1: of this rank's block), the all_gather
  /// of the updated parameter moves with it.
  static void sinkUpdates(AllReduceOp ar) {
    Block *block = ar->getBlock();
    SetVector<Operation *> users;
    SmallVector<std::pair<Operation *, bool>> work;
    for (Operation *user : ar->getUsers())
      work.push_back({user, false});
    while (!work.empty()) {
      auto [op, updated] = work.pop_back_val();
      if (op->getBlock() != block || isa<func::ReturnOp>(op) ||
          (isCollectiveOp(op) && !(updated && isa<AllGatherOp>(op))))
        return;
      if (!users.insert(op))
        continue;
      for (Operation *user : op->getUsers())
        work.push_back({user, updated || isUpdate(op)});
    }
    // ZeRO stage 1: the block of the parameter that the update reads (a
    // local_slice of the weight, which -tessel-gather-at-use put right
    // before the update) moves with it; left behind, every parameter's
    // block would be alive from the backward to the end of the step.
    for (Operation *op : SmallVector<Operation *>(users.begin(), users.end())) {
      if (!isUpdate(op))
        continue;
      for (Value v : op->getOperands()) {
        auto slice = v.getDefiningOp<LocalSliceOp>();
        if (slice && slice->getBlock() == block && slice->hasOneUse() &&
            slice.getInput().getDefiningOp<WeightOp>())
          users.insert(slice);
      }
    }
    SmallVector<Operation *> order(users.begin(), users.end());
    llvm::sort(order, [](Operation *a, Operation *b) {
      return a->isBeforeInBlock(b);
    });
    for (Operation *op : order)
      op->moveBefore(block->getTerminator());
  }

  void runOn(Block &block, int64_t cap, int64_t &next) {
    SmallVector<AllReduceOp> reduces(block.getOps<AllReduceOp>());
    for (AllReduceOp ar : reduces)
      if (!ar->hasAttr(TesselDialect::kBucketAttrName))
        sinkUpdates(ar);
    for (auto ar : block.getOps<AllReduceOp>())
      sinkReshapes(ar.getResult());
    DenseMap<Operation *, int64_t> pos;
    for (Operation &op : block)
      pos[&op] = static_cast<int64_t>(pos.size());

    auto firstUse = [&](Operation *op) {
      int64_t first = INT64_MAX;
      for (Operation *user : op->getUsers())
        first = std::min(first, pos.lookup(user));
      return first;
    };

    // Gradients grouped by what their all_reduce is (kind, group, dtype),
    // each group bucketed in program order.
    SmallVector<AllReduceOp> candidates = findGradientReductions(block);
    if (candidates.empty())
      return;
    // A gradient used before the backward's last all_reduce (an
    // intermediate all-reduced in the middle of its gradient's rule, as
    // the position embedding's) would make its bucket wait early: it is a
    // bucket of its own.
    const int64_t backwardEnd = pos.lookup(candidates.back());

    std::vector<Bucket> closed;
    llvm::MapVector<std::tuple<Attribute, Attribute, Attribute, Type>, Bucket>
        open;
    for (AllReduceOp ar : candidates) {
      Operation &op = *ar;
      auto type = cast<RankedTensorType>(ar.getType());
      if (firstUse(&op) <= backwardEnd) {
        Bucket alone;
        alone.members.push_back(ar);
        closed.push_back(std::move(alone));
        continue;
      }
      auto key = std::make_tuple(Attribute(ar.getKindAttr()),
                                 Attribute(ar.getMeshAttr()),
                                 Attribute(ar.getAxes()),
                                 type.getElementType());
      Bucket &b = open[key];
      // The bucket's all_reduce goes after this gradient: every gradient in
      // it must be first used after that.
      if (!b.members.empty() && pos.lookup(&op) >= b.firstUse) {
        closed.push_back(std::move(b));
        b = Bucket();
      }
      b.members.push_back(ar);
      b.bytes += bytesOf(type);
      b.firstUse = std::min(b.firstUse, firstUse(&op));
      if (b.bytes >= cap) {
        closed.push_back(std::move(b));
        b = Bucket();
      }
    }
    for (auto &entry : open)
      if (!entry.second.members.empty())
        closed.push_back(std::move(entry.second));
    // Bucket indices in the order the buckets are issued.
    llvm::sort(closed, [&](const Bucket &a, const Bucket &b) {
      return pos.lookup(a.members.back()) < pos.lookup(b.members.back());
    });
    for (Bucket &b : closed)
      fuse(b, next++);
  }

  void fuse(Bucket &bucket, int64_t index) {
    AllReduceOp last = bucket.members.back();
    MLIRContext *ctx = last.getContext();
    auto mark = [&](Operation *op) {
      op->setAttr(TesselDialect::kBucketAttrName,
                  IntegerAttr::get(IntegerType::get(ctx, 64), index));
    };
    if (bucket.members.size() == 1) {
      mark(last);
      return;
    }
    SmallVector<Location> locs;
    for (AllReduceOp ar : bucket.members)
      locs.push_back(ar.getLoc());
    Location loc = FusedLoc::get(ctx, locs);
    auto elem = cast<RankedTensorType>(last.getType()).getElementType();

    // Flatten and concatenate after the last gradient; one all_reduce.
    OpBuilder b(ctx);
    b.setInsertionPointAfter(last);
    SmallVector<Value> flat;
    int64_t total = 0;
    for (AllReduceOp ar : bucket.members) {
      auto t = cast<RankedTensorType>(ar.getType());
      flat.push_back(t.getRank() == 1
                         ? ar.getInput()
                         : Value(ReshapeOp::create(
                               b, ar.getLoc(),
                               RankedTensorType::get({t.getNumElements()}, elem),
                               ar.getInput())));
      total += t.getNumElements();
    }
    auto flatType = RankedTensorType::get({total}, elem);
    Value cat = ConcatOp::create(b, loc, flatType, flat, b.getI64IntegerAttr(0));
    auto fused = AllReduceOp::create(b, loc, flatType, last.getKindAttr(), cat,
                                     last.getMeshAttr(), last.getAxes());
    mark(fused);

    // Each gradient back out, right before its first use.
    int64_t offset = 0;
    for (AllReduceOp ar : bucket.members) {
      auto t = cast<RankedTensorType>(ar.getType());
      Operation *first = nullptr;
      for (Operation *user : ar->getUsers())
        if (!first || user->isBeforeInBlock(first))
          first = user;
      b.setInsertionPoint(first);
      int64_t n = t.getNumElements();
      Value piece = SliceOp::create(
          b, ar.getLoc(), RankedTensorType::get({n}, elem), fused.getResult(),
          b.getDenseI64ArrayAttr({offset}), b.getDenseI64ArrayAttr({offset + n}),
          b.getDenseI64ArrayAttr({1}));
      Value grad = t.getRank() == 1
                       ? piece
                       : Value(ReshapeOp::create(b, ar.getLoc(), t, piece));
      ar.getResult().replaceAllUsesWith(grad);
      offset += n;
    }
    for (AllReduceOp ar : bucket.members)
      ar.erase();
  }
};

} // namespace
} // namespace mlir::tessel
