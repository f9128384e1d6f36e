//===- FuseAttention.cpp - exported attention -> tessel.attention ---------===//
//
// PyTorch's exporters write scaled dot-product attention as
//   s = q @ kt               (q and kt already scaled by sqrt(scale), or)
//   s = s * c | s / c        (a constant scale after the product)
//   s = s + mask             (causal or padding, additive, broadcast)
//   s = where(keep, s, fill) (or where(hide, fill, s): a bool mask, as
//                             transformers' eager GPT-2 writes it; becomes
//                             the additive mask where(keep, 0, -inf). A
//                             fill <= -1e30 is -inf beside any kept score,
//                             and a row it hides entirely gets the fill 1/T,
//                             as the where made it; a larger finite one,
//                             such as the -1e4 of GPT-2 before
//                             transformers 4.26, is the op's masked_score)
//   s = where(keep, s, fill) + mask  (a finite fill; transformers 4.26 to
//                             4.4x's GPT-2, GPT-Neo and GPT-J given an
//                             attention_mask: the op's keep, mask and
//                             masked_score)
//   p = softmax(s, -1)
//   p = where(isnan(p), fill, p)   (the default exporter's guard; isnan as
//                                   p != p)
//   p = where(max(mask, -1) == -inf, 0, p)   (the guard tessel's import of
//                                   ONNX's Attention writes: a row with no
//                                   key to attend is 0)
//   o = p @ v
// with every intermediate read only by the next. This replaces the chain by
// one tessel.attention, whose kernels never hold the [S, T] scores, whose
// rule keeps heads split over tp, and whose gradient recomputes the scores
// (docs/fusion.md).
//
//===----------------------------------------------------------------------===//

#include "FusePatterns.h"
#include "tessel/Transforms/Passes.h"

#include "mlir/IR/Builders.h"

#include <cmath>

namespace mlir::tessel {
#define GEN_PASS_DEF_FUSEATTENTIONPASS
#include "tessel/Transforms/Passes.h.inc"

namespace {

RankedTensorType typeOf(Value v) { return cast<RankedTensorType>(v.getType()); }

/// Whether `mask` broadcasts to `scores` without enlarging it (and holds
/// its element type, unless `anyType`).
bool broadcastsTo(RankedTensorType mask, RankedTensorType scores,
                  bool anyType = false) {
  if ((!anyType && mask.getElementType() != scores.getElementType()) ||
      mask.getRank() > scores.getRank())
    return false;
  const int64_t off = scores.getRank() - mask.getRank();
  for (int64_t d = 0; d < mask.getRank(); ++d)
    if (mask.getDimSize(d) != 1 &&
        mask.getDimSize(d) != scores.getDimSize(off + d))
      return false;
  return true;
}

/// q @ kt with q [..., S, D], kt [..., D, T] of one rank and equal leading
/// dims (the exporters repeat GQA's keys before the product).
MatmulOp matchScores(Value s) {
  auto mm = s.getDefiningOp<MatmulOp>();
  if (!mm || !mm.getResult().hasOneUse())
    return nullptr;
  auto q = typeOf(mm.getLhs()), kt = typeOf(mm.getRhs());
  if (q.getRank() < 2 || q.getRank() != kt.getRank() ||
      q.getShape().drop_back(2) != kt.getShape().drop_back(2) ||
      q.getElementType() != kt.getElementType())
    return nullptr;
  return mm;
}

/// The product, its scale (a splat constant after it) and the mask:
/// additive, or a bool one the scores are kept where it is `keepIf` and
/// `hidden` (rank 0) elsewhere, or both: where(keep, s, hidden) + mask.
struct Scores {
  MatmulOp product;
  double scale = 1.0;
  Value mask;
  Value keep;
  bool keepIf = true;
  double hidden = 0;
};

/// s or s * c or s / c, c a splat constant of rank 0.
bool matchScaled(Value v, Scores &out) {
  if ((out.product = matchScores(v)))
    return true;
  auto scaled = [&](Operation *op, bool divide) {
    if (!op || !op->getResult(0).hasOneUse())
      return false;
    for (int k = 0; k < (divide ? 1 : 2); ++k) {
      Value s = op->getOperand(k), c = op->getOperand(1 - k);
      std::optional<double> value = splatFloatValue(c);
      if (!value || typeOf(c).getRank() != 0 || *value == 0.0)
        continue;
      if ((out.product = matchScores(s))) {
        out.scale = divide ? 1.0 / *value : *value;
        return true;
      }
    }
    return false;
  };
  return scaled(v.getDefiningOp<MulOp>(), false) ||
         scaled(v.getDefiningOp<DivOp>(), true);
}

/// where(keep, s, fill) or where(hide, fill, s): a bool mask and a finite
/// or -inf rank-0 fill.
bool matchWhere(Value x, Scores &out) {
  auto w = x.getDefiningOp<WhereOp>();
  if (!w || !w.getResult().hasOneUse() ||
      !typeOf(w.getCondition()).getElementType().isInteger(1) ||
      !broadcastsTo(typeOf(w.getCondition()), typeOf(w.getResult()),
                    /*anyType=*/true))
    return false;
  for (bool keepIf : {true, false}) {
    Value s = keepIf ? w.getOnTrue() : w.getOnFalse();
    Value c = keepIf ? w.getOnFalse() : w.getOnTrue();
    std::optional<double> fill = splatFloatValue(c);
    Scores found;
    if (!fill || !(std::isfinite(*fill) || *fill < 0) ||
        typeOf(c).getRank() != 0 || s.getType() != w.getType() ||
        !matchScaled(s, found))
      continue;
    out = found;
    out.keep = w.getCondition();
    out.keepIf = keepIf;
    out.hidden = *fill;
    return true;
  }
  return false;
}

/// The softmax's input: scores, optionally plus a mask.
bool matchLogits(Value x, Scores &out) {
  if (matchScaled(x, out) || matchWhere(x, out))
    return true;
  auto add = x.getDefiningOp<AddOp>();
  if (!add || !add.getResult().hasOneUse())
    return false;
  for (int k = 0; k < 2; ++k) {
    Value s = add->getOperand(k), mask = add->getOperand(1 - k);
    if (s.getType() != add.getType() ||
        !broadcastsTo(typeOf(mask), typeOf(add.getResult())))
      continue;
    Scores found;
    // where(keep, s, c) + mask with a finite c: the op's keep.
    if (matchScaled(s, found) ||
        (matchWhere(s, found) && std::isfinite(found.hidden))) {
      out = found;
      out.mask = mask;
      return true;
    }
  }
  return false;
}

/// where(max(mask, last dim) == -inf, 0, p): the rows whose every key the
/// mask hides are 0. Those are the rows whose scores are all -inf, which
/// the fused kernels give the fill (they also give it to a row holding a
/// NaN score, where this guard keeps the NaN: the one difference, on
/// inputs that are NaN already). The fill: the guard's 0, or null.
Value matchMaskGuard(WhereOp guard, Value p, Value mask) {
  auto none = guard.getCondition().getDefiningOp<CompareOp>();
  auto zero = splatFloatValue(guard.getOnTrue());
  if (!mask || guard.getOnFalse() != p || guard.getType() != p.getType() ||
      typeOf(guard.getOnTrue()).getRank() != 0 || !zero || *zero != 0.0 ||
      !none || none.getPredicate() != ComparePredicate::EQ)
    return nullptr;
  auto max = none.getLhs().getDefiningOp<ReduceMaxOp>();
  auto negInf = splatFloatValue(none.getRhs());
  const int64_t rank = typeOf(mask).getRank();
  if (!max || max.getInput() != mask || !max.getKeepDims() ||
      max.getDims() != ArrayRef<int64_t>{rank - 1} || !negInf ||
      !std::isinf(*negInf) || *negInf > 0)
    return nullptr;
  return guard.getOnTrue();
}

/// The product p @ v reading the softmax `p` (through the NaN guard or the
/// mask's guard, whose fill it sets).
MatmulOp matchOutput(SoftmaxOp sm, Value mask, Value &fill) {
  Value p = sm.getResult();
  if (p.hasOneUse()) {
    Operation *user = *p.getUsers().begin();
    if (auto guard = dyn_cast<WhereOp>(user)) {
      Value zero = matchMaskGuard(guard, p, mask);
      if (!zero || !guard.getResult().hasOneUse())
        return nullptr;
      auto pv = dyn_cast<MatmulOp>(*guard.getResult().getUsers().begin());
      if (!pv || pv.getLhs() != guard.getResult())
        return nullptr;
      fill = zero;
      return pv;
    }
    auto pv = dyn_cast<MatmulOp>(user);
    return pv && pv.getLhs() == p ? pv : nullptr;
  }
  // where(p != p, fill, p): the compare reads p twice, the where once.
  WhereOp guard;
  CompareOp isNan;
  for (OpOperand &use : p.getUses()) {
    Operation *user = use.getOwner();
    if (auto w = dyn_cast<WhereOp>(user); w && !guard)
      guard = w;
    else if (auto c = dyn_cast<CompareOp>(user); c && (!isNan || isNan == c))
      isNan = c;
    else
      return nullptr;
  }
  if (!guard || !isNan || isNan.getPredicate() != ComparePredicate::NE ||
      isNan.getLhs() != p || isNan.getRhs() != p ||
      !isNan.getResult().hasOneUse() || guard.getCondition() != isNan ||
      guard.getOnFalse() != p || guard.getType() != p.getType() ||
      typeOf(guard.getOnTrue()) !=
          RankedTensorType::get({}, typeOf(p).getElementType()) ||
      !guard.getResult().hasOneUse())
    return nullptr;
  auto pv = dyn_cast<MatmulOp>(*guard.getResult().getUsers().begin());
  if (!pv || pv.getLhs() != guard.getResult())
    return nullptr;
  fill = guard.getOnTrue();
  return pv;
}

/// Replaces the attention ending at `sm`; false when it is not one.
bool fuse(SoftmaxOp sm) {
  auto type = typeOf(sm.getResult());
  const int64_t r = type.getRank();
  // The attention kernels compute f32 and the halves; an f64 attention
  // stays its ops, which take f64 (docs/precision.md).
  if (r < 2 || sm.getAxis() != static_cast<uint64_t>(r - 1) ||
      type.getElementType().isF64())
    return false;
  Scores scores;
  if (!matchLogits(sm.getInput(), scores) ||
      scores.product.getType() != type)
    return false;
  Value fill;
  MatmulOp pv = matchOutput(sm, scores.mask, fill);
  if (!pv)
    return false;
  Value q = scores.product.getLhs(), kt = scores.product.getRhs(),
        v = pv.getRhs();
  auto vt = typeOf(v);
  if (vt.getRank() != r || vt.getShape().drop_back(2) != type.getShape().drop_back(2) ||
      vt.getDimSize(r - 2) != type.getDimSize(r - 1) ||
      vt.getElementType() != type.getElementType())
    return false;
  OpBuilder b(pv);
  FloatAttr maskedScore;
  Value keep;
  if (scores.keep && scores.mask) {
    // where(keep, s, c) + mask: the op's keep, c its masked_score.
    keep = scores.keepIf
               ? scores.keep
               : NotOp::create(b, sm.getLoc(), scores.keep).getResult();
    maskedScore = b.getF32FloatAttr(static_cast<float>(scores.hidden));
  } else if (scores.keep) {
    // The bool mask as an additive one: 0 where kept, -inf elsewhere. With
    // a fill at most -1e30, a hidden score's probability is 0 beside any
    // kept one, as with -inf; a row it hides entirely was softmax of equal
    // fills, 1/T each: the kernels' fill for a row with no finite score.
    // Where the fill is -inf already, such a row was NaN, as the kernels
    // leave it (or the guard's fill). A larger fill is the op's
    // masked_score: the kernels replace the hidden scores by it.
    auto et = type.getElementType();
    auto scalar = [&](double value) {
      auto t = RankedTensorType::get({}, et);
      return ConstantOp::create(
                 b, sm.getLoc(), t,
                 DenseElementsAttr::get(t, b.getFloatAttr(et, value)))
          .getResult();
    };
    auto maskType = RankedTensorType::get(typeOf(scores.keep).getShape(), et);
    Value kept = scalar(0.0), hidden = scalar(-INFINITY);
    scores.mask = WhereOp::create(b, sm.getLoc(), maskType, scores.keep,
                                  scores.keepIf ? kept : hidden,
                                  scores.keepIf ? hidden : kept)
                      .getResult();
    if (scores.hidden > -1e30)
      maskedScore = b.getF32FloatAttr(static_cast<float>(scores.hidden));
    else if (!std::isinf(scores.hidden))
      fill = scalar(1.0 / static_cast<double>(type.getDimSize(r - 1)));
  }
  auto lse = RankedTensorType::get(type.getShape().drop_back(),
                                   b.getF32Type());
  Location loc = b.getFusedLoc({scores.product.getLoc(), sm.getLoc(), pv.getLoc()});
  auto attn = AttentionOp::create(
      b, loc, TypeRange{pv.getType(), lse}, q, kt, v, scores.mask, fill, keep,
      b.getF32FloatAttr(static_cast<float>(scores.scale)), maskedScore);
  pv.getResult().replaceAllUsesWith(attn.getResult());
  pv->erase();
  return true;
}

struct FuseAttentionPass
    : public impl::FuseAttentionPassBase<FuseAttentionPass> {
  using Base::Base;
  void runOnOperation() final {
    SmallVector<SoftmaxOp> softmaxes;
    getOperation()->walk([&](SoftmaxOp sm) { softmaxes.push_back(sm); });
    bool changed = false;
    for (SoftmaxOp sm : softmaxes)
      changed |= fuse(sm);
    if (changed)
      eraseDeadOps<WhereOp, CompareOp, NotOp, ReduceMaxOp, SoftmaxOp, AddOp,
                   MulOp, DivOp, MatmulOp, ConstantOp>(getOperation());
  }
};

} // namespace
} // namespace mlir::tessel
