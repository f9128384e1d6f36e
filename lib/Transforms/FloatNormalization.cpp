//===- FloatNormalization.cpp - Halves computed in f32 around each op -----===//
//
// The runtime stores bf16 and f16 tensors but computes every arithmetic op
// in f32 (docs/precision.md): its kernels exist for f32, i64, i32 and bool,
// and the halves reach only the ops that move data (reshape, transpose,
// slice, concat, gather, where, the collectives that do not add) and cast.
// This pass makes the program say so, as XLA's float normalization does for
// a backend without bf16 arithmetic: each other op that reads or writes a
// half reads its half operands through a `cast` to f32 and writes an f32
// result that a `cast` rounds back to the half, once, to nearest even.
//
// That is PyTorch's CPU semantics for half tensors (each op computes in f32
// and rounds its result), so a bf16 model gives PyTorch's bf16 numbers up
// to the order of f32 sums. A sum over ranks (all_reduce, reduce_scatter)
// is an op like the others: the ranks add in f32 and round once.
//
// GEMMs are the exception: a matmul or gemm whose operands and result are
// all the same half stays so, since both backends run it natively (oneDNN's
// bf16 matmul, cuBLAS; each accumulates in f32 and rounds its result once,
// as PyTorch's half GEMMs do), reading and writing the halves.
//
// Attention is the other: an attention (or attention_grad) whose q, kt, v
// and results (and result and grad) are one half stays so, as PyTorch's
// half SDPA does, reading its mask and nan_fill in f32 (a half one is
// widened) and writing lse in f32. The kernels accumulate in f32 and round
// each result once (docs/precision.md).
//
// It runs last, on the per-rank program, before the artifact is written.
//
//===----------------------------------------------------------------------===//

#include "tessel/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/DenseMap.h"

namespace mlir::tessel {
#define GEN_PASS_DEF_FLOATNORMALIZATIONPASS
#include "tessel/Transforms/Passes.h.inc"

namespace {

bool isHalf(Type t) {
  auto r = dyn_cast<RankedTensorType>(t);
  return r && (r.getElementType().isBF16() || r.getElementType().isF16());
}

/// The ops the runtime runs on halves as they are: they move elements
/// without computing with them (or convert them).
bool holdsHalves(Operation *op) {
  return isa<CastOp, ReshapeOp, TransposeOp, SliceOp, SplitOp, ConcatOp,
             ExpandOp, GatherOp, GatherElementsOp, WhereOp, WeightOp,
             ConstantOp, AssignOp, ShardConstraintOp, LocalSliceOp,
             AllGatherOp, AllToAllOp, BroadcastOp, CollectivePermuteOp,
             SendOp, RecvOp, ChunkFetchOp>(op);
}

/// A matmul or gemm of one half type throughout: the runtime's half GEMMs.
bool isHalfGemm(Operation *op) {
  if (!isa<MatmulOp, GemmOp>(op) || op->getNumResults() != 1 ||
      !isHalf(op->getResult(0).getType()))
    return false;
  Type half = getElementTypeOrSelf(op->getResult(0).getType());
  return llvm::all_of(op->getOperandTypes(), [&](Type t) {
    return getElementTypeOrSelf(t) == half;
  });
}

/// An attention or attention_grad of one half type in q, kt, v and the
/// half-typed results and operands (its mask, nan_fill and lse aside).
bool isHalfAttention(Operation *op) {
  Value q;
  if (auto a = dyn_cast<AttentionOp>(op))
    q = a.getQ();
  else if (auto g = dyn_cast<AttentionGradOp>(op))
    q = g.getQ();
  else
    return false;
  if (!isHalf(q.getType()))
    return false;
  Type half = getElementTypeOrSelf(q.getType());
  auto same = [&](Value v) {
    return getElementTypeOrSelf(v.getType()) == half;
  };
  if (auto a = dyn_cast<AttentionOp>(op))
    return same(a.getKt()) && same(a.getV()) && same(a.getResult());
  auto g = cast<AttentionGradOp>(op);
  return same(g.getKt()) && same(g.getV()) && same(g.getResult()) &&
         same(g.getGrad()) && llvm::all_of(g->getResults(), same);
}

/// A half attention's operands that are read in f32: its mask and nan_fill.
SmallVector<Value> attentionF32Operands(Operation *op) {
  if (auto a = dyn_cast<AttentionOp>(op))
    return {a.getMask(), a.getNanFill()};
  auto g = cast<AttentionGradOp>(op);
  return {g.getMask(), g.getNanFill()};
}

struct FloatNormalizationPass
    : impl::FloatNormalizationPassBase<FloatNormalizationPass> {
  using Base::Base;

  void runOnOperation() final {
    SmallVector<Operation *> ops;
    getOperation()->walk([&](Operation *op) {
      if (isHalfAttention(op) ||
          (isa<TesselDialect>(op->getDialect()) && !holdsHalves(op) &&
           !isHalfGemm(op) &&
           (llvm::any_of(op->getOperandTypes(), isHalf) ||
            llvm::any_of(op->getResultTypes(), isHalf))))
        ops.push_back(op);
    });
    // One f32 copy of each half value, shared by every op that reads it,
    // made just before its first reader (in the reader's block, which then
    // precedes the others: the ops are visited in order), so that an async
    // collective's result is not waited for earlier than it was.
    llvm::DenseMap<Value, Value> widened;
    OpBuilder b(&getContext());
    auto widen = [&](Value v, Operation *reader) {
      auto [it, inserted] = widened.try_emplace(v);
      if (!inserted)
        return it->second;
      if (v.getParentBlock() == reader->getBlock())
        b.setInsertionPoint(reader);
      else if (Operation *def = v.getDefiningOp())
        b.setInsertionPointAfter(def);
      else
        b.setInsertionPointToStart(cast<BlockArgument>(v).getOwner());
      auto t = cast<RankedTensorType>(v.getType());
      it->second = CastOp::create(
          b, v.getLoc(), t.clone(Float32Type::get(&getContext())), v);
      return it->second;
    };
    for (Operation *op : ops) {
      if (isHalfAttention(op)) {
        SmallVector<Value> f32 = attentionF32Operands(op);
        for (OpOperand &use : op->getOpOperands())
          if (llvm::is_contained(f32, use.get()) && isHalf(use.get().getType()))
            use.set(widen(use.get(), op));
        continue;
      }
      for (OpOperand &use : op->getOpOperands())
        if (isHalf(use.get().getType()))
          use.set(widen(use.get(), op));
      b.setInsertionPointAfter(op);
      for (OpResult r : op->getResults()) {
        if (!isHalf(r.getType()))
          continue;
        auto half = cast<RankedTensorType>(r.getType());
        r.setType(half.clone(Float32Type::get(&getContext())));
        auto rounded = CastOp::create(b, op->getLoc(), half, r);
        r.replaceAllUsesExcept(rounded, rounded);
      }
    }
  }
};

} // namespace
} // namespace mlir::tessel
