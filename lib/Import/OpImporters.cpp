//===- OpImporters.cpp - one import function per ONNX operator ------------===//
//
// The op table at the end maps (op type, since-version) to an import
// function; the importer picks the newest row not newer than the model's
// opset (onnx-mlir's GetImportVersionOfNode). Each function folds the node
// when its inputs are known at import (shape subgraphs), and otherwise builds
// tessel ops. Families of regular ops share templates; irregular ops have
// their own function.
//
//===----------------------------------------------------------------------===//

#include "ImportUtil.h"

#include "dialects/tessel/Verifiers.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/Sequence.h"

#include <cmath>
#include <cstdlib>
#include <numeric>

using namespace mlir;
using namespace mlir::tessel;
using namespace mlir::tessel::detail;

namespace {

/// Output 0 from input 0 alone: `fold(input 0)` when input 0 is known at
/// import and folds, input 0 itself when `identity`, otherwise an OpTy with
/// `attrs` (and `resultTypes`, empty to infer them).
template <typename OpTy, typename FoldFn>
LogicalResult foldForwardOrCreate(NodeContext &c, FoldFn fold, bool identity,
                                  ArrayRef<NamedAttribute> attrs,
                                  TypeRange resultTypes, int32_t dtype) {
  if (const ConstTensor *x = c.getConst(0); x && setFolded(c, fold(*x)))
    return success();
  if (identity) {
    c.forward(0, 0);
    return success();
  }
  auto x = c.getValue(0);
  if (failed(x))
    return failure();
  return defineFrom(c, c.create<OpTy>({*x}, attrs, resultTypes), dtype);
}

/// The `axis` attribute (`dflt` when absent), normalised against input 0.
FailureOr<int64_t> getAxisAttr(NodeContext &c, int64_t dflt) {
  return c.normalizeAxis(c.getInt("axis", dflt), c.getRank(0), "axis");
}

/// The integers that newer opsets pass as constant input `i` and older ones
/// as attribute `name` (Squeeze's axes, Split's sizes); std::nullopt when the
/// node gives neither.
FailureOr<std::optional<SmallVector<int64_t>>>
getIntsInputOrAttr(NodeContext &c, unsigned i, StringRef name) {
  if (!c.hasInput(i))
    return c.getInts(name);
  auto v = c.getConstInts(i, name);
  if (failed(v))
    return failure();
  return std::optional<SmallVector<int64_t>>(std::move(*v));
}

/// Output 0 has shape `shape` and the contents of input 0: fold, forward or
/// tessel.reshape.
LogicalResult reshapeTo(NodeContext &c, ArrayRef<int64_t> shape) {
  if (getNumElements(shape) != c.getType(0).getNumElements())
    return c.error("cannot reshape " + formatShape(c.getShape(0)) + " to " +
                   formatShape(shape));
  auto type = RankedTensorType::get(shape, c.getType(0).getElementType());
  return foldForwardOrCreate<ReshapeOp>(
      c, [&](const ConstTensor &x) { return foldReshape(x, shape); },
      c.getShape(0) == shape, {}, {type}, c.getDType(0));
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

/// A binary op with numpy broadcasting; `resultDType` < 0 means "lhs's".
template <typename OpTy>
LogicalResult binary(NodeContext &c, const BinaryFn &fn,
                     const BinaryIntFn &intFn, int32_t resultDType = -1,
                     std::optional<ComparePredicate> pred = std::nullopt) {
  int32_t dtype = resultDType < 0 ? c.getDType(0) : resultDType;
  if (c.getNumInputs() != 2)
    return c.error("expects 2 inputs, got " + Twine(c.getNumInputs()));
  const ConstTensor *a = c.getConst(0), *b = c.getConst(1);
  if (a && b && setFolded(c, foldBinary(*a, *b, fn, intFn, dtype)))
    return success();
  auto lhs = c.getValue(0), rhs = c.getValue(1);
  if (failed(lhs) || failed(rhs))
    return failure();
  Value l = *lhs, r = *rhs;
  if (c.getDType(0) != c.getDType(1)) {
    // Pow's exponent may have another type: convert it to the base's.
    if (c.getNode().op_type() != "Pow")
      return c.error("operands have different element types (" +
                     getDTypeName(c.getDType(0)) + ", " +
                     getDTypeName(c.getDType(1)) + ")");
    if (b) {
      auto folded = c.materialize(foldCast(*b, c.getDType(0)),
                                  c.getNode().input(1));
      if (failed(folded))
        return failure();
      r = *folded;
    } else {
      auto type = RankedTensorType::get(c.getShape(1),
                                        c.getType(0).getElementType());
      auto cast = c.create<CastOp>({r}, {}, {type});
      if (failed(cast))
        return failure();
      r = (*cast)->getResult(0);
    }
  }
  SmallVector<NamedAttribute> attrs;
  if (pred)
    attrs.push_back(named(c, "predicate",
                          ComparePredicateAttr::get(c.getContext(), *pred)));
  return defineFrom(c, c.create<OpTy>({l, r}, attrs), dtype);
}

template <typename OpTy>
LogicalResult arith(NodeContext &c, BinaryFn fn, BinaryIntFn intFn) {
  return binary<OpTy>(c, fn, intFn);
}

LogicalResult importAdd(NodeContext &c) {
  return arith<AddOp>(c, std::plus<double>(), wrapAdd);
}
LogicalResult importSub(NodeContext &c) {
  return arith<SubOp>(c, std::minus<double>(), wrapSub);
}
LogicalResult importMul(NodeContext &c) {
  return arith<MulOp>(c, std::multiplies<double>(), wrapMul);
}
LogicalResult importDiv(NodeContext &c) {
  return arith<DivOp>(c, std::divides<double>(), wrapDiv);
}
/// Integer powers: a non-negative exponent by squaring, wrapping like Mul;
/// a negative one as pow() truncated (1, -1 or 0; 0 to a negative power,
/// infinite, gives INT64_MIN as the conversion does).
int64_t intPow(int64_t a, int64_t b) {
  if (b < 0)
    return truncToInt64(std::pow(double(a), double(b)));
  int64_t r = 1;
  for (; b; b >>= 1, a = wrapMul(a, a))
    if (b & 1)
      r = wrapMul(r, a);
  return r;
}
LogicalResult importPow(NodeContext &c) {
  return arith<PowOp>(
      c, [](double a, double b) { return std::pow(a, b); }, intPow);
}

/// Max and Min take one or more inputs.
template <typename OpTy>
LogicalResult variadicMinMax(NodeContext &c, bool isMax) {
  auto pick = [isMax](double a, double b) {
    return isMax ? std::max(a, b) : std::min(a, b);
  };
  auto pickInt = [isMax](int64_t a, int64_t b) {
    return isMax ? std::max(a, b) : std::min(a, b);
  };
  if (c.getNumInputs() == 1) {
    c.forward(0, 0);
    return success();
  }
  if (c.getNumInputs() == 2)
    return binary<OpTy>(c, pick, pickInt);
  if (c.allInputsConst()) {
    ConstTensor acc = *c.getConst(0);
    for (unsigned i = 1; i < c.getNumInputs(); ++i) {
      auto r = foldBinary(acc, *c.getConst(i), pick, pickInt, acc.dtype);
      if (!r)
        return c.error("inputs do not broadcast");
      acc = std::move(*r);
    }
    c.setConst(0, std::move(acc));
    return success();
  }
  auto acc = c.getValue(0);
  if (failed(acc))
    return failure();
  Value v = *acc;
  for (unsigned i = 1; i < c.getNumInputs(); ++i) {
    auto next = c.getValue(i);
    if (failed(next))
      return failure();
    auto op = createValue<OpTy>(c, {v, *next});
    if (failed(op))
      return failure();
    v = *op;
  }
  c.setOutput(0, v, c.getDType(0));
  return success();
}
LogicalResult importMax(NodeContext &c) { return variadicMinMax<MaxOp>(c, true); }
LogicalResult importMin(NodeContext &c) { return variadicMinMax<MinOp>(c, false); }

/// `a Pred b` as 1 or 0, folding doubles and integers alike.
template <ComparePredicate Pred, typename T> T comparison(T a, T b) {
  switch (Pred) {
  case ComparePredicate::EQ: return a == b;
  case ComparePredicate::NE: return a != b;
  case ComparePredicate::LT: return a < b;
  case ComparePredicate::LE: return a <= b;
  case ComparePredicate::GT: return a > b;
  case ComparePredicate::GE: return a >= b;
  }
  return 0;
}

template <ComparePredicate Pred>
LogicalResult compare(NodeContext &c) {
  return binary<CompareOp>(c, comparison<Pred, double>,
                           comparison<Pred, int64_t>, kBool, Pred);
}

/// IsNaN: NaN is the one value unequal to itself, so `compare ne, x, x`
/// (its elementwise rule and kernels on every backend).
LogicalResult importIsNaN(NodeContext &c) {
  if (failed(requireFloat(c, 0)))
    return failure();
  if (const ConstTensor *x = c.getConst(0)) {
    ConstTensor r = ConstTensor::zeros(kBool, x->shape);
    for (int64_t k = 0; k < x->size(); ++k)
      r.setInt(k, std::isnan(x->getDouble(k)));
    c.setConst(0, std::move(r));
    return success();
  }
  auto x = c.getValue(0);
  if (failed(x))
    return failure();
  return defineFrom(
      c,
      c.create<CompareOp>({*x, *x},
                          {named(c, "predicate",
                                 ComparePredicateAttr::get(
                                     c.getContext(), ComparePredicate::NE))}),
      kBool);
}

/// C's remainder (sign of a); x % 0 = 0 and no trap on INT64_MIN % -1, as
/// the runtime's kernels.
int64_t intFMod(int64_t a, int64_t b) {
  return b == 0 || b == -1 ? 0 : a % b;
}
/// Python's remainder (sign of b).
int64_t intMod(int64_t a, int64_t b) {
  int64_t r = intFMod(a, b);
  return r != 0 && ((r < 0) != (b < 0)) ? r + b : r;
}

/// Mod: fmod=1 is C's fmod (tessel.fmod, any numeric type), fmod=0 the
/// remainder with the divisor's sign (tessel.mod), which ONNX defines on
/// integers only.
LogicalResult importMod(NodeContext &c) {
  if (c.getInt("fmod", 0)) {
    return binary<FModOp>(
        c, [](double a, double b) { return std::fmod(a, b); }, intFMod);
  }
  if (isFloatDType(c.getDType(0)))
    return c.error("fmod=0 on " + getDTypeName(c.getDType(0)) +
                   " inputs: ONNX defines Mod with fmod=0 on integers only "
                   "(set fmod=1 for C's fmod)");
  return binary<ModOp>(
      c, [](double a, double b) { return double(intMod(int64_t(a), int64_t(b))); },
      intMod);
}

/// And / Or: folded only (Tessel has no logical binary ops yet).
template <bool IsAnd>
LogicalResult logical(NodeContext &c) {
  const ConstTensor *a = c.getConst(0), *b = c.getConst(1);
  auto fn = [](double x, double y) -> double {
    return IsAnd ? (x != 0 && y != 0) : (x != 0 || y != 0);
  };
  auto intFn = [](int64_t x, int64_t y) -> int64_t {
    return IsAnd ? (x && y) : (x || y);
  };
  if (a && b && setFolded(c, foldBinary(*a, *b, fn, intFn, kBool)))
    return success();
  // At run time, a select on bools: And(a, b) = where(a, b, false),
  // Or(a, b) = where(a, true, b); where broadcasts all three.
  if (c.getDType(0) != kBool || c.getDType(1) != kBool)
    return c.error("inputs must be bool tensors");
  auto va = c.getValue(0), vb = c.getValue(1);
  if (failed(va) || failed(vb))
    return failure();
  Value k = c.scalarConstant(IsAnd ? 0 : 1, c.getType(0).getElementType());
  return defineFrom(c,
                    IsAnd ? c.create<WhereOp>({*va, *vb, k})
                          : c.create<WhereOp>({*va, k, *vb}),
                    kBool);
}

/// A unary op of the input's shape; `fn` folds it. A float op with the
/// input's type, or (`resultDType` set) one on any input with that result.
template <typename OpTy>
LogicalResult unary(NodeContext &c, double (*fn)(double),
                    std::optional<int32_t> resultDType = std::nullopt) {
  if (const ConstTensor *x = c.getConst(0);
      x && setFolded(c, foldUnary(*x, fn)))
    return success();
  if (!resultDType && failed(requireFloat(c, 0)))
    return failure();
  auto x = c.getValue(0);
  if (failed(x))
    return failure();
  return defineFrom(c, c.create<OpTy>({*x}, {}, {x->getType()}),
                    resultDType.value_or(c.getDType(0)));
}

double negF(double x) { return -x; }
double sqrtF(double x) { return std::sqrt(x); }
double reciprocalF(double x) { return 1.0 / x; }
double expF(double x) { return std::exp(x); }
double logF(double x) { return std::log(x); }
double tanhF(double x) { return std::tanh(x); }
double erfF(double x) { return std::erf(x); }
double sigmoidF(double x) { return 1.0 / (1.0 + std::exp(-x)); }
double reluF(double x) { return x > 0 ? x : 0; }
double absF(double x) { return std::fabs(x); }
double sinF(double x) { return std::sin(x); }
double cosF(double x) { return std::cos(x); }
double notF(double x) { return x == 0; }
double floorF(double x) { return std::floor(x); }
double ceilF(double x) { return std::ceil(x); }
// Halves to even (the default rounding mode), as ONNX's Round.
double roundF(double x) { return std::nearbyint(x); }
// +0 for either zero (numpy, and the kernels); NaN stays NaN.
double signF(double x) { return x > 0 ? 1.0 : x < 0 ? -1.0 : x == 0 ? 0.0 : x; }

LogicalResult importNeg(NodeContext &c) { return unary<NegOp>(c, negF); }
LogicalResult importSqrt(NodeContext &c) { return unary<SqrtOp>(c, sqrtF); }
LogicalResult importReciprocal(NodeContext &c) {
  return unary<ReciprocalOp>(c, reciprocalF);
}
LogicalResult importExp(NodeContext &c) { return unary<ExpOp>(c, expF); }
LogicalResult importLog(NodeContext &c) { return unary<LogOp>(c, logF); }
LogicalResult importTanh(NodeContext &c) { return unary<TanhOp>(c, tanhF); }
LogicalResult importSin(NodeContext &c) { return unary<SinOp>(c, sinF); }
LogicalResult importCos(NodeContext &c) { return unary<CosOp>(c, cosF); }
LogicalResult importErf(NodeContext &c) { return unary<ErfOp>(c, erfF); }
LogicalResult importSigmoid(NodeContext &c) { return unary<SigmoidOp>(c, sigmoidF); }
LogicalResult importRelu(NodeContext &c) { return unary<ReluOp>(c, reluF); }
LogicalResult importAbs(NodeContext &c) { return unary<AbsOp>(c, absF); }

LogicalResult importNot(NodeContext &c) { return unary<NotOp>(c, notF, kBool); }
LogicalResult importFloor(NodeContext &c) { return unary<FloorOp>(c, floorF); }
LogicalResult importCeil(NodeContext &c) { return unary<CeilOp>(c, ceilF); }
LogicalResult importRound(NodeContext &c) { return unary<RoundOp>(c, roundF); }
LogicalResult importSign(NodeContext &c) { return unary<SignOp>(c, signF); }

LogicalResult importGelu(NodeContext &c) {
  if (failed(requireFloat(c, 0)))
    return failure();
  std::string approx = c.getString("approximate", "none");
  if (approx != "none" && approx != "tanh")
    return c.error("unknown approximate '" + approx + "'");
  auto x = c.getValue(0);
  if (failed(x))
    return failure();
  SmallVector<NamedAttribute> attrs;
  if (approx == "tanh")
    attrs.push_back(named(c, "tanh_approximation", c.getBuilder().getUnitAttr()));
  return defineFrom(c, c.create<GeluOp>({*x}, attrs, {x->getType()}),
                    c.getDType(0));
}

LogicalResult importWhere(NodeContext &c) {
  const ConstTensor *cond = c.getConst(0), *x = c.getConst(1),
                    *y = c.getConst(2);
  if (c.getDType(1) != c.getDType(2))
    return c.error("X and Y have different element types (" +
                   getDTypeName(c.getDType(1)) + ", " +
                   getDTypeName(c.getDType(2)) + ")");
  if (cond && x && y && setFolded(c, foldWhere(*cond, *x, *y)))
    return success();
  auto vc = c.getValue(0), vx = c.getValue(1), vy = c.getValue(2);
  if (failed(vc) || failed(vx) || failed(vy))
    return failure();
  return defineFrom(c, c.create<WhereOp>({*vc, *vx, *vy}), c.getDType(1));
}

LogicalResult importClip(NodeContext &c) {
  // min and max are optional one-element inputs: folded when known at
  // import, max/min ops on the run-time scalar otherwise.
  std::optional<double> bounds[2];
  bool runtimeBound[2] = {false, false};
  for (unsigned i = 1; i <= 2; ++i) {
    if (!c.hasInput(i))
      continue;
    if (const ConstTensor *b = c.getConst(i)) {
      if (b->size() != 1)
        return c.error(Twine(i == 1 ? "min" : "max") + " must be a scalar");
      bounds[i - 1] = b->getDouble(0);
      continue;
    }
    if (c.getType(i).getNumElements() != 1)
      return c.error(Twine(i == 1 ? "min" : "max") + " must be a scalar");
    runtimeBound[i - 1] = true;
  }
  if (const ConstTensor *x = c.getConst(0);
      x && !runtimeBound[0] && !runtimeBound[1]) {
    double lo = bounds[0].value_or(-INFINITY), hi = bounds[1].value_or(INFINITY);
    ConstTensor r = ConstTensor::zeros(x->dtype, x->shape);
    for (int64_t k = 0; k < x->size(); ++k)
      r.set(k, std::min(std::max(x->getDouble(k), lo), hi));
    c.setConst(0, std::move(r));
    return success();
  }
  auto x = c.getValue(0);
  if (failed(x))
    return failure();
  Value v = *x;
  Type et = c.getType(0).getElementType();
  for (unsigned i = 1; i <= 2; ++i) {
    Value bound;
    if (runtimeBound[i - 1]) {
      auto b = c.getValue(i);
      if (failed(b))
        return failure();
      // A one-element bound of any rank: make it a scalar so that it cannot
      // raise the result's rank when broadcast.
      bound = *b;
      if (c.getRank(i) != 0) {
        auto r = c.create<ReshapeOp>({bound}, {},
                                     {RankedTensorType::get({}, et)});
        if (failed(r))
          return failure();
        bound = (*r)->getResult(0);
      }
    } else if (bounds[i - 1]) {
      bound = c.scalarConstant(*bounds[i - 1], et);
    } else {
      continue;
    }
    auto op = i == 1 ? createValue<MaxOp>(c, {v, bound})
                     : createValue<MinOp>(c, {v, bound});
    if (failed(op))
      return failure();
    v = *op;
  }
  c.setOutput(0, v, c.getDType(0));
  return success();
}

/// Input 0 converted to ONNX dtype `to` (Cast, CastLike).
LogicalResult castTo(NodeContext &c, int32_t to) {
  Type et = getElementType(c.getContext(), to);
  if (!et)
    return c.error("cannot cast to " + getDTypeName(to) +
                   ", which Tessel does not support");
  auto type = RankedTensorType::get(c.getShape(0), et);
  return foldForwardOrCreate<CastOp>(
      c, [&](const ConstTensor &x) { return foldCast(x, to); },
      c.getDType(0) == to, {}, {type}, to);
}

LogicalResult importCast(NodeContext &c) {
  return castTo(c, int32_t(c.getInt("to", 0)));
}

/// CastLike: a Cast to input 1's element type (its values are not read).
LogicalResult importCastLike(NodeContext &c) {
  return castTo(c, c.getDType(1));
}

LogicalResult importIdentity(NodeContext &c) {
  c.forwardParameter(0, 0);
  return success();
}

LogicalResult importDropout(NodeContext &c) {
  if (c.hasInput(2)) {
    const ConstTensor *training = c.getConst(2);
    // Training mode drops nothing at ratio 0 (a model exported in
    // training mode with its dropout off, as for batch norm's statistics).
    const ConstTensor *ratio = c.hasInput(1) ? c.getOperandConst(1) : nullptr;
    const bool dropsNothing =
        ratio && ratio->size() == 1 && ratio->getDouble(0) == 0;
    if (!training || (training->getInt(0) != 0 && !dropsNothing))
      return c.error("training_mode must be false at import, or the ratio 0 "
                     "(random dropout is not supported: export the model in "
                     "eval mode, or with its dropout rates 0 to train it)");
  }
  // Inference: the output is the input and the mask is all true.
  if (c.isOutputUsed(1)) {
    if (!c.getType(0).hasStaticShape())
      return c.error("the mask output needs a static input shape");
    SmallVector<int64_t> shape(c.getShape(0));
    ConstTensor mask = ConstTensor::zeros(kBool, shape);
    for (int64_t k = 0; k < mask.size(); ++k)
      mask.set(k, 1.0);
    c.setConst(1, std::move(mask));
  }
  c.forward(0, 0);
  return success();
}

LogicalResult importConstant(NodeContext &c) {
  if (const auto *a = c.getAttr("value"))
    return c.setTensor(0, a->t());
  if (const auto *a = c.getAttr("value_float")) {
    ConstTensor t = ConstTensor::zeros(kFloat, {});
    t.set(0, a->f());
    c.setConst(0, std::move(t));
    return success();
  }
  if (const auto *a = c.getAttr("value_floats")) {
    ConstTensor t = ConstTensor::zeros(kFloat, {int64_t(a->floats_size())});
    for (int k = 0; k < a->floats_size(); ++k)
      t.set(k, a->floats(k));
    c.setConst(0, std::move(t));
    return success();
  }
  if (const auto *a = c.getAttr("value_int")) {
    c.setConst(0, ConstTensor::fromInts({a->i()}, {}));
    return success();
  }
  if (const auto *a = c.getAttr("value_ints")) {
    SmallVector<int64_t> v(a->ints().begin(), a->ints().end());
    c.setConst(0, ConstTensor::fromInts(v, {int64_t(v.size())}));
    return success();
  }
  if (c.getAttr("sparse_value"))
    return c.error("sparse constants are not supported");
  return c.error("string constants are not supported");
}

LogicalResult importConstantOfShape(NodeContext &c) {
  auto shape = c.getConstInts(0, "the shape");
  if (failed(shape))
    return failure();
  for (int64_t d : *shape)
    if (d < 0)
      return c.error("negative dim in shape " + formatShape(*shape));
  int32_t dtype = kFloat;
  double value = 0;
  if (const auto *a = c.getAttr("value")) {
    dtype = a->t().data_type();
    // The one-element tensor's value.
    ConstTensor one = ConstTensor::zeros(dtype, {1});
    const auto &t = a->t();
    if (t.has_raw_data()) {
      auto parsed = ConstTensor::fromBytes(
          dtype, {1}, ArrayRef<char>(t.raw_data().data(), t.raw_data().size()));
      if (!parsed)
        return c.error("the value attribute must hold one element");
      one = *parsed;
    } else if (t.float_data_size()) {
      one.set(0, t.float_data(0));
    } else if (t.int64_data_size()) {
      one.setInt(0, t.int64_data(0));
    } else if (t.int32_data_size()) {
      one.setInt(0, t.int32_data(0));
    } else if (t.double_data_size()) {
      one.set(0, t.double_data(0));
    }
    value = one.getDouble(0);
  }
  Type et = getElementType(c.getContext(), dtype);
  if (!et)
    return c.error("value has element type " + getDTypeName(dtype) +
                   ", which Tessel does not support");
  if (getNumElements(*shape) <= kMaxFoldElements) {
    ConstTensor t = ConstTensor::zeros(dtype, *shape);
    for (int64_t k = 0; k < t.size(); ++k)
      t.set(k, value);
    c.setConst(0, std::move(t));
    return success();
  }
  // Too large to fold: it stays an op, one element expanded to the shape
  // when the program runs. A splat constant of the whole shape was
  // materialized by the exporter: float[2^20, 2^20] asked for 4 TiB at
  // compile time (LLVM ERROR: out of memory, abort).
  auto one = RankedTensorType::get(SmallVector<int64_t>(shape->size(), 1), et);
  Attribute scalar = isa<FloatType>(et)
                         ? Attribute(FloatAttr::get(et, value))
                         : Attribute(IntegerAttr::get(et, int64_t(value)));
  Value v = ConstantOp::create(c.getBuilder(), c.getLoc(), one,
                               DenseElementsAttr::get(one, scalar));
  v = ExpandOp::create(c.getBuilder(), c.getLoc(),
                       RankedTensorType::get(*shape, et), v);
  c.setOutput(0, v, dtype);
  return success();
}

LogicalResult importShape(NodeContext &c) {
  ArrayRef<int64_t> shape = c.getShape(0);
  int64_t rank = shape.size();
  int64_t start = c.getInt("start", 0), end = c.getInt("end", rank);
  if (start < 0)
    start += rank;
  if (end < 0)
    end += rank;
  start = std::clamp<int64_t>(start, 0, rank);
  end = std::clamp<int64_t>(end, start, rank);
  SmallVector<int64_t> dims(shape.begin() + start, shape.begin() + end);
  c.setConst(0, ConstTensor::fromInts(dims, {int64_t(dims.size())}));
  return success();
}

LogicalResult importSize(NodeContext &c) {
  c.setConst(0, ConstTensor::fromInts({c.getType(0).getNumElements()}, {}));
  return success();
}

LogicalResult importRange(NodeContext &c) {
  const ConstTensor *start = c.getConst(0), *limit = c.getConst(1),
                    *delta = c.getConst(2);
  if (!start || !limit || !delta)
    return c.error("start, limit and delta must be known at import time");
  double s = start->getDouble(0), l = limit->getDouble(0),
         d = delta->getDouble(0);
  if (d == 0)
    return c.error("delta is 0");
  // The count in double: an infinite or NaN bound gives no int64 count.
  const double count = std::ceil((l - s) / d);
  if (std::isnan(count))
    return c.error("the range's length is not a number (start, limit or "
                   "delta is NaN or infinite)");
  if (count > double(kMaxFoldElements))
    return c.error("the range has " +
                   (count < 0x1p62 ? Twine(int64_t(count)).str()
                                   : std::string("more than 2^62")) +
                   " elements, too many to fold");
  const int64_t n = count > 0 ? int64_t(count) : 0;
  ConstTensor r = ConstTensor::zeros(start->dtype, {n});
  for (int64_t k = 0; k < n; ++k) {
    if (r.isFloat())
      r.set(k, s + k * d);
    else
      r.setInt(k, wrapAdd(start->getInt(0), wrapMul(k, delta->getInt(0))));
  }
  c.setConst(0, std::move(r));
  return success();
}

/// Trilu: folded only (causal masks built from constants).
LogicalResult importTrilu(NodeContext &c) {
  const ConstTensor *x = c.getConst(0);
  int64_t k = 0;
  if (c.hasInput(1)) {
    const ConstTensor *kt = c.getConst(1);
    if (!kt)
      return c.error("k must be known at import time");
    k = kt->getInt(0);
  }
  if (c.getRank(0) < 2 || !c.getType(0).hasStaticShape())
    return c.error("needs a static input of rank 2 or more");
  bool upper = c.getInt("upper", 1) != 0;
  ArrayRef<int64_t> shape = c.getShape(0);
  int64_t rows = shape[shape.size() - 2], cols = shape.back();
  auto keep = [&](int64_t e) {
    int64_t col = e % cols, row = (e / cols) % rows;
    return upper ? col - row >= k : col - row <= k;
  };
  if (x) {
    ConstTensor r = *x;
    for (int64_t e = 0; e < r.size(); ++e)
      if (!keep(e))
        r.set(e, 0);
    c.setConst(0, std::move(r));
    return success();
  }
  // At run time: where(mask, x, 0) with the [rows, cols] mask known now.
  ConstTensor mask = ConstTensor::zeros(kBool, {rows, cols});
  for (int64_t e = 0; e < mask.size(); ++e)
    mask.set(e, keep(e) ? 1.0 : 0.0);
  // Named after the output: weights are shared by name.
  auto m = c.materialize(mask, c.getNode().output(0) + ".trilu_mask");
  auto v = c.getValue(0);
  if (failed(m) || failed(v))
    return failure();
  Value zero = c.scalarConstant(0, c.getType(0).getElementType());
  return defineFrom(c, c.create<WhereOp>({*m, *v, zero}), c.getDType(0));
}

//===----------------------------------------------------------------------===//
// Shape manipulation
//===----------------------------------------------------------------------===//

LogicalResult importReshape(NodeContext &c) {
  auto target = c.getConstInts(1, "the shape");
  if (failed(target))
    return failure();
  bool allowZero = c.getInt("allowzero", 0) != 0;
  ArrayRef<int64_t> in = c.getShape(0);
  SmallVector<int64_t> shape;
  int inferred = -1;
  for (size_t k = 0; k < target->size(); ++k) {
    int64_t d = (*target)[k];
    if (d == 0 && !allowZero) {
      if (k >= in.size())
        return c.error("shape " + formatShape(*target) + " copies dim " +
                       Twine(k) + " of a rank-" + Twine(in.size()) + " input");
      d = in[k];
    } else if (d == -1) {
      if (inferred >= 0)
        return c.error("shape " + formatShape(*target) +
                       " has more than one -1");
      inferred = k;
      d = 1;
    } else if (d < 0) {
      return c.error("shape " + formatShape(*target) + " has a negative dim");
    }
    shape.push_back(d);
  }
  int64_t total = c.getType(0).getNumElements();
  if (inferred >= 0) {
    int64_t known = getNumElements(shape);
    if (known == 0 || total % known)
      return c.error("cannot reshape " + formatShape(in) + " to " +
                     formatShape(*target));
    shape[inferred] = total / known;
  }
  return reshapeTo(c, shape);
}

LogicalResult importFlatten(NodeContext &c) {
  int64_t rank = c.getRank(0);
  int64_t axis = c.getInt("axis", 1);
  if (axis < -rank || axis > rank)
    return c.error("axis " + Twine(axis) + " is out of range for rank " +
                   Twine(rank));
  if (axis < 0)
    axis += rank;
  ArrayRef<int64_t> in = c.getShape(0);
  SmallVector<int64_t> shape = {getNumElements(in.take_front(axis)),
                                getNumElements(in.drop_front(axis))};
  return reshapeTo(c, shape);
}

/// The axes of Squeeze/Unsqueeze: input 1 (opset 13+).
FailureOr<SmallVector<int64_t>> getAxes(NodeContext &c, int64_t rank,
                                        bool required) {
  auto given = getIntsInputOrAttr(c, 1, "axes");
  if (failed(given))
    return failure();
  if (!*given && required)
    return c.error("axes are required");
  SmallVector<int64_t> axes = given->value_or(SmallVector<int64_t>());
  if (failed(normalizeAxes(c, axes, rank)))
    return failure();
  if (std::adjacent_find(axes.begin(), axes.end()) != axes.end())
    return c.error("axes repeat");
  return axes;
}

LogicalResult importSqueeze(NodeContext &c) {
  ArrayRef<int64_t> in = c.getShape(0);
  auto axes = getAxes(c, in.size(), /*required=*/false);
  if (failed(axes))
    return failure();
  SmallVector<int64_t> shape;
  for (size_t k = 0; k < in.size(); ++k) {
    bool listed = llvm::is_contained(*axes, int64_t(k));
    if (listed && in[k] != 1)
      return c.error("cannot squeeze dim " + Twine(k) + " of size " +
                     Twine(in[k]));
    if (listed || (axes->empty() && in[k] == 1))
      continue;
    shape.push_back(in[k]);
  }
  return reshapeTo(c, shape);
}

LogicalResult importUnsqueeze(NodeContext &c) {
  ArrayRef<int64_t> in = c.getShape(0);
  // Axes refer to the output's rank.
  int64_t outRank = in.size();
  if (c.hasInput(1)) {
    const ConstTensor *a = c.getConst(1);
    if (a)
      outRank += a->size();
  } else if (auto attr = c.getInts("axes")) {
    outRank += attr->size();
  }
  auto axes = getAxes(c, outRank, /*required=*/true);
  if (failed(axes))
    return failure();
  SmallVector<int64_t> shape;
  size_t next = 0;
  for (int64_t k = 0; k < outRank; ++k)
    shape.push_back(llvm::is_contained(*axes, k) ? 1 : in[next++]);
  return reshapeTo(c, shape);
}

LogicalResult importTranspose(NodeContext &c) {
  int64_t rank = c.getRank(0);
  SmallVector<int64_t> perm;
  if (auto p = c.getInts("perm"))
    perm = *p;
  else
    for (int64_t k = rank - 1; k >= 0; --k)
      perm.push_back(k);
  SmallVector<int64_t> sorted = perm;
  llvm::sort(sorted);
  for (int64_t k = 0; k < int64_t(sorted.size()); ++k)
    if (sorted[k] != k || int64_t(perm.size()) != rank)
      return c.error("perm " + formatShape(perm) +
                     " is not a permutation of the " + Twine(rank) + " dims");
  bool identity = llvm::all_of(llvm::enumerate(perm), [](auto it) {
    return int64_t(it.index()) == it.value();
  });
  return foldForwardOrCreate<TransposeOp>(
      c, [&](const ConstTensor &x) { return foldTranspose(x, perm); }, identity,
      {named(c, "perm", arrayAttr(c, perm))}, {}, c.getDType(0));
}

LogicalResult importSlice(NodeContext &c) {
  ArrayRef<int64_t> in = c.getShape(0);
  int64_t rank = in.size();
  auto starts = c.getConstInts(1, "starts");
  if (failed(starts))
    return failure();
  auto ends = c.getConstInts(2, "ends");
  if (failed(ends))
    return failure();
  SmallVector<int64_t> axes, steps(starts->size(), 1);
  if (c.hasInput(3)) {
    auto a = c.getConstInts(3, "axes");
    if (failed(a))
      return failure();
    axes = *a;
  } else {
    for (size_t k = 0; k < starts->size(); ++k)
      axes.push_back(k);
  }
  if (c.hasInput(4)) {
    auto s = c.getConstInts(4, "steps");
    if (failed(s))
      return failure();
    steps = *s;
  }
  if (ends->size() != starts->size() || axes.size() != starts->size() ||
      steps.size() != starts->size())
    return c.error("starts, ends, axes and steps have different lengths");
  SmallVector<int64_t> lo(rank, 0), hi(in.begin(), in.end()), st(rank, 1);
  SmallVector<bool> seen(rank, false);
  SmallVector<std::pair<int64_t, SmallVector<int64_t>>> reversed;
  for (size_t k = 0; k < axes.size(); ++k) {
    auto axis = c.normalizeAxis(axes[k], rank, "axis");
    if (failed(axis))
      return failure();
    if (seen[*axis])
      return c.error("axis " + Twine(*axis) + " is sliced twice");
    seen[*axis] = true;
    int64_t dim = in[*axis], step = steps[k];
    if (step == 0)
      return c.error("step 0 on axis " + Twine(*axis));
    int64_t s = (*starts)[k], e = (*ends)[k];
    if (s < 0)
      s += dim;
    if (e < 0)
      e += dim;
    if (step < 0) {
      // Backwards (torch.flip, x[::-1]): from s down to e exclusive, s
      // clamped to [0, dim - 1] and e to [-1, dim - 1]; a gather of those
      // indices below.
      s = std::clamp<int64_t>(s, 0, dim - 1);
      e = std::clamp<int64_t>(e, -1, dim - 1);
      SmallVector<int64_t> idx;
      for (int64_t i = s; i > e && dim > 0; i += step)
        idx.push_back(i);
      reversed.push_back({*axis, std::move(idx)});
      continue;
    }
    s = std::clamp<int64_t>(s, 0, dim);
    e = std::clamp<int64_t>(e, 0, dim);
    lo[*axis] = s;
    hi[*axis] = std::max(s, e);
    st[*axis] = step;
  }
  bool full = true;
  for (int64_t d = 0; d < rank; ++d)
    full &= lo[d] == 0 && hi[d] == in[d] && (st[d] == 1 || in[d] <= 1);
  SmallVector<NamedAttribute> attrs = {named(c, "starts", arrayAttr(c, lo)),
                                       named(c, "limits", arrayAttr(c, hi)),
                                       named(c, "strides", arrayAttr(c, st))};
  if (reversed.empty())
    return foldForwardOrCreate<SliceOp>(
        c, [&](const ConstTensor &x) { return foldSlice(x, lo, hi, st); }, full,
        attrs, {}, c.getDType(0));
  if (const ConstTensor *x = c.getConst(0)) {
    std::optional<ConstTensor> r = foldSlice(*x, lo, hi, st);
    for (auto &[axis, idx] : reversed)
      if (r)
        r = foldGather(*r, ConstTensor::fromInts(idx, {int64_t(idx.size())}),
                       axis);
    if (setFolded(c, std::move(r)))
      return success();
  }
  auto x = c.getValue(0);
  if (failed(x))
    return failure();
  Value cur = *x;
  if (!full) {
    auto sliced = createValue<SliceOp>(c, {cur}, attrs);
    if (failed(sliced))
      return failure();
    cur = *sliced;
  }
  for (auto &[axis, idx] : reversed) {
    auto indices = c.materialize(
        ConstTensor::fromInts(idx, {int64_t(idx.size())}),
        c.getNode().output(0) + ".reverse" + std::to_string(axis));
    if (failed(indices))
      return failure();
    auto g = createValue<GatherOp>(c, {cur, *indices},
                                   {named(c, "axis", i64Attr(c, axis))});
    if (failed(g))
      return failure();
    cur = *g;
  }
  c.setOutput(0, cur, c.getDType(0));
  return success();
}

LogicalResult importConcat(NodeContext &c) {
  if (c.getNumInputs() == 0)
    return c.error("has no inputs");
  auto axis = getAxisAttr(c, 0);
  if (failed(axis))
    return failure();
  for (unsigned i = 1; i < c.getNumInputs(); ++i)
    if (c.getRank(i) != c.getRank(0) || c.getDType(i) != c.getDType(0))
      return c.error("input " + Twine(i) + " has another rank or element type");
  if (c.allInputsConst()) {
    SmallVector<const ConstTensor *> xs;
    for (unsigned i = 0; i < c.getNumInputs(); ++i)
      xs.push_back(c.getConst(i));
    if (setFolded(c, foldConcat(xs, *axis)))
      return success();
  }
  SmallVector<Value> operands;
  for (unsigned i = 0; i < c.getNumInputs(); ++i) {
    if (c.getShape(i)[*axis] == 0)
      continue; // Empty pieces (e.g. of shape tensors) add nothing.
    auto v = c.getValue(i);
    if (failed(v))
      return failure();
    operands.push_back(*v);
  }
  if (operands.size() == 1) {
    c.setOutput(0, operands[0], c.getDType(0));
    return success();
  }
  return defineFrom(c,
                    c.create<ConcatOp>(operands, {named(c, "dim", i64Attr(c, *axis))}),
                    c.getDType(0));
}

LogicalResult importSplit(NodeContext &c) {
  ArrayRef<int64_t> in = c.getShape(0);
  auto axis = getAxisAttr(c, 0);
  if (failed(axis))
    return failure();
  int64_t dim = in[*axis];
  unsigned n = c.getNumOutputs();
  auto given = getIntsInputOrAttr(c, 1, "split");
  if (failed(given))
    return failure();
  SmallVector<int64_t> sizes;
  if (*given) {
    sizes = **given;
  } else {
    int64_t parts = c.getInt("num_outputs", n);
    if (parts <= 0)
      return c.error("num_outputs must be positive");
    if (parts != int64_t(n))
      return c.error("num_outputs " + Twine(parts) + " for " + Twine(n) +
                     " outputs");
    if (dim < 0)
      return c.error("dim " + Twine(*axis) + " has no static size");
    int64_t piece = dim / parts + (dim % parts != 0);
    if (!c.getAttr("num_outputs") && dim % parts)
      return c.error("dim " + Twine(*axis) + " (" + Twine(dim) +
                     ") does not split evenly into " + Twine(parts));
    for (int64_t k = 0; k < parts; ++k)
      sizes.push_back(std::min(piece, dim - k * piece));
  }
  if (sizes.size() != n)
    return c.error(Twine(sizes.size()) + " split sizes for " + Twine(n) +
                   " outputs");
  if (failed(checkSplitSizes(c, sizes, dim, *axis)))
    return failure();
  if (const ConstTensor *x = c.getConst(0)) {
    int64_t offset = 0;
    for (unsigned k = 0; k < n; ++k) {
      SmallVector<int64_t> lo(in.size(), 0), hi(in.begin(), in.end()),
          st(in.size(), 1);
      lo[*axis] = offset;
      hi[*axis] = offset + sizes[k];
      offset += sizes[k];
      auto r = foldSlice(*x, lo, hi, st);
      if (!r)
        return c.error("cannot fold");
      c.setConst(k, std::move(*r));
    }
    return success();
  }
  auto x = c.getValue(0);
  if (failed(x))
    return failure();
  auto pieces = splitValue(c, *x, *axis, sizes);
  if (failed(pieces))
    return failure();
  for (unsigned k = 0; k < n; ++k)
    c.setOutput(k, (*pieces)[k], c.getDType(0));
  return success();
}

LogicalResult importExpand(NodeContext &c) {
  auto target = c.getConstInts(1, "the shape");
  if (failed(target))
    return failure();
  auto shape = broadcastShape(c.getShape(0), *target);
  if (!shape)
    return c.error("cannot expand " + formatShape(c.getShape(0)) + " to " +
                   formatShape(*target));
  auto type = RankedTensorType::get(*shape, c.getType(0).getElementType());
  return foldForwardOrCreate<ExpandOp>(
      c, [&](const ConstTensor &x) { return foldExpand(x, *shape); },
      ArrayRef<int64_t>(*shape) == c.getShape(0), {}, {type}, c.getDType(0));
}

/// Gather and GatherElements along `axis`: constant indices are checked
/// against the axis and made non-negative at import, and folded with
/// constant data by `fold`; otherwise an OpTy.
template <typename OpTy, typename FoldFn>
LogicalResult importIndexed(NodeContext &c, int64_t axis, FoldFn fold,
                            ArrayRef<NamedAttribute> extra = {}) {
  int64_t dim = c.getShape(0)[axis];
  const ConstTensor *indices = c.getConst(1);
  std::optional<ConstTensor> normalized;
  if (indices) {
    normalized = *indices;
    for (int64_t k = 0; k < normalized->size(); ++k) {
      int64_t i = normalized->getInt(k);
      if (i < -dim || i >= dim)
        return c.error("index " + Twine(i) + " is out of range for dim " +
                       Twine(axis) + " of size " + Twine(dim));
      normalized->setInt(k, i < 0 ? i + dim : i);
    }
    if (const ConstTensor *data = c.getConst(0);
        data && setFolded(c, fold(*data, *normalized)))
      return success();
  }
  auto data = c.getValue(0);
  if (failed(data))
    return failure();
  FailureOr<Value> idx =
      normalized ? c.materialize(*normalized, c.getNode().input(1))
                 : c.getValue(1);
  if (failed(idx))
    return failure();
  SmallVector<NamedAttribute> attrs = {named(c, "axis", i64Attr(c, axis))};
  llvm::append_range(attrs, extra);
  return defineFrom(c, c.create<OpTy>({*data, *idx}, attrs), c.getDType(0));
}

LogicalResult importGather(NodeContext &c) {
  auto axis = getAxisAttr(c, 0);
  if (failed(axis))
    return failure();
  // An embedding's padding_idx (torch.export's metadata): that row of the
  // table gets no gradient, as in PyTorch.
  SmallVector<NamedAttribute> extra;
  if (std::optional<int64_t> pad = c.embeddingPaddingIdx();
      pad && *axis == 0 && *pad < c.getShape(0)[0] &&
      isFloatDType(c.getDType(0)))
    extra.push_back(named(c, "padding_idx", i64Attr(c, *pad)));
  return importIndexed<GatherOp>(
      c, *axis,
      [&](const ConstTensor &data, const ConstTensor &indices) {
        return foldGather(data, indices, *axis);
      },
      extra);
}

LogicalResult importGatherElements(NodeContext &c) {
  ArrayRef<int64_t> in = c.getShape(0), idxShape = c.getShape(1);
  auto axis = getAxisAttr(c, 0);
  if (failed(axis))
    return failure();
  if (idxShape.size() != in.size())
    return c.error("indices " + formatShape(idxShape) + " and data " +
                   formatShape(in) + " have different ranks");
  return importIndexed<GatherElementsOp>(
      c, *axis, [&](const ConstTensor &data, const ConstTensor &indices) {
        return foldGatherElements(data, indices, *axis);
      });
}

/// GatherND as one gather of the flattened data: each index tuple becomes
/// its row of data viewed as [batch * indexed, rest...]. Each component is
/// first looked up in [0, dim) (a gather of that range with the component:
/// it wraps negative indices and fails at run time on one out of range, as
/// GatherND must).
LogicalResult importGatherND(NodeContext &c) {
  ArrayRef<int64_t> data = c.getShape(0), idx = c.getShape(1);
  const int64_t b = c.getInt("batch_dims", 0);
  const int64_t r = data.size(), q = idx.size();
  if (q < 1 || b < 0 || b >= q || b >= r)
    return c.error("batch_dims " + Twine(b) + " does not fit data " +
                   formatShape(data) + " and indices " + formatShape(idx));
  const int64_t k = idx.back();
  if (k < 1 || b + k > r)
    return c.error("index tuples of " + Twine(k) + " do not fit data " +
                   formatShape(data) + " after " + Twine(b) + " batch dims");
  if (data.take_front(b) != idx.take_front(b))
    return c.error("the batch dims of data " + formatShape(data) +
                   " and indices " + formatShape(idx) + " differ");
  Type i64 = c.getBuilder().getI64Type();
  auto dataValue = c.getValue(0), idxValue = c.getValue(1);
  if (failed(dataValue) || failed(idxValue))
    return failure();
  Value indices = *idxValue;
  if (c.getType(1).getElementType() != i64) {
    auto op = c.create<CastOp>({indices}, {}, {RankedTensorType::get(idx, i64)});
    if (failed(op))
      return failure();
    indices = (*op)->getResult(0);
  }
  SmallVector<int64_t> tupleShape(idx.drop_back());
  auto tupleType = RankedTensorType::get(tupleShape, i64);
  SmallVector<int64_t> lo(q, 0), hi(idx), steps(q, 1);
  const std::string base = c.getNode().output(0);
  Value linear;
  int64_t stride = 1;
  for (int64_t j = k - 1; j >= 0; --j) {
    const int64_t dim = data[b + j];
    lo.back() = j;
    hi.back() = j + 1;
    auto comp = createValue<SliceOp>(c, {indices},
                                     {named(c, "starts", arrayAttr(c, lo)),
                                      named(c, "limits", arrayAttr(c, hi)),
                                      named(c, "strides", arrayAttr(c, steps))});
    if (failed(comp))
      return failure();
    auto tuple = c.create<ReshapeOp>({*comp}, {}, {tupleType});
    if (failed(tuple))
      return failure();
    SmallVector<int64_t> iota(dim);
    std::iota(iota.begin(), iota.end(), int64_t(0));
    auto range = c.materialize(ConstTensor::fromInts(iota, {dim}),
                               base + ".gathernd_range" + std::to_string(j));
    if (failed(range))
      return failure();
    auto wrapped = createValue<GatherOp>(
        c, {*range, (*tuple)->getResult(0)}, {named(c, "axis", i64Attr(c, 0))});
    if (failed(wrapped))
      return failure();
    Value term = *wrapped;
    if (stride != 1) {
      auto scaled = createValue<MulOp>(c, {term, c.scalarConstant(stride, i64)});
      if (failed(scaled))
        return failure();
      term = *scaled;
    }
    if (linear) {
      auto sum = createValue<AddOp>(c, {linear, term});
      if (failed(sum))
        return failure();
      term = *sum;
    }
    linear = term;
    stride *= dim;
  }
  const int64_t batch = getNumElements(data.take_front(b));
  if (batch > 1) {
    // Each batch position's first row: [B..., 1, ...] broadcast over M.
    SmallVector<int64_t> shape(data.take_front(b)), rows;
    shape.append(q - 1 - b, 1);
    for (int64_t p = 0; p < batch; ++p)
      rows.push_back(p * stride);
    auto offsets = c.materialize(ConstTensor::fromInts(rows, shape),
                                 base + ".gathernd_batch");
    if (failed(offsets))
      return failure();
    auto sum = createValue<AddOp>(c, {linear, *offsets});
    if (failed(sum))
      return failure();
    linear = *sum;
  }
  SmallVector<int64_t> flatShape = {batch * stride};
  llvm::append_range(flatShape, data.drop_front(b + k));
  auto flat = c.create<ReshapeOp>(
      {*dataValue}, {},
      {RankedTensorType::get(flatShape, c.getType(0).getElementType())});
  if (failed(flat))
    return failure();
  return defineFrom(c,
                    c.create<GatherOp>({(*flat)->getResult(0), linear},
                                       {named(c, "axis", i64Attr(c, 0))}),
                    c.getDType(0));
}

//===----------------------------------------------------------------------===//
// Contractions, reductions, normalisations
//===----------------------------------------------------------------------===//

LogicalResult importMatMul(NodeContext &c) {
  if (failed(requireFloat(c, 0)) || failed(requireFloat(c, 1)))
    return failure();
  auto a = c.getValue(0), b = c.getValue(1);
  if (failed(a) || failed(b))
    return failure();
  return defineFrom(c, c.create<MatmulOp>({*a, *b}), c.getDType(0));
}

LogicalResult importGemm(NodeContext &c) {
  if (failed(requireFloat(c, 0)) || failed(requireFloat(c, 1)))
    return failure();
  float alpha = c.getFloat("alpha", 1.0f), beta = c.getFloat("beta", 1.0f);
  // C is optional, and unused when beta is 0.
  auto operands = getValues(c, beta == 0.0f ? 2 : 3);
  if (failed(operands))
    return failure();
  OpBuilder &b = c.getBuilder();
  SmallVector<NamedAttribute> attrs;
  if (c.getInt("transA", 0))
    attrs.push_back(named(c, "trans_a", b.getUnitAttr()));
  if (c.getInt("transB", 0))
    attrs.push_back(named(c, "trans_b", b.getUnitAttr()));
  if (alpha != 1.0f)
    attrs.push_back(named(c, "alpha", b.getF32FloatAttr(alpha)));
  if (beta != 1.0f && operands->size() == 3)
    attrs.push_back(named(c, "beta", b.getF32FloatAttr(beta)));
  // A zero bias the exporter dropped is a parameter all the same.
  const int32_t dt = c.getDType(0);
  if (operands->size() == 2 && beta != 0.0f &&
      (dt == kFloat || dt == kBFloat16 || dt == kFloat16) &&
      c.getRank(1) == 2) {
    auto bias =
        c.droppedBias(c.getShape(1)[c.getInt("transB", 0) ? 0 : 1],
                      cast<RankedTensorType>((*operands)[0].getType())
                          .getElementType());
    if (failed(bias))
      return failure();
    if (*bias)
      operands->push_back(*bias);
  }
  return defineFrom(c, c.create<GemmOp>(*operands, attrs), c.getDType(0));
}

/// ReduceSum/Mean/Max. `axesFromInput`: opset 13 ReduceSum and opset 18
/// others take axes as input 1; older ones as an attribute.
template <typename OpTy, bool AxesFromInput>
LogicalResult reduce(NodeContext &c) {
  auto axes = getReduceAxes(c, AxesFromInput);
  if (failed(axes))
    return failure();
  if (!*axes) {
    c.forward(0, 0);
    return success();
  }
  auto x = c.getValue(0);
  if (failed(x))
    return failure();
  SmallVector<NamedAttribute> attrs = {named(c, "dims", arrayAttr(c, **axes))};
  if (c.getInt("keepdims", 1))
    attrs.push_back(named(c, "keep_dims", c.getBuilder().getUnitAttr()));
  return defineFrom(c, c.create<OpTy>({*x}, attrs), c.getDType(0));
}

template <typename OpTy>
LogicalResult softmaxLike(NodeContext &c) {
  if (failed(requireFloat(c, 0)))
    return failure();
  auto axis = getAxisAttr(c, -1);
  if (failed(axis))
    return failure();
  auto x = c.getValue(0);
  if (failed(x))
    return failure();
  return defineFrom(c,
                    c.create<OpTy>({*x}, {named(c, "axis", i64Attr(c, *axis))},
                                   {x->getType()}),
                    c.getDType(0));
}

LogicalResult importLayerNormalization(NodeContext &c) {
  if (failed(requireFloat(c, 0)))
    return failure();
  auto axis = getAxisAttr(c, -1);
  if (failed(axis))
    return failure();
  float epsilon = c.getFloat("epsilon", 1e-5f);
  if (c.isOutputUsed(1) || c.isOutputUsed(2)) {
    // Mean and InvStdDev over dims [axis, rank), kept as 1s:
    // mean(x) and rsqrt(mean((x - mean)^2) + epsilon).
    auto x = c.getValue(0);
    if (failed(x))
      return failure();
    SmallVector<int64_t> dims;
    for (int64_t k = *axis; k < c.getRank(0); ++k)
      dims.push_back(k);
    SmallVector<NamedAttribute> attrs = {
        named(c, "dims", arrayAttr(c, dims)),
        named(c, "keep_dims", c.getBuilder().getUnitAttr())};
    auto mean = createValue<ReduceMeanOp>(c, {*x}, attrs);
    if (failed(mean))
      return failure();
    auto d = createValue<SubOp>(c, {*x, *mean});
    if (failed(d))
      return failure();
    auto sq = createValue<MulOp>(c, {*d, *d});
    if (failed(sq))
      return failure();
    auto var = createValue<ReduceMeanOp>(c, {*sq}, attrs);
    if (failed(var))
      return failure();
    auto ve = createValue<AddOp>(
        c, {*var, c.scalarConstant(epsilon, c.getType(0).getElementType())});
    if (failed(ve))
      return failure();
    auto inv = createValue<RsqrtOp>(c, {*ve});
    if (failed(inv))
      return failure();
    if (c.isOutputUsed(1))
      c.setOutput(1, *mean, c.getDType(0));
    if (c.isOutputUsed(2))
      c.setOutput(2, *inv, c.getDType(0));
  }
  auto operands = getValues(c, 3);
  if (failed(operands))
    return failure();
  return defineFrom(
      c,
      c.create<LayerNormOp>(
          *operands,
          {named(c, "axis", i64Attr(c, *axis)),
           named(c, "epsilon", c.getBuilder().getF32FloatAttr(epsilon))}),
      c.getDType(0));
}

/// RMSNormalization (opset 23) is tessel.rms_norm over dims [axis, rank).
/// A scale of other shape (PyTorch writes ones of the input's whole shape
/// for rms_norm without a weight) multiplies, broadcast, the rms_norm with
/// a unit scale.
LogicalResult importRMSNormalization(NodeContext &c) {
  if (failed(requireFloat(c, 0)) || failed(requireFloat(c, 1)))
    return failure();
  auto axis = getAxisAttr(c, -1);
  if (failed(axis))
    return failure();
  auto x = c.getValue(0), scale = c.getValue(1);
  if (failed(x) || failed(scale))
    return failure();
  ArrayRef<int64_t> norm = c.getShape(0).drop_front(*axis);
  const bool direct = c.getShape(1) == norm;
  if (!direct) {
    auto shape = broadcastShape(c.getShape(1), c.getShape(0));
    if (!shape || ArrayRef<int64_t>(*shape) != c.getShape(0))
      return c.error("scale " + formatShape(c.getShape(1)) +
                     " does not broadcast to the input " +
                     formatShape(c.getShape(0)));
  }
  Type et = c.getType(0).getElementType();
  Value s = *scale;
  if (!direct) {
    auto type = RankedTensorType::get(norm, et);
    s = ConstantOp::create(c.getBuilder(), c.getLoc(), type,
                           DenseElementsAttr::get(type, FloatAttr::get(et, 1.0)));
  }
  auto y = c.create<RmsNormOp>(
      {*x, s},
      {named(c, "axis", i64Attr(c, *axis)),
       named(c, "epsilon",
             c.getBuilder().getF32FloatAttr(c.getFloat("epsilon", 1e-5f)))});
  if (failed(y) || direct)
    return defineFrom(c, y, c.getDType(0));
  return defineFrom(c, c.create<MulOp>({(*y)->getResult(0), *scale}),
                    c.getDType(0));
}

/// RotaryEmbedding (opset 23), as its function body computes it, from
/// existing ops: X ([B, H, S, D], or [B, S, H * D] with num_heads) as
/// [B, S, H, D]; its first rotary_embedding_dim (default D) channels split
/// into halves (or even and odd channels when interleaved) x1, x2, rotated
/// by the caches (cos_cache[position_ids] when position_ids are given, else
/// cos_cache itself, [B, S, dim / 2]): x1 cos - x2 sin, x1 sin + x2 cos; the
/// other channels pass through.
LogicalResult importRotaryEmbedding(NodeContext &c) {
  for (unsigned i = 0; i < 3; ++i)
    if (failed(requireFloat(c, i)))
      return failure();
  const int64_t rank = c.getRank(0);
  if (rank != 3 && rank != 4)
    return c.error("X must have rank 3 or 4, has " + Twine(rank));
  auto x = c.getValue(0), cosCache = c.getValue(1), sinCache = c.getValue(2);
  if (failed(x) || failed(cosCache) || failed(sinCache))
    return failure();
  ArrayRef<int64_t> xs = c.getShape(0);
  auto transpose = [&](Value v) {
    return createValue<TransposeOp>(c, {v}, {named(c, "perm", arrayAttr(c, {0, 2, 1, 3}))});
  };
  auto slice = [&](Value v, int64_t dim, int64_t lo, int64_t hi,
                   int64_t step) -> FailureOr<Value> {
    ArrayRef<int64_t> s = cast<RankedTensorType>(v.getType()).getShape();
    SmallVector<int64_t> starts(s.size(), 0), limits(s), strides(s.size(), 1);
    starts[dim] = lo;
    limits[dim] = hi;
    strides[dim] = step;
    return createValue<SliceOp>(c, {v},
                                {named(c, "starts", arrayAttr(c, starts)),
                                 named(c, "limits", arrayAttr(c, limits)),
                                 named(c, "strides", arrayAttr(c, strides))});
  };
  // [B, S, H, D].
  FailureOr<Value> x4 = *x;
  int64_t b = xs[0], seq, heads, d;
  if (rank == 4) {
    heads = xs[1], seq = xs[2], d = xs[3];
    x4 = transpose(*x);
  } else {
    heads = c.getInt("num_heads", 0), seq = xs[1];
    if (heads <= 0 || xs[2] % heads)
      return c.error("num_heads " + Twine(heads) + " does not split the hidden size " +
                     Twine(xs[2]) + " (a 3-D X needs num_heads)");
    d = xs[2] / heads;
    x4 = reshapeValue(c, *x, {b, seq, heads, d});
  }
  if (failed(x4))
    return failure();
  int64_t dim = c.getInt("rotary_embedding_dim", 0);
  if (dim == 0)
    dim = d;
  if (dim < 2 || dim > d || dim % 2)
    return c.error("rotary_embedding_dim " + Twine(dim) +
                   " must be even and within the head size " + Twine(d));
  const int64_t half = dim / 2;
  const bool interleaved = c.getInt("interleaved", 0) != 0;
  // The caches, as [B, S, 1, dim / 2].
  SmallVector<Value, 2> caches;
  for (unsigned i : {1u, 2u}) {
    Value cache = i == 1 ? *cosCache : *sinCache;
    ArrayRef<int64_t> cs = c.getShape(i);
    if (cs.empty() || cs.back() != half)
      return c.error(Twine(i == 1 ? "cos_cache " : "sin_cache ") +
                     formatShape(cs) + " must end in rotary_embedding_dim / 2 = " +
                     Twine(half));
    if (c.hasInput(3)) {
      ArrayRef<int64_t> ps = c.getShape(3);
      if (cs.size() != 2 || ps.size() != 2 || ps[0] != b || ps[1] != seq)
        return c.error("with position_ids " + formatShape(ps) + " the caches are "
                       "[max_position, " + Twine(half) + "] and position_ids [" +
                       Twine(b) + ", " + Twine(seq) + "]; cache " + formatShape(cs));
      auto ids = c.getValue(3);
      if (failed(ids))
        return failure();
      auto g = createValue<GatherOp>(c, {cache, *ids}, {named(c, "axis", i64Attr(c, 0))});
      if (failed(g))
        return failure();
      cache = *g;
    } else if (cs.size() != 3 || cs[0] != b || cs[1] != seq) {
      return c.error("without position_ids the caches are [" + Twine(b) + ", " +
                     Twine(seq) + ", " + Twine(half) + "]; cache " + formatShape(cs));
    }
    auto r = reshapeValue(c, cache, {b, seq, 1, half});
    if (failed(r))
      return failure();
    caches.push_back(*r);
  }
  Value cosv = caches[0], sinv = caches[1];
  auto rot = dim == d ? x4 : slice(*x4, 3, 0, dim, 1);
  if (failed(rot))
    return failure();
  auto x1 = interleaved ? slice(*rot, 3, 0, dim, 2) : slice(*rot, 3, 0, half, 1);
  auto x2 = interleaved ? slice(*rot, 3, 1, dim, 2) : slice(*rot, 3, half, dim, 1);
  if (failed(x1) || failed(x2))
    return failure();
  auto mul = [&](Value a, Value v) { return createValue<MulOp>(c, {a, v}); };
  auto c1 = mul(*x1, cosv), s2 = mul(*x2, sinv), s1 = mul(*x1, sinv),
       c2 = mul(*x2, cosv);
  if (failed(c1) || failed(s2) || failed(s1) || failed(c2))
    return failure();
  auto real = createValue<SubOp>(c, {*c1, *s2});
  auto imag = createValue<AddOp>(c, {*s1, *c2});
  if (failed(real) || failed(imag))
    return failure();
  FailureOr<Value> out;
  if (interleaved) {
    auto r5 = reshapeValue(c, *real, {b, seq, heads, half, 1});
    auto i5 = reshapeValue(c, *imag, {b, seq, heads, half, 1});
    if (failed(r5) || failed(i5))
      return failure();
    auto pairs = createValue<ConcatOp>(c, {*r5, *i5}, {named(c, "dim", i64Attr(c, 4))});
    if (failed(pairs))
      return failure();
    out = reshapeValue(c, *pairs, {b, seq, heads, dim});
  } else {
    out = createValue<ConcatOp>(c, {*real, *imag}, {named(c, "dim", i64Attr(c, 3))});
  }
  if (failed(out))
    return failure();
  if (dim < d) {
    auto pass = slice(*x4, 3, dim, d, 1);
    if (failed(pass))
      return failure();
    out = createValue<ConcatOp>(c, {*out, *pass}, {named(c, "dim", i64Attr(c, 3))});
    if (failed(out))
      return failure();
  }
  out = rank == 4 ? transpose(*out) : reshapeValue(c, *out, xs);
  if (failed(out))
    return failure();
  c.setOutput(0, *out, c.getDType(0));
  return success();
}

/// Attention (opset 23), as its function body computes it, from existing
/// ops: Q and K each scaled by sqrt(scale), softmax(Q K^T [softcapped] +
/// bias) V, the bias the mask (a bool mask as 0 / -inf) plus the causal
/// mask; rows whose bias is -inf throughout give 0 (no key to attend).
/// Grouped-query K and V heads repeat ([h0, h0, h1, h1, ...]); 3-D inputs
/// are [batch, seq, heads * size]. The KV cache (past_key, past_value) and
/// the extra outputs are not supported.
LogicalResult importAttention(NodeContext &c) {
  for (unsigned i = 0; i < 3; ++i)
    if (failed(requireFloat(c, i)))
      return failure();
  if (c.hasInput(4) || c.hasInput(5) || c.hasInput(6))
    return c.error("the KV cache inputs (past_key, past_value, "
                   "nonpad_kv_seqlen) are not supported");
  for (unsigned k = 1; k < c.getNumOutputs(); ++k)
    if (c.isOutputUsed(k))
      return c.error("output " + Twine(k) +
                     " (present_key, present_value, qk_matmul_output) is not "
                     "supported");
  const int64_t rank = c.getRank(0);
  if ((rank != 3 && rank != 4) || c.getRank(1) != rank || c.getRank(2) != rank)
    return c.error("Q, K and V must all have rank 3 or all rank 4");
  Type et = c.getType(0).getElementType();
  auto q = c.getValue(0), k = c.getValue(1), v = c.getValue(2);
  if (failed(q) || failed(k) || failed(v))
    return failure();
  auto transpose = [&](Value x, ArrayRef<int64_t> perm) {
    return createValue<TransposeOp>(c, {x}, {named(c, "perm", arrayAttr(c, perm))});
  };
  // [B, S, H * E] -> [B, H, S, E].
  auto split = [&](Value x, int64_t heads) -> FailureOr<Value> {
    ArrayRef<int64_t> s = cast<RankedTensorType>(x.getType()).getShape();
    if (heads <= 0 || s[2] % heads)
      return c.error("the hidden size " + Twine(s[2]) +
                     " does not split into " + Twine(heads) + " heads");
    auto r = reshapeValue(c, x, {s[0], s[1], heads, s[2] / heads});
    if (failed(r))
      return failure();
    return transpose(*r, {0, 2, 1, 3});
  };
  if (rank == 3) {
    const int64_t qh = c.getInt("q_num_heads", 0), kvh = c.getInt("kv_num_heads", 0);
    q = split(*q, qh);
    k = split(*k, kvh);
    v = split(*v, kvh);
    if (failed(q) || failed(k) || failed(v))
      return failure();
  }
  ArrayRef<int64_t> qs = cast<RankedTensorType>(q->getType()).getShape(),
                    ks = cast<RankedTensorType>(k->getType()).getShape(),
                    vs = cast<RankedTensorType>(v->getType()).getShape();
  const int64_t b = qs[0], hq = qs[1], l = qs[2], e = qs[3], hkv = ks[1],
                sk = ks[2];
  if (ks[0] != b || vs[0] != b || vs[1] != hkv || vs[2] != sk || ks[3] != e ||
      hq % hkv)
    return c.error("Q " + formatShape(qs) + ", K " + formatShape(ks) +
                   " and V " + formatShape(vs) + " do not fit");
  if (hq != hkv) {
    const int64_t reps = hq / hkv;
    auto repeat = [&](Value x) -> FailureOr<Value> {
      ArrayRef<int64_t> s = cast<RankedTensorType>(x.getType()).getShape();
      auto r = reshapeValue(c, x, {s[0], s[1], 1, s[2], s[3]});
      if (failed(r))
        return failure();
      auto ex = c.create<ExpandOp>(
          {*r}, {}, {RankedTensorType::get({s[0], s[1], reps, s[2], s[3]}, et)});
      if (failed(ex))
        return failure();
      return reshapeValue(c, (*ex)->getResult(0), {s[0], hq, s[2], s[3]});
    };
    k = repeat(*k);
    v = repeat(*v);
    if (failed(k) || failed(v))
      return failure();
  }
  float scale = c.getFloat("scale", 1.0f / std::sqrt(float(e)));
  Value root = c.scalarConstant(float(std::sqrt(scale)), et);
  auto qScaled = createValue<MulOp>(c, {*q, root});
  auto kScaled = createValue<MulOp>(c, {*k, root});
  if (failed(qScaled) || failed(kScaled))
    return failure();
  auto kt = transpose(*kScaled, {0, 1, 3, 2});
  if (failed(kt))
    return failure();
  auto scores = createValue<MatmulOp>(c, {*qScaled, *kt});
  if (failed(scores))
    return failure();
  auto scoreType = cast<RankedTensorType>(scores->getType());
  if (float cap = c.getFloat("softcap", 0.0f); cap > 0) {
    auto d = createValue<DivOp>(c, {*scores, c.scalarConstant(cap, et)});
    if (failed(d))
      return failure();
    auto t = c.create<TanhOp>({*d}, {}, {scoreType});
    if (failed(t))
      return failure();
    scores = createValue<MulOp>(c, {(*t)->getResult(0), c.scalarConstant(cap, et)});
    if (failed(scores))
      return failure();
  }
  // The additive bias: the mask's, then the causal mask's.
  Value bias;
  Value negInf = c.scalarConstant(-INFINITY, et), zero = c.scalarConstant(0, et);
  if (c.hasInput(3)) {
    if (c.getShape(3).empty() || c.getShape(3).back() != sk)
      return c.error("attn_mask " + formatShape(c.getShape(3)) +
                     " must end in the key length " + Twine(sk));
    auto m = c.getValue(3);
    if (failed(m))
      return failure();
    bias = *m;
    if (c.getDType(3) == kBool) {
      auto w = createValue<WhereOp>(c, {*m, zero, negInf});
      if (failed(w))
        return failure();
      bias = *w;
    } else if (failed(requireFloat(c, 3))) {
      return failure();
    }
  }
  if (c.getInt("is_causal", 0)) {
    ConstTensor allowed = ConstTensor::zeros(kBool, {l, sk});
    for (int64_t i = 0; i < l; ++i)
      for (int64_t j = 0; j <= std::min(i, sk - 1); ++j)
        allowed.setInt(i * sk + j, 1);
    auto m = c.materialize(allowed, c.getNode().output(0) + ".causal_mask");
    if (failed(m))
      return failure();
    auto w = createValue<WhereOp>(c, {*m, bias ? bias : zero, negInf});
    if (failed(w))
      return failure();
    bias = *w;
  }
  if (bias) {
    auto sum = createValue<AddOp>(c, {*scores, bias});
    if (failed(sum))
      return failure();
    scores = sum;
    scoreType = cast<RankedTensorType>(scores->getType());
  }
  auto probs = c.create<SoftmaxOp>({*scores}, {named(c, "axis", i64Attr(c, 3))},
                                   {scoreType});
  if (failed(probs))
    return failure();
  Value p = (*probs)->getResult(0);
  if (bias) {
    // Rows with no key to attend: 0, not softmax's NaN.
    int64_t last = cast<RankedTensorType>(bias.getType()).getRank() - 1;
    auto mx = createValue<ReduceMaxOp>(
        c, {bias},
        {named(c, "dims", arrayAttr(c, {last})),
         named(c, "keep_dims", c.getBuilder().getUnitAttr())});
    if (failed(mx))
      return failure();
    auto none = createValue<CompareOp>(
        c, {*mx, negInf},
        {named(c, "predicate",
               ComparePredicateAttr::get(c.getContext(), ComparePredicate::EQ))});
    if (failed(none))
      return failure();
    auto guarded = createValue<WhereOp>(c, {*none, zero, p});
    if (failed(guarded))
      return failure();
    p = *guarded;
  }
  auto y = createValue<MatmulOp>(c, {p, *v});
  if (failed(y))
    return failure();
  if (rank == 3) {
    auto t = transpose(*y, {0, 2, 1, 3});
    if (failed(t))
      return failure();
    y = reshapeValue(c, *t, {b, l, hq * vs[3]});
    if (failed(y))
      return failure();
  }
  c.setOutput(0, *y, c.getDType(0));
  return success();
}

/// CumSum: the axis is a constant input (rank 0 or 1).
LogicalResult importCumSum(NodeContext &c) {
  auto axes = c.getConstInts(1, "axis");
  if (failed(axes))
    return failure();
  if (axes->size() != 1)
    return c.error("axis must hold one integer, holds " + Twine(axes->size()));
  auto axis = c.normalizeAxis((*axes)[0], c.getRank(0), "axis");
  if (failed(axis))
    return failure();
  const bool exclusive = c.getInt("exclusive", 0) != 0,
             reverse = c.getInt("reverse", 0) != 0;
  if (const ConstTensor *x = c.getConst(0);
      x && setFolded(c, foldCumSum(*x, *axis, exclusive, reverse)))
    return success();
  auto x = c.getValue(0);
  if (failed(x))
    return failure();
  SmallVector<NamedAttribute> attrs = {named(c, "axis", i64Attr(c, *axis))};
  if (exclusive)
    attrs.push_back(named(c, "exclusive", c.getBuilder().getUnitAttr()));
  if (reverse)
    attrs.push_back(named(c, "reverse", c.getBuilder().getUnitAttr()));
  return defineFrom(c, c.create<CumSumOp>({*x}, attrs, {x->getType()}),
                    c.getDType(0));
}

// training_mode=1 (torch.onnx.export with TrainingMode.TRAINING): batch
// statistics, running statistics updated when training
// (-tessel-batch-norm-train). The updated statistics are not outputs of the
// graph: the step assigns them to their weights.
LogicalResult importBatchNormalization(NodeContext &c) {
  for (unsigned k = 1; k < c.getNumOutputs(); ++k)
    if (c.isOutputUsed(k))
      return c.error("the running statistics outputs are not supported as "
                     "values (training updates the running_mean and "
                     "running_var weights themselves)");
  auto operands = getValues(c, 5);
  if (failed(operands))
    return failure();
  NamedAttribute epsilon = named(
      c, "epsilon", c.getBuilder().getF32FloatAttr(c.getFloat("epsilon", 1e-5f)));
  // PyTorch ran it in training mode, which torch.onnx.export(dynamo=True)
  // writes as an inference BatchNormalization: trained, it is one again.
  if (c.getInt("training_mode", 0) || c.trainingBatchNorm()) {
    // One value per channel: every output is its bias, no gradient reaches
    // the input, and the unbiased variance n / (n - 1) that the running
    // variance takes is undefined. PyTorch refuses it ("Expected more than
    // 1 value per channel when training").
    ArrayRef<int64_t> in = c.getShape(0);
    if (in.size() >= 2 && in[0] * getNumElements(in.drop_front(2)) == 1)
      return c.error("training mode normalises one value per channel (input " +
                     formatShape(in) + "): every output is the bias and the "
                     "unbiased variance n / (n - 1) is undefined; train with "
                     "a batch (or spatial size) above 1, as PyTorch requires");
    return defineFrom(
        c,
        c.create<BatchNormTrainOp>(
            *operands,
            {epsilon, named(c, "momentum", c.getBuilder().getF32FloatAttr(
                                               c.getFloat("momentum", 0.9f)))}),
        c.getDType(0));
  }
  return defineFrom(c, c.create<BatchNormOp>(*operands, {epsilon}),
                    c.getDType(0));
}

//===----------------------------------------------------------------------===//
// Convolution and pooling
//===----------------------------------------------------------------------===//

/// A window attribute (strides, dilations) of `n` spatial dims; all 1 when
/// absent.
SmallVector<int64_t> getWindowAttr(NodeContext &c, StringRef name,
                                   size_t n = 2) {
  return c.getInts(name).value_or(SmallVector<int64_t>(n, 1));
}

/// Pads from auto_pad / pads for the `kernel.size()` spatial dims of input
/// 0, as [begin..., end...] (2-D: [top, left, bottom, right]).
FailureOr<SmallVector<int64_t>> getPads(NodeContext &c, ArrayRef<int64_t> kernel,
                                        ArrayRef<int64_t> strides,
                                        ArrayRef<int64_t> dilations) {
  const size_t n = kernel.size();
  // Window arithmetic on these stays far inside int64 (a fuzz finding: a
  // Conv with strides 0 divided by zero, in 3-D and with auto_pad SAME).
  constexpr int64_t kMaxWindow = int64_t(1) << 31;
  auto inRange = [&](StringRef name, ArrayRef<int64_t> values,
                     int64_t low) -> LogicalResult {
    for (int64_t v : values)
      if (v < low || v > kMaxWindow)
        return c.error(name + " " + formatShape(values) + ": each must be in [" +
                       Twine(low) + ", 2^31]");
    return success();
  };
  if (failed(inRange("strides", strides, 1)) ||
      failed(inRange("dilations", dilations, 1)) ||
      failed(inRange("kernel_shape", kernel, 1)))
    return failure();
  std::string autoPad = c.getString("auto_pad", "NOTSET");
  ArrayRef<int64_t> in = c.getShape(0);
  if (autoPad == "NOTSET") {
    SmallVector<int64_t> pads =
        c.getInts("pads").value_or(SmallVector<int64_t>(2 * n, 0));
    if (pads.size() != 2 * n)
      return c.error("pads must have " + Twine(2 * n) + " entries, has " +
                     Twine(pads.size()));
    if (failed(inRange("pads", pads, 0)))
      return failure();
    return pads;
  }
  if (autoPad == "VALID")
    return SmallVector<int64_t>(2 * n, 0);
  if (autoPad != "SAME_UPPER" && autoPad != "SAME_LOWER")
    return c.error("unknown auto_pad '" + autoPad + "'");
  SmallVector<int64_t> pads(2 * n);
  for (size_t d = 0; d < n; ++d) {
    int64_t size = in[2 + d];
    int64_t out = (size + strides[d] - 1) / strides[d];
    int64_t total = std::max<int64_t>(
        (out - 1) * strides[d] + (kernel[d] - 1) * dilations[d] + 1 - size, 0);
    int64_t small = total / 2, large = total - small;
    pads[d] = autoPad == "SAME_UPPER" ? small : large;
    pads[d + n] = autoPad == "SAME_UPPER" ? large : small;
  }
  return pads;
}

FailureOr<Value> conv2d(NodeContext &c, ValueRange operands,
                        ArrayRef<int64_t> strides, ArrayRef<int64_t> pads,
                        ArrayRef<int64_t> dilations, int64_t group) {
  return createValue<Conv2DOp>(c, operands,
                               {named(c, "strides", arrayAttr(c, strides)),
                                named(c, "pads", arrayAttr(c, pads)),
                                named(c, "dilations", arrayAttr(c, dilations)),
                                named(c, "group", i64Attr(c, group))});
}

/// A 3-D convolution as a sum of 2-D ones, one per kernel depth kd: the
/// input's depth planes kd * dd + od * sd (zero-padded), each a batch of
/// images [N * OD, C, H, W], convolved with the weight's plane kd.
FailureOr<Value> conv3dAsConv2d(NodeContext &c, Value x, Value w, Value bias,
                                ArrayRef<int64_t> strides,
                                ArrayRef<int64_t> pads,
                                ArrayRef<int64_t> dilations, int64_t group) {
  ArrayRef<int64_t> xs = c.getShape(0), ws = c.getShape(1);
  const int64_t n = xs[0], ch = xs[1], h = xs[3], wd = xs[4];
  const int64_t kd = ws[2], sd = strides[0], dd = dilations[0];
  const int64_t padded = xs[2] + pads[0] + pads[3];
  const int64_t od = (padded - dd * (kd - 1) - 1) / sd + 1;
  if (od <= 0)
    return c.error("the output depth is not positive");
  Type et = c.getType(0).getElementType();
  if (pads[0] || pads[3]) {
    SmallVector<Value> parts;
    for (int64_t p : {pads[0], int64_t(-1), pads[3]}) {
      if (p == -1) {
        parts.push_back(x);
        continue;
      }
      if (p == 0)
        continue;
      auto type = RankedTensorType::get({n, ch, p, h, wd}, et);
      parts.push_back(ConstantOp::create(
          c.getBuilder(), c.getLoc(), type,
          DenseElementsAttr::get(type, c.getBuilder().getZeroAttr(et))));
    }
    auto cat = createValue<ConcatOp>(c, parts, {named(c, "dim", i64Attr(c, 2))});
    if (failed(cat))
      return failure();
    x = *cat;
  }
  // [N, C, D, H, W] -> [N, D, C, H, W]: a depth plane per (n, d).
  SmallVector<int64_t> perm = {0, 2, 1, 3, 4};
  auto planes = createValue<TransposeOp>(c, {x}, {named(c, "perm", arrayAttr(c, perm))});
  if (failed(planes))
    return failure();
  SmallVector<int64_t> strides2(strides.drop_front()),
      dil2(dilations.drop_front()), pads2 = {pads[1], pads[2], pads[4], pads[5]};
  Value sum;
  for (int64_t k = 0; k < kd; ++k) {
    SmallVector<int64_t> lo = {0, k * dd, 0, 0, 0},
                         hi = {n, k * dd + (od - 1) * sd + 1, ch, h, wd},
                         st = {1, sd, 1, 1, 1};
    auto sl = createValue<SliceOp>(c, {*planes},
                                   {named(c, "starts", arrayAttr(c, lo)),
                                    named(c, "limits", arrayAttr(c, hi)),
                                    named(c, "strides", arrayAttr(c, st))});
    if (failed(sl))
      return failure();
    auto images = reshapeValue(c, *sl, {n * od, ch, h, wd});
    SmallVector<int64_t> wlo = {0, 0, k, 0, 0}, whi(ws), wst(5, 1);
    whi[2] = k + 1;
    auto wk = createValue<SliceOp>(c, {w},
                                   {named(c, "starts", arrayAttr(c, wlo)),
                                    named(c, "limits", arrayAttr(c, whi)),
                                    named(c, "strides", arrayAttr(c, wst))});
    if (failed(images) || failed(wk))
      return failure();
    auto w2 = reshapeValue(c, *wk, {ws[0], ws[1], ws[3], ws[4]});
    if (failed(w2))
      return failure();
    SmallVector<Value> operands = {*images, *w2};
    if (bias && k == 0)
      operands.push_back(bias);
    auto y = conv2d(c, operands, strides2, pads2, dil2, group);
    if (failed(y))
      return failure();
    if (sum) {
      auto s = createValue<AddOp>(c, {sum, *y});
      if (failed(s))
        return failure();
      y = s;
    }
    sum = *y;
  }
  ArrayRef<int64_t> ys = cast<RankedTensorType>(sum.getType()).getShape();
  auto split = reshapeValue(c, sum, {n, od, ys[1], ys[2], ys[3]});
  if (failed(split))
    return failure();
  return createValue<TransposeOp>(c, {*split}, {named(c, "perm", arrayAttr(c, perm))});
}

/// Conv over 1, 2 or 3 spatial dims: 2-D is tessel.conv2d; 1-D a conv2d
/// over [N, C, 1, L] (exact: the unit dim has a unit kernel, stride and no
/// pads); 3-D a sum of conv2d's over the kernel's depth.
LogicalResult importConv(NodeContext &c) {
  const int64_t rank = c.getRank(0);
  if (rank < 3 || rank > 5 || c.getRank(1) != rank)
    return c.error("only 1-D, 2-D and 3-D convolutions are supported (input "
                   "rank " + Twine(rank) + ", weight rank " +
                   Twine(c.getRank(1)) + ")");
  const size_t n = rank - 2;
  ArrayRef<int64_t> w = c.getShape(1);
  SmallVector<int64_t> kernel(w.drop_front(2));
  if (auto ks = c.getInts("kernel_shape"); ks && ArrayRef<int64_t>(*ks) != ArrayRef<int64_t>(kernel))
    return c.error("kernel_shape " + formatShape(*ks) +
                   " does not match the weight " + formatShape(w));
  SmallVector<int64_t> strides = getWindowAttr(c, "strides", n),
                       dilations = getWindowAttr(c, "dilations", n);
  if (strides.size() != n || dilations.size() != n)
    return c.error("strides and dilations must have " + Twine(n) + " entries");
  auto pads = getPads(c, kernel, strides, dilations);
  if (failed(pads))
    return failure();
  auto operands = getValues(c, 3);
  if (failed(operands))
    return failure();
  // A zero bias the exporter dropped is a parameter all the same.
  if (operands->size() == 2 && isFloatDType(c.getDType(0))) {
    auto bias = c.droppedBias(
        w[0],
        cast<RankedTensorType>((*operands)[0].getType()).getElementType());
    if (failed(bias))
      return failure();
    if (*bias)
      operands->push_back(*bias);
  }
  const int64_t group = c.getInt("group", 1);
  if (n == 2)
    return defineFrom(c,
                      c.create<Conv2DOp>(*operands,
                                         {named(c, "strides", arrayAttr(c, strides)),
                                          named(c, "pads", arrayAttr(c, *pads)),
                                          named(c, "dilations", arrayAttr(c, dilations)),
                                          named(c, "group", i64Attr(c, group))}),
                      c.getDType(0));
  Value bias = operands->size() > 2 ? (*operands)[2] : Value();
  if (n == 3) {
    auto y = conv3dAsConv2d(c, (*operands)[0], (*operands)[1], bias, strides,
                            *pads, dilations, group);
    if (failed(y))
      return failure();
    c.setOutput(0, *y, c.getDType(0));
    return success();
  }
  ArrayRef<int64_t> xs = c.getShape(0);
  auto x4 = reshapeValue(c, (*operands)[0], {xs[0], xs[1], 1, xs[2]});
  auto w4 = reshapeValue(c, (*operands)[1], {w[0], w[1], 1, w[2]});
  if (failed(x4) || failed(w4))
    return failure();
  SmallVector<Value> ops4 = {*x4, *w4};
  if (bias)
    ops4.push_back(bias);
  auto y = conv2d(c, ops4, {1, strides[0]}, {0, (*pads)[0], 0, (*pads)[1]},
                  {1, dilations[0]}, group);
  if (failed(y))
    return failure();
  ArrayRef<int64_t> ys = cast<RankedTensorType>(y->getType()).getShape();
  auto y3 = reshapeValue(c, *y, {ys[0], ys[1], ys[3]});
  if (failed(y3))
    return failure();
  c.setOutput(0, *y3, c.getDType(0));
  return success();
}

/// One 2-D pooling of `x` ([N, C, H, W]).
template <typename OpTy, bool IsMax>
FailureOr<Value> pool2d(NodeContext &c, Value x, ArrayRef<int64_t> kernel,
                        ArrayRef<int64_t> strides, ArrayRef<int64_t> pads) {
  OpBuilder &b = c.getBuilder();
  SmallVector<NamedAttribute> attrs = {
      named(c, "kernel", arrayAttr(c, kernel)),
      named(c, "strides", arrayAttr(c, strides)),
      named(c, "pads", arrayAttr(c, pads))};
  if (c.getInt("ceil_mode", 0))
    attrs.push_back(named(c, "ceil_mode", b.getUnitAttr()));
  if (!IsMax && c.getInt("count_include_pad", 0))
    attrs.push_back(named(c, "count_include_pad", b.getUnitAttr()));
  auto op = c.create<OpTy>({x}, attrs);
  if (failed(op))
    return failure();
  return (*op)->getResult(0);
}

/// MaxPool and AveragePool over 1, 2 or 3 spatial dims. The 2-D op holds
/// them all: a 1-D pooling is a 2-D one over [N, C, 1, L]; a 3-D one is
/// separable, as a window's max, its size and its count of values inside
/// the input are each a product over the axes (and ceil_mode's last window
/// is decided per axis): a 2-D pooling over (H, W) of [N, C*D, H, W], then
/// one over D of [N, C, D, H'*W']. Gradients, sharding rules and kernels
/// are the 2-D op's.
template <typename OpTy, bool IsMax>
LogicalResult pool(NodeContext &c) {
  const int64_t rank = c.getRank(0);
  if (rank < 3 || rank > 5)
    return c.error("pooling needs 1, 2 or 3 spatial dims (input rank " +
                   Twine(rank) + ", expected 3, 4 or 5)");
  const size_t n = size_t(rank - 2);
  if (IsMax && c.isOutputUsed(1))
    return c.error("the Indices output is not supported");
  auto kernel = c.getInts("kernel_shape");
  if (!kernel || kernel->size() != n)
    return c.error("kernel_shape must have " + Twine(n) +
                   " entries (input rank " + Twine(rank) + ")");
  SmallVector<int64_t> strides = getWindowAttr(c, "strides", n),
                       dilations = getWindowAttr(c, "dilations", n);
  if (strides.size() != n || dilations.size() != n)
    return c.error("strides and dilations must have " + Twine(n) + " entries");
  if (llvm::any_of(dilations, [](int64_t d) { return d != 1; }))
    return c.error("dilated pooling is not supported");
  auto pads = getPads(c, *kernel, strides, dilations);
  if (failed(pads))
    return failure();
  auto x = c.getValue(0);
  if (failed(x))
    return failure();
  ArrayRef<int64_t> in = c.getShape(0);
  ArrayRef<int64_t> k = *kernel, p = *pads;
  if (c.getInt("ceil_mode", 0) && llvm::any_of(llvm::seq(n), [&](size_t d) {
        bool dropped = false;
        windowOutput(in[2 + d], p[d], p[n + d], k[d], strides[d], 1,
                     /*ceil=*/true, &dropped);
        return dropped;
      }))
    c.noteCeilModeDrop();
  auto outShape = [](Value v) {
    return cast<RankedTensorType>(v.getType()).getShape();
  };
  auto pooled = [&]() -> FailureOr<Value> {
    if (n == 2)
      return pool2d<OpTy, IsMax>(c, *x, k, strides, p);
    if (n == 1) {
      auto x4 = reshapeValue(c, *x, {in[0], in[1], 1, in[2]});
      if (failed(x4))
        return failure();
      auto y = pool2d<OpTy, IsMax>(c, *x4, {1, k[0]}, {1, strides[0]},
                                   {0, p[0], 0, p[1]});
      if (failed(y))
        return failure();
      ArrayRef<int64_t> ys = outShape(*y);
      return reshapeValue(c, *y, {ys[0], ys[1], ys[3]});
    }
    // 3-D: (H, W) first, then D.
    auto hw = reshapeValue(c, *x, {in[0], in[1] * in[2], in[3], in[4]});
    if (failed(hw))
      return failure();
    auto y = pool2d<OpTy, IsMax>(c, *hw, {k[1], k[2]}, {strides[1], strides[2]},
                                 {p[1], p[2], p[4], p[5]});
    if (failed(y))
      return failure();
    const int64_t oh = outShape(*y)[2], ow = outShape(*y)[3];
    auto d = reshapeValue(c, *y, {in[0], in[1], in[2], oh * ow});
    if (failed(d))
      return failure();
    auto z = pool2d<OpTy, IsMax>(c, *d, {k[0], 1}, {strides[0], 1},
                                 {p[0], 0, p[3], 0});
    if (failed(z))
      return failure();
    return reshapeValue(c, *z, {in[0], in[1], outShape(*z)[2], oh, ow});
  }();
  if (failed(pooled))
    return failure();
  c.setOutput(0, *pooled, c.getDType(0));
  return success();
}

/// GlobalMaxPool: the max over every spatial dim, kept as 1s.
LogicalResult importGlobalMaxPool(NodeContext &c) {
  if (failed(requireFloat(c, 0)))
    return failure();
  const int64_t rank = c.getRank(0);
  if (rank < 3)
    return c.error("needs an input of rank 3 or more ([N, C, spatial...]), "
                   "got rank " +
                   Twine(rank));
  auto x = c.getValue(0);
  if (failed(x))
    return failure();
  SmallVector<int64_t> dims;
  for (int64_t d = 2; d < rank; ++d)
    dims.push_back(d);
  return defineFrom(
      c,
      c.create<ReduceMaxOp>(
          {*x}, {named(c, "dims", arrayAttr(c, dims)),
                 named(c, "keep_dims", c.getBuilder().getUnitAttr())}),
      c.getDType(0));
}

LogicalResult importGlobalAveragePool(NodeContext &c) {
  auto x = c.getValue(0);
  if (failed(x))
    return failure();
  return defineFrom(c, c.create<GlobalAvgPoolOp>({*x}), c.getDType(0));
}

//===----------------------------------------------------------------------===//
// One-to-one ops: rows generated from the ODS (Tessel_OnnxOneToOne)
//===----------------------------------------------------------------------===//

/// An ONNX attribute carried over onto an op attribute.
struct OneToOneAttr {
  enum Type { Int, Float };
  const char *onnxName;
  const char *irName;
  const char *onnxDefault; // "" : required
  Type type;
};

/// An ONNX op that imports into one tessel op of the same meaning.
struct OneToOneImport {
  const char *opName;
  unsigned numOperands;
  const OneToOneAttr *attrs;
  size_t numAttrs;
};

/// The node's float inputs become the op's operands, its result has the
/// first input's type, and its attributes carry over (ONNX's defaults when
/// absent).
template <const OneToOneImport *Row>
LogicalResult importOneToOne(NodeContext &c) {
  if (c.getNumInputs() != Row->numOperands)
    return c.error("expects " + Twine(Row->numOperands) + " inputs, got " +
                   Twine(c.getNumInputs()));
  for (unsigned i = 0; i < Row->numOperands; ++i)
    if (failed(requireFloat(c, i)))
      return failure();
  auto values = getValues(c, Row->numOperands);
  if (failed(values))
    return failure();
  SmallVector<Value> &operands = *values;
  Builder b(c.getContext());
  SmallVector<NamedAttribute> attrs;
  for (const OneToOneAttr &a : ArrayRef(Row->attrs, Row->numAttrs)) {
    if (!c.getAttr(a.onnxName) && !*a.onnxDefault)
      return c.error("requires attribute '" + Twine(a.onnxName) + "'");
    Attribute value =
        a.type == OneToOneAttr::Float
            ? Attribute(b.getF32FloatAttr(
                  c.getFloat(a.onnxName, std::strtof(a.onnxDefault, nullptr))))
            : Attribute(b.getI64IntegerAttr(c.getInt(
                  a.onnxName, std::strtoll(a.onnxDefault, nullptr, 10))));
    attrs.push_back(b.getNamedAttr(a.irName, value));
  }
  return defineFrom(c,
                    c.createNamed(Row->opName, operands, attrs,
                                  {operands.front().getType()}),
                    c.getDType(0));
}

#include "dialects/tessel/OnnxOneToOne.inc"

//===----------------------------------------------------------------------===//
// The table
//===----------------------------------------------------------------------===//

// (op type, since-version, importer), sorted by op type then version. A row
// covers its op from its since-version until the next row's.
const OpImporter kOpImporters[] = {
    {"Abs", 13, importAbs},
    {"Add", 13, importAdd},
    {"And", 7, logical<true>},
    {"ArgMax", 13, importArgMax},
    {"ArgMin", 13, importArgMin},
    {"Celu", 12, importCelu},
    {"Einsum", 12, importEinsum},
    {"Elu", 6, importElu},
    {"HardSigmoid", 6, importHardSigmoid},
    {"Attention", 23, importAttention},
    {"AveragePool", 11, pool<AvgPoolOp, false>},
    {"BatchNormalization", 9, importBatchNormalization},
    {"BatchNormalization", 14, importBatchNormalization}, // training_mode,
    {"Cast", 13, importCast},
    {"CastLike", 15, importCastLike},
    {"Ceil", 6, importCeil},
    {"Clip", 13, importClip},
    {"Concat", 13, importConcat},
    {"ConcatFromSequence", 11, importConcatFromSequence},
    {"Constant", 13, importConstant},
    {"ConstantOfShape", 9, importConstantOfShape},
    {"Conv", 11, importConv},
    {"ConvTranspose", 11, importConvTranspose},
    {"Cos", 7, importCos},
    {"CumSum", 11, importCumSum},
    {"Div", 13, importDiv},
    {"Dropout", 13, importDropout},
    {"Equal", 13, compare<ComparePredicate::EQ>},
    {"Erf", 13, importErf},
    {"Exp", 13, importExp},
    {"Expand", 13, importExpand},
    {"Flatten", 13, importFlatten},
    {"Floor", 6, importFloor},
    {"Gather", 13, importGather},
    {"GatherElements", 13, importGatherElements},
    {"GatherND", 13, importGatherND},
    {"Gelu", 20, importGelu},
    {"Gemm", 13, importGemm},
    {"GlobalAveragePool", 1, importGlobalAveragePool},
    {"GlobalMaxPool", 1, importGlobalMaxPool},
    {"Greater", 13, compare<ComparePredicate::GT>},
    {"GreaterOrEqual", 12, compare<ComparePredicate::GE>},
    {"Identity", 13, importIdentity},
    {"InstanceNormalization", 6, importInstanceNormalization},
    {"IsNaN", 13, importIsNaN},
    {"LayerNormalization", 17, importLayerNormalization},
    {"Less", 13, compare<ComparePredicate::LT>},
    {"LessOrEqual", 12, compare<ComparePredicate::LE>},
    {"Log", 13, importLog},
    {"LogSoftmax", 13, softmaxLike<LogSoftmaxOp>},
    {"MatMul", 13, importMatMul},
    {"Max", 13, importMax},
    {"MaxPool", 12, pool<MaxPoolOp, true>},
    {"Min", 13, importMin},
    {"Mod", 13, importMod},
    {"Mul", 13, importMul},
    {"Neg", 13, importNeg},
    {"Not", 1, importNot},
    {"Or", 7, logical<false>},
    {"Pad", 13, importPad},
    {"Pow", 13, importPow},
    {"RMSNormalization", 23, importRMSNormalization},
    {"Range", 11, importRange},
    {"Reciprocal", 13, importReciprocal},
    {"ReduceL1", 13, importReduceL1},
    {"ReduceL1", 18, importReduceL1Axes},
    {"ReduceL2", 13, importReduceL2},
    {"ReduceL2", 18, importReduceL2Axes},
    {"ReduceLogSum", 13, importReduceLogSum},
    {"ReduceLogSum", 18, importReduceLogSumAxes},
    {"ReduceLogSumExp", 13, importReduceLogSumExp},
    {"ReduceLogSumExp", 18, importReduceLogSumExpAxes},
    {"ReduceMax", 13, reduce<ReduceMaxOp, false>},
    {"ReduceMax", 18, reduce<ReduceMaxOp, true>},
    {"ReduceMean", 13, reduce<ReduceMeanOp, false>},
    {"ReduceMean", 18, reduce<ReduceMeanOp, true>},
    {"ReduceMin", 13, importReduceMin},
    {"ReduceMin", 18, importReduceMinAxes},
    {"ReduceSum", 13, reduce<ReduceSumOp, true>},
    {"ReduceSumSquare", 13, importReduceSumSquare},
    {"ReduceSumSquare", 18, importReduceSumSquareAxes},
    {"Resize", 13, importResize},
    {"Relu", 13, importRelu},
    {"Reshape", 13, importReshape},
    {"Reshape", 14, importReshape}, // allowzero,
    {"RotaryEmbedding", 23, importRotaryEmbedding},
    {"Round", 11, importRound},
    {"ScatterElements", 13, importScatterElements},
    {"ScatterND", 13, importScatterND},
    {"Selu", 6, importSelu},
    {"Shape", 13, importShape},
    {"Shape", 15, importShape}, // start, end,
    {"Sigmoid", 13, importSigmoid},
    {"Sign", 9, importSign},
    {"Sin", 7, importSin},
    {"Size", 13, importSize},
    {"Slice", 13, importSlice},
    {"Softmax", 13, softmaxLike<SoftmaxOp>},
    {"SequenceAt", 11, importSequenceAt},
    {"SequenceConstruct", 11, importSequenceConstruct},
    {"SequenceLength", 11, importSequenceLength},
    {"Split", 13, importSplit},
    {"SplitToSequence", 11, importSplitToSequence},
    {"Split", 18, importSplit}, // num_outputs,
    {"Sqrt", 13, importSqrt},
    {"Squeeze", 13, importSqueeze},
    {"Sub", 13, importSub},
    {"Tanh", 13, importTanh},
    {"Tile", 13, importTile},
    {"TopK", 11, importTopK},
    {"Transpose", 13, importTranspose},
    {"Trilu", 14, importTrilu},
    {"Unsqueeze", 13, importUnsqueeze},
    {"Where", 9, importWhere},
    // Ops that import one-to-one, from their ODS.
    TESSEL_ONNX_ONE_TO_ONE_ROWS};

} // namespace

const OpImporter *mlir::tessel::detail::lookupOpImporter(StringRef opType,
                                                         int64_t opset,
                                                         int *oldest) {
  const OpImporter *best = nullptr;
  int first = 0;
  for (const OpImporter &row : kOpImporters) {
    if (opType != row.opType)
      continue;
    if (!first || row.sinceVersion < first)
      first = row.sinceVersion;
    // Rows whose since-version precedes opset 13 still serve opsets >= 13:
    // the importer accepts nothing older.
    if (row.sinceVersion <= opset &&
        (!best || row.sinceVersion > best->sinceVersion))
      best = &row;
  }
  if (oldest)
    *oldest = first;
  return best;
}
