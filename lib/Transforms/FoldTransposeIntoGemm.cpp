//===- FoldTransposeIntoGemm.cpp - x @ transpose(W) as a gemm with trans_b -===//
//
// A tied language-model head is the token embedding read transposed:
// PyTorch's exporters write `matmul(x, transpose(W))` with W [vocab, d], and
// without this fold every step copies the whole table transposed (GPT-2
// small: 154 MB, 43 ms of a 190 ms inference on one core) before the
// product. A matmul whose right operand is a 2-D transpose is a gemm that
// reads the operand as it is stored (trans_b), the left operand's leading
// dims merged into its rows: the same products, no copy. Likewise a gemm
// reading a 2-D transpose flips that operand's flag, and a transposed gemm
// (without c) is the gemm of its operands swapped: the tied head's backward
// (dx reads the table again, dW is computed [d, V] and transposed). Runs on
// the final program (after partitioning: the rules and the gradient see the
// exported ops); the transpose goes when nothing else reads it.
//
// Under --precision bf16 a cast sits between the two (the table is cast to
// bf16 after the exporter's transpose, the gradient widened before it): a
// transpose and a cast commute, so the cast moves to the far side of the
// transpose first, and the transpose then meets its GEMM.
//
//===----------------------------------------------------------------------===//

#include "FusePatterns.h"
#include "tessel/Transforms/Passes.h"

#include "mlir/IR/Builders.h"

namespace mlir::tessel {
#define GEN_PASS_DEF_FOLDTRANSPOSEINTOGEMMPASS
#include "tessel/Transforms/Passes.h.inc"

namespace {

/// A 2-D transpose's input, or null.
Value transposed(Value v) {
  auto t = v.getDefiningOp<TransposeOp>();
  return t && t.getPerm() == ArrayRef<int64_t>{1, 0} ? t.getInput() : Value();
}

/// matmul(x [.., M, K], transpose(w [N, K], [1, 0])) as
/// reshape(gemm(reshape(x -> [.. * M, K]), w, trans_b) -> [.., M, N]).
bool fold(MatmulOp mm) {
  Value stored = transposed(mm.getRhs());
  if (!stored)
    return false;
  auto x = cast<RankedTensorType>(mm.getLhs().getType());
  auto w = cast<RankedTensorType>(stored.getType());
  auto y = cast<RankedTensorType>(mm.getType());
  if (x.getRank() < 2 || !x.hasStaticShape() || !w.hasStaticShape() ||
      !y.hasStaticShape() || x.getElementType() != w.getElementType())
    return false;
  const int64_t k = x.getShape().back(), n = w.getDimSize(0);
  if (k < 1 || w.getDimSize(1) != k || y.getShape().back() != n)
    return false;
  const int64_t rows = x.getNumElements() / k;
  OpBuilder b(mm);
  Value a = mm.getLhs();
  if (x.getRank() != 2)
    a = ReshapeOp::create(b, mm.getLoc(),
                          RankedTensorType::get({rows, k}, x.getElementType()),
                          a);
  Value product = GemmOp::create(b, mm.getLoc(), a, stored, Value(),
                                 /*trans_a=*/false, /*trans_b=*/true,
                                 APFloat(1.0f), APFloat(1.0f));
  if (y.getRank() != 2)
    product = ReshapeOp::create(b, mm.getLoc(), y, product);
  mm.getResult().replaceAllUsesWith(product);
  mm->erase();
  return true;
}

/// gemm(transpose(a), b) as gemm(a, b) with trans_a flipped (and so for b):
/// the backward of a tied head reads the transposed table again.
bool foldOperands(GemmOp g) {
  Value a = transposed(g.getA()), b = transposed(g.getB());
  if (!a && !b)
    return false;
  OpBuilder builder(g);
  auto folded = GemmOp::create(
      builder, g.getLoc(), a ? a : g.getA(), b ? b : g.getB(), g.getC(),
      a ? !g.getTransA() : g.getTransA(), b ? !g.getTransB() : g.getTransB(),
      g.getAlpha(), g.getBeta());
  folded->setAttrs(g->getDiscardableAttrDictionary());
  g.getResult().replaceAllUsesWith(folded.getResult());
  g->erase();
  return true;
}

/// transpose(gemm(a, b)) as gemm(b, a) with both flags flipped: (op(a)
/// op(b))^T = op(b)^T op(a)^T (a tied head's weight gradient, computed
/// [d, V] and transposed to the table's [V, d]). Only without `c`, whose
/// transpose it would need, and when the transpose reads the gemm alone.
bool foldResult(TransposeOp t) {
  auto g = t.getInput().getDefiningOp<GemmOp>();
  if (!g || t.getPerm() != ArrayRef<int64_t>{1, 0} || g.getC() ||
      !g->hasOneUse())
    return false;
  OpBuilder builder(t);
  auto swapped = GemmOp::create(builder, g.getLoc(), g.getB(), g.getA(),
                                Value(), !g.getTransB(), !g.getTransA(),
                                g.getAlpha(), g.getBeta());
  swapped->setAttrs(g->getDiscardableAttrDictionary());
  t.getResult().replaceAllUsesWith(swapped.getResult());
  t->erase();
  g->erase();
  return true;
}

bool isGemm(Operation *op) { return isa<MatmulOp, GemmOp>(op); }

/// cast(transpose(x)) that a GEMM reads as transpose(cast(x)), when the
/// transpose has no other reader (the table cast, then read transposed).
bool castFirst(CastOp c) {
  auto t = c.getInput().getDefiningOp<TransposeOp>();
  if (!t || !transposed(t.getResult()) || !t->hasOneUse() ||
      llvm::none_of(c->getUsers(), isGemm))
    return false;
  OpBuilder b(c);
  auto in = cast<RankedTensorType>(t.getInput().getType());
  auto widened = CastOp::create(
      b, c.getLoc(),
      in.clone(cast<RankedTensorType>(c.getType()).getElementType()),
      t.getInput());
  Value moved = TransposeOp::create(b, t.getLoc(), widened, t.getPerm());
  c.getResult().replaceAllUsesWith(moved);
  c->erase();
  t->erase();
  return true;
}

/// transpose(cast(gemm)) as cast(transpose(gemm)), when the cast has no
/// other reader (the gradient of the table widened, then transposed).
bool transposeFirst(TransposeOp t) {
  auto c = t.getInput().getDefiningOp<CastOp>();
  if (!c || !transposed(t.getResult()) || !c->hasOneUse() ||
      !c.getInput().getDefiningOp<GemmOp>())
    return false;
  OpBuilder b(t);
  Value moved = TransposeOp::create(b, t.getLoc(), c.getInput(), t.getPerm());
  auto narrowed = CastOp::create(b, c.getLoc(), t.getType(), moved);
  t.getResult().replaceAllUsesWith(narrowed.getResult());
  t->erase();
  c->erase();
  return true;
}

struct FoldTransposeIntoGemmPass
    : impl::FoldTransposeIntoGemmPassBase<FoldTransposeIntoGemmPass> {
  void runOnOperation() final {
    // Each walk collects before anything is erased.
    SmallVector<CastOp> casts;
    getOperation()->walk([&](CastOp c) { casts.push_back(c); });
    for (CastOp c : casts)
      castFirst(c);
    SmallVector<TransposeOp> overCasts;
    getOperation()->walk([&](TransposeOp t) { overCasts.push_back(t); });
    for (TransposeOp t : overCasts)
      transposeFirst(t);
    SmallVector<MatmulOp> matmuls;
    SmallVector<TransposeOp> transposes;
    getOperation()->walk([&](Operation *op) {
      if (auto mm = dyn_cast<MatmulOp>(op))
        matmuls.push_back(mm);
      else if (auto t = dyn_cast<TransposeOp>(op))
        transposes.push_back(t);
    });
    bool changed = false;
    for (MatmulOp mm : matmuls)
      changed |= fold(mm);
    for (TransposeOp t : transposes)
      changed |= foldResult(t);
    SmallVector<GemmOp> gemms;
    getOperation()->walk([&](GemmOp g) { gemms.push_back(g); });
    for (GemmOp g : gemms)
      changed |= foldOperands(g);
    if (changed)
      eraseDeadOps<TransposeOp>(getOperation());
  }
};

} // namespace
} // namespace mlir::tessel
