//===- SimplifyCollectives.cpp - fold and fuse collectives ----------------===//
//
// Peephole rewrites over a partitioned program; each moves fewer bytes than
// what it replaces. See the pass description in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "dialects/tessel/TesselOps.h"
#include "tessel/Transforms/Passes.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::tessel {
#define GEN_PASS_DEF_SIMPLIFYCOLLECTIVESPASS
#include "tessel/Transforms/Passes.h.inc"

namespace {

bool sameGroup(FlatSymbolRefAttr meshA, ArrayAttr axesA, FlatSymbolRefAttr meshB,
               ArrayAttr axesB) {
  return meshA == meshB && axesA == axesB;
}

/// all_reduce + local_slice of a dim over the same axes -> reduce_scatter.
struct AllReduceThenSlice : OpRewritePattern<LocalSliceOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(LocalSliceOp slice,
                                PatternRewriter &rewriter) const override {
    auto ar = slice.getInput().getDefiningOp<AllReduceOp>();
    if (!ar || !ar->hasOneUse() ||
        !sameGroup(ar.getMeshAttr(), ar.getAxes(), slice.getMeshAttr(),
                   slice.getAxes()))
      return failure();
    rewriter.replaceOpWithNewOp<ReduceScatterOp>(
        slice, slice.getType(), ar.getKindAttr(), ar.getInput(),
        ar.getMeshAttr(), ar.getAxes(), slice.getDimAttr());
    rewriter.eraseOp(ar);
    return success();
  }
};

/// local_slice(all_gather(x)) and all_gather(local_slice(x)) over the same
/// dim and axes -> x: each op undoes the other.
template <typename OuterOp, typename InnerOp>
struct CancelInverses : OpRewritePattern<OuterOp> {
  using OpRewritePattern<OuterOp>::OpRewritePattern;
  LogicalResult matchAndRewrite(OuterOp outer,
                                PatternRewriter &rewriter) const override {
    auto inner = outer.getInput().template getDefiningOp<InnerOp>();
    if (!inner || inner.getDim() != outer.getDim() ||
        !sameGroup(inner.getMeshAttr(), inner.getAxes(), outer.getMeshAttr(),
                   outer.getAxes()) ||
        inner.getInput().getType() != outer.getType())
      return failure();
    rewriter.replaceOp(outer, inner.getInput());
    if (inner->use_empty())
      rewriter.eraseOp(inner);
    return success();
  }
};
using SliceOfGather = CancelInverses<LocalSliceOp, AllGatherOp>;
using GatherOfSlice = CancelInverses<AllGatherOp, LocalSliceOp>;

/// all_reduce(all_reduce(x, A), B) of one kind -> all_reduce(x, A + B).
struct NestedAllReduce : OpRewritePattern<AllReduceOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(AllReduceOp outer,
                                PatternRewriter &rewriter) const override {
    auto inner = outer.getInput().getDefiningOp<AllReduceOp>();
    // A trivial inner reduction is dropped by TrivialGroup instead.
    if (!inner || !inner->hasOneUse() || inner.getKind() != outer.getKind() ||
        inner.getMeshAttr() != outer.getMeshAttr() || inner.getGroupSize() == 1)
      return failure();
    SmallVector<Attribute> axes(inner.getAxes().begin(), inner.getAxes().end());
    for (Attribute a : outer.getAxes()) {
      if (llvm::is_contained(axes, a))
        return failure(); // reducing twice over an axis is not a no-op
      axes.push_back(a);
    }
    rewriter.replaceOpWithNewOp<AllReduceOp>(
        outer, outer.getType(), outer.getKindAttr(), inner.getInput(),
        outer.getMeshAttr(), rewriter.getArrayAttr(axes));
    rewriter.eraseOp(inner);
    return success();
  }
};

/// A collective over axes whose sizes multiply to 1 moves nothing.
template <typename OpT>
struct TrivialGroup : OpRewritePattern<OpT> {
  using OpRewritePattern<OpT>::OpRewritePattern;
  LogicalResult matchAndRewrite(OpT op,
                                PatternRewriter &rewriter) const override {
    if (op.getGroupSize() != 1 ||
        op.getInput().getType() != op.getResult().getType())
      return failure();
    rewriter.replaceOp(op, op.getInput());
    return success();
  }
};

struct SimplifyCollectivesPass
    : public impl::SimplifyCollectivesPassBase<SimplifyCollectivesPass> {
  using Base::Base;

  void runOnOperation() final {
    RewritePatternSet patterns(&getContext());
    // Dropping a trivial collective comes before fusing it with another.
    patterns.add<TrivialGroup<AllReduceOp>, TrivialGroup<AllGatherOp>,
                 TrivialGroup<ReduceScatterOp>, TrivialGroup<AllToAllOp>,
                 TrivialGroup<LocalSliceOp>>(&getContext(), /*benefit=*/2);
    patterns.add<SliceOfGather, GatherOfSlice, NestedAllReduce>(
        &getContext());
    if (reduceScatter)
      patterns.add<AllReduceThenSlice>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
} // namespace mlir::tessel
