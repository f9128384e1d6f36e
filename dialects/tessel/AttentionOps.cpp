//===- AttentionOps.cpp - tessel.attention and tessel.attention_grad ------===//
//
// The verifiers and sharding rules of fused attention (TesselOps.td,
// TrainingOps.td); -tessel-fuse-attention (lib/Transforms/FuseAttention.cpp)
// creates the forward, its gradient rule (Gradients.cpp) the backward. Each
// check carries the constraint label of its ODS description.
//
// The rule: the leading (batch, heads) dims pass through every operand and
// result; the query rows S pass in the forward (each row's softmax is its
// own) and stay whole in the backward (dkt and dv sum over them); the head
// dim D and the keys T stay whole (the scores contract D, the softmax
// normalises over T); the value dim Dv passes in the forward.
//
//===----------------------------------------------------------------------===//

#include "dialects/tessel/ShardingRuleBuilder.h"
#include "dialects/tessel/TesselOps.h"
#include "dialects/tessel/Verifiers.h"

using namespace mlir;
using namespace mlir::tessel;

namespace {

RankedTensorType typeOf(Value v) { return cast<RankedTensorType>(v.getType()); }
ArrayRef<int64_t> shapeOf(Value v) { return typeOf(v).getShape(); }

/// The shape `lead ++ tail`.
SmallVector<int64_t> withTail(ArrayRef<int64_t> lead, ArrayRef<int64_t> tail) {
  SmallVector<int64_t> s(lead);
  s.append(tail.begin(), tail.end());
  return s;
}

/// Whether `operand` (named `name`) broadcasts (numpy) to `scores`.
LogicalResult verifyBroadcastsToScores(Operation *op, StringRef name,
                                       Value operand,
                                       ArrayRef<int64_t> scores) {
  ArrayRef<int64_t> ms = shapeOf(operand);
  if (ms.size() > scores.size())
    return op->emitOpError()
           << name << " " << formatShape(ms)
           << " has a higher rank than the scores " << formatShape(scores);
  for (size_t i = 0; i < ms.size(); ++i) {
    int64_t want = scores[scores.size() - ms.size() + i];
    if (ms[i] != 1 && ms[i] != want)
      return op->emitOpError()
             << name << " " << formatShape(ms)
             << " does not broadcast to the scores " << formatShape(scores);
  }
  return success();
}

/// C1 to C3, C5 and C6 of both ops: q [..., S, D], kt [..., D, T], v [...,
/// T, Dv], mask and keep broadcasting to [..., S, T], a rank-0 nan_fill.
LogicalResult verifyAttentionOperands(Operation *op, Value q, Value kt, Value v,
                                      Value mask, Value nanFill, Value keep,
                                      std::optional<APFloat> maskedScore) {
  // C5
  if (maskedScore && !maskedScore->isFinite())
    return op->emitOpError() << "masked_score must be finite, got "
                             << maskedScore->convertToFloat();
  if (maskedScore && !mask)
    return op->emitOpError() << "masked_score replaces the scores a mask "
                                "hides; the op has no mask";
  // C6
  if (keep && (!mask || !maskedScore))
    return op->emitOpError() << "keep selects between the scores plus the "
                                "mask and masked_score plus the mask; the op "
                                "needs both a mask and a masked_score";
  ArrayRef<int64_t> qs = shapeOf(q), ks = shapeOf(kt), vs = shapeOf(v);
  const int64_t r = qs.size();
  if (r < 2 || static_cast<int64_t>(ks.size()) != r ||
      static_cast<int64_t>(vs.size()) != r)
    return op->emitOpError() << "q, kt and v must have one rank of at least 2, "
                                "got "
                             << formatShape(qs) << ", " << formatShape(ks)
                             << ", " << formatShape(vs);
  Type elem = typeOf(q).getElementType();
  if (typeOf(kt).getElementType() != elem || typeOf(v).getElementType() != elem)
    return op->emitOpError() << "q, kt and v must have one element type";
  ArrayRef<int64_t> lead = qs.drop_back(2);
  if (ks.drop_back(2) != lead || vs.drop_back(2) != lead)
    return op->emitOpError() << "q, kt and v must have the same leading dims, "
                                "got "
                             << formatShape(qs) << ", " << formatShape(ks)
                             << ", " << formatShape(vs);
  if (ks[r - 2] != qs[r - 1])
    return op->emitOpError() << "kt " << formatShape(ks)
                             << " must have q's head dim " << qs[r - 1]
                             << " in dim " << r - 2;
  if (vs[r - 2] != ks[r - 1])
    return op->emitOpError() << "v " << formatShape(vs) << " must have kt's "
                             << ks[r - 1] << " keys in dim " << r - 2;
  // C3
  Type f32 = Float32Type::get(op->getContext());
  if (nanFill && typeOf(nanFill) != RankedTensorType::get({}, elem) &&
      typeOf(nanFill) != RankedTensorType::get({}, f32))
    return op->emitOpError()
           << "nan_fill has type " << nanFill.getType()
           << ", expected a rank-0 tensor of " << elem << " or f32";
  if (!mask)
    return success();
  // C2
  if (typeOf(mask).getElementType() != elem &&
      typeOf(mask).getElementType() != f32)
    return op->emitOpError()
           << "mask must have q's element type " << elem << " or f32";
  SmallVector<int64_t> scores = withTail(lead, {qs[r - 2], ks[r - 1]});
  if (failed(verifyBroadcastsToScores(op, "mask", mask, scores)))
    return failure();
  // C6
  return keep ? verifyBroadcastsToScores(op, "keep", keep, scores) : success();
}

/// The operands that broadcast to the scores (mask, keep) and their
/// operand indices.
struct ScoreOperands {
  SmallVector<std::pair<Value, unsigned>, 2> values;
  /// Those of `op`, whose mask is operand `maskIndex`, nan_fill and keep
  /// following it where present.
  ScoreOperands(Value mask, Value nanFill, Value keep, unsigned maskIndex) {
    if (mask)
      values.push_back({mask, maskIndex});
    if (keep)
      values.push_back({keep, maskIndex + (mask ? 1 : 0) + (nanFill ? 1 : 0)});
  }
};

/// A factor over the dims of `dims`, plus the mask's and keep's dim aligned
/// with scores dim `scoreDim` (rank `r`) unless it is a broadcast 1.
void addWithMask(ShardingRuleBuilder &b, int64_t size,
                 SmallVector<TensorDim> dims, const ScoreOperands &masks,
                 int64_t scoreDim, int64_t r, FactorKind kind) {
  for (auto [mask, index] : masks.values) {
    ArrayRef<int64_t> ms = shapeOf(mask);
    int64_t md = scoreDim - (r - static_cast<int64_t>(ms.size()));
    if (md >= 0 && ms[md] == size)
      dims.push_back(operandDim(index, md));
  }
  b.addFactor(size, dims, kind);
}

} // namespace

// The result types from q and v (microbatching retypes the op through
// them): out [..., S, Dv] of q's element type, lse [..., S] f32; the
// gradients have their operands' types.
LogicalResult AttentionOp::inferReturnTypes(MLIRContext *ctx,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  auto q = dyn_cast<RankedTensorType>(adaptor.getQ().getType());
  auto v = dyn_cast<RankedTensorType>(adaptor.getV().getType());
  if (!q || !v || q.getRank() < 2 || v.getRank() < 1)
    return emitOptionalError(loc, "q must have rank at least 2 and v rank "
                                  "at least 1");
  types.push_back(RankedTensorType::get(
      withTail(q.getShape().drop_back(1), {v.getShape().back()}),
      q.getElementType()));
  types.push_back(RankedTensorType::get(q.getShape().drop_back(1),
                                        Float32Type::get(ctx)));
  return success();
}

LogicalResult AttentionGradOp::inferReturnTypes(
    MLIRContext *, std::optional<Location>, Adaptor adaptor,
    SmallVectorImpl<Type> &types) {
  for (Value v : {adaptor.getQ(), adaptor.getKt(), adaptor.getV()})
    types.push_back(v.getType());
  return success();
}

LogicalResult AttentionOp::verify() {
  if (failed(verifyAttentionOperands(*this, getQ(), getKt(), getV(), getMask(),
                                     getNanFill(), getKeep(),
                                     getMaskedScore())))
    return failure();
  // C4
  ArrayRef<int64_t> qs = shapeOf(getQ());
  const int64_t r = qs.size();
  auto want = RankedTensorType::get(
      withTail(qs.drop_back(1), {shapeOf(getV())[r - 1]}),
      typeOf(getQ()).getElementType());
  if (getResult().getType() != want)
    return emitOpError() << "result has type " << getResult().getType()
                         << ", expected " << want;
  auto lse = RankedTensorType::get(qs.drop_back(1),
                                   Float32Type::get(getContext()));
  if (getLse().getType() != lse)
    return emitOpError() << "lse has type " << getLse().getType()
                         << ", expected " << lse;
  return success();
}

LogicalResult AttentionGradOp::verify() {
  if (failed(verifyAttentionOperands(*this, getQ(), getKt(), getV(), getMask(),
                                     getNanFill(), getKeep(),
                                     getMaskedScore())))
    return failure();
  // C1
  ArrayRef<int64_t> qs = shapeOf(getQ());
  const int64_t r = qs.size();
  auto out = RankedTensorType::get(
      withTail(qs.drop_back(1), {shapeOf(getV())[r - 1]}),
      typeOf(getQ()).getElementType());
  auto lse = RankedTensorType::get(qs.drop_back(1),
                                   Float32Type::get(getContext()));
  // Named arrays: a braced list inside the range-for's zip() would end its
  // life before the loop reads it.
  const Value read[] = {getResult(), getGrad(), getLse()};
  const Type want[] = {out, out, lse};
  const StringRef readName[] = {"result", "grad", "lse"};
  for (int i = 0; i < 3; ++i)
    if (read[i].getType() != want[i])
      return emitOpError() << readName[i] << " has type " << read[i].getType()
                           << ", expected " << want[i];
  // C2
  const Value operand[] = {getQ(), getKt(), getV()};
  const StringRef resultName[] = {"dq", "dkt", "dv"};
  for (int i = 0; i < 3; ++i)
    if (getOperation()->getResult(i).getType() != operand[i].getType())
      return emitOpError() << resultName[i] << " has type "
                           << getOperation()->getResult(i).getType()
                           << ", expected " << operand[i].getType();
  return success();
}

// Operands q 0, kt 1, v 2, mask 3 (, nan_fill) (, keep); results out 0,
// lse 1.
OpShardingRuleAttr mlir::tessel::buildAttentionRule(Operation *op) {
  auto attn = cast<AttentionOp>(op);
  ShardingRuleBuilder b(op);
  ArrayRef<int64_t> qs = shapeOf(attn.getQ()), vs = shapeOf(attn.getV());
  const int64_t r = qs.size();
  const ScoreOperands masks(attn.getMask(), attn.getNanFill(), attn.getKeep(),
                            3);
  for (int64_t d = 0; d < r - 2; ++d)
    addWithMask(b, qs[d],
                {operandDim(0, d), operandDim(1, d), operandDim(2, d),
                 resultDim(0, d), resultDim(1, d)},
                masks, d, r, FactorKind::Pass);
  addWithMask(b, qs[r - 2],
              {operandDim(0, r - 2), resultDim(0, r - 2), resultDim(1, r - 2)},
              masks, r - 2, r, FactorKind::Pass);
  b.addFactor(qs[r - 1], {operandDim(0, r - 1), operandDim(1, r - 2)},
              FactorKind::NeedReplication);
  addWithMask(b, vs[r - 2], {operandDim(1, r - 1), operandDim(2, r - 2)}, masks,
              r - 1, r, FactorKind::NeedReplication);
  b.addFactor(vs[r - 1], {operandDim(2, r - 1), resultDim(0, r - 1)},
              FactorKind::Pass);
  return b.build();
}

// Operands q 0, kt 1, v 2, result 3, lse 4, grad 5, mask 6 (, nan_fill)
// (, keep); results dq 0, dkt 1, dv 2.
OpShardingRuleAttr mlir::tessel::buildAttentionGradRule(Operation *op) {
  auto g = cast<AttentionGradOp>(op);
  ShardingRuleBuilder b(op);
  ArrayRef<int64_t> qs = shapeOf(g.getQ()), vs = shapeOf(g.getV());
  const int64_t r = qs.size();
  const ScoreOperands masks(g.getMask(), g.getNanFill(), g.getKeep(), 6);
  for (int64_t d = 0; d < r - 2; ++d)
    addWithMask(b, qs[d],
                {operandDim(0, d), operandDim(1, d), operandDim(2, d),
                 operandDim(3, d), operandDim(4, d), operandDim(5, d),
                 resultDim(0, d), resultDim(1, d), resultDim(2, d)},
                masks, d, r, FactorKind::Pass);
  addWithMask(b, qs[r - 2],
              {operandDim(0, r - 2), operandDim(3, r - 2), operandDim(4, r - 2),
               operandDim(5, r - 2), resultDim(0, r - 2)},
              masks, r - 2, r, FactorKind::NeedReplication);
  b.addFactor(qs[r - 1],
              {operandDim(0, r - 1), operandDim(1, r - 2), resultDim(0, r - 1),
               resultDim(1, r - 2)},
              FactorKind::NeedReplication);
  addWithMask(b, vs[r - 2],
              {operandDim(1, r - 1), operandDim(2, r - 2), resultDim(1, r - 1),
               resultDim(2, r - 2)},
              masks, r - 1, r, FactorKind::NeedReplication);
  b.addFactor(vs[r - 1],
              {operandDim(2, r - 1), operandDim(3, r - 1), operandDim(5, r - 1),
               resultDim(2, r - 1)},
              FactorKind::NeedReplication);
  return b.build();
}
