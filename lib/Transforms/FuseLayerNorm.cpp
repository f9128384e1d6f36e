//===- FuseLayerNorm.cpp - decomposed layer norms -> tessel.layer_norm ----===//
//
// ONNX has LayerNormalization only from opset 17; PyTorch's exporter at
// lower opsets writes each nn.LayerNorm as
//   d = x - mean(x);  y = d / sqrt(mean(d^2) + eps) * scale + bias
// (ReduceMean, Sub, Pow, ReduceMean, Add, Sqrt, Div, Mul, Add). Folding it
// back gives propagation the norm's rule (the normalised dims replicated), so
// a plan reaches the same collectives on every export instead of keeping the
// residual stream sharded through six separate reductions and elementwise
// ops.
//
//===----------------------------------------------------------------------===//

#include "FusePatterns.h"
#include "tessel/Transforms/Passes.h"

#include "mlir/IR/Builders.h"

namespace mlir::tessel {
#define GEN_PASS_DEF_FUSELAYERNORMPASS
#include "tessel/Transforms/Passes.h.inc"

namespace {

/// `r` is reduce_mean(`of`) with keep_dims over a suffix of dims [axis,
/// rank); sets `axis` (or checks it when already set).
bool isMeanOverSuffix(Value r, Value of, int64_t &axis) {
  auto mean = r.getDefiningOp<ReduceMeanOp>();
  if (!mean || mean.getInput() != of || !mean.getKeepDims())
    return false;
  auto type = cast<RankedTensorType>(of.getType());
  SmallVector<int64_t> dims(mean.getDims());
  llvm::sort(dims);
  int64_t rank = type.getRank();
  if (dims.empty() || dims.back() != rank - 1)
    return false;
  for (auto [i, d] : llvm::enumerate(dims))
    if (d != rank - static_cast<int64_t>(dims.size()) +
                 static_cast<int64_t>(i))
      return false;
  int64_t got = rank - static_cast<int64_t>(dims.size());
  if (axis >= 0 && axis != got)
    return false;
  axis = got;
  return true;
}

/// d^2 as pow(d, 2) or d * d.
bool isSquare(Value v, Value d) {
  if (auto pow = v.getDefiningOp<PowOp>())
    return pow.getLhs() == d && splatFloatValue(pow.getRhs()) == 2.0;
  auto mul = v.getDefiningOp<MulOp>();
  return mul && mul.getLhs() == d && mul.getRhs() == d;
}

struct Match {
  Value x, scale, bias;
  int64_t axis = -1;
  double epsilon = 0;
};

/// d / sqrt(mean(d^2) + eps) (or d * rsqrt(...)) with d = x - mean(x):
/// sets x, axis and epsilon.
bool isNormalized(Value v, Match &m) {
  Value d, denom;
  bool rsqrt = false;
  if (auto div = v.getDefiningOp<DivOp>()) {
    d = div.getLhs();
    denom = div.getRhs();
  } else if (!either<MulOp>(v, [&](Value a, Value b) {
               if (!b.getDefiningOp<RsqrtOp>())
                 return false;
               d = a;
               denom = b;
               rsqrt = true;
               return true;
             })) {
    return false;
  }
  auto sub = d.getDefiningOp<SubOp>();
  if (!sub)
    return false;
  Value x = sub.getLhs();
  int64_t axis = -1;
  if (!isMeanOverSuffix(sub.getRhs(), x, axis))
    return false;
  Value root = rsqrt ? denom.getDefiningOp<RsqrtOp>().getInput()
                     : Value();
  if (!rsqrt) {
    auto sqrt = denom.getDefiningOp<SqrtOp>();
    if (!sqrt)
      return false;
    root = sqrt.getInput();
  }
  double eps = 0;
  bool ok = either<AddOp>(root, [&](Value var, Value e) {
    std::optional<double> epsValue = splatFloatValue(e);
    auto mean = var.getDefiningOp<ReduceMeanOp>();
    if (!epsValue || *epsValue < 0 || !mean ||
        !isSquare(mean.getInput(), d) ||
        !isMeanOverSuffix(var, mean.getInput(), axis))
      return false;
    eps = *epsValue;
    return true;
  });
  if (!ok)
    return false;
  m.x = x;
  m.axis = axis;
  m.epsilon = eps;
  return true;
}

/// Whether `p` has the shape of `x`'s dims [axis, rank).
bool isParam(Value p, Value x, int64_t axis) {
  auto pt = dyn_cast<RankedTensorType>(p.getType());
  auto xt = cast<RankedTensorType>(x.getType());
  return pt && pt.getElementType() == xt.getElementType() &&
         pt.getShape() == xt.getShape().drop_front(axis);
}

/// normalized * scale (+ bias) ending at `y`.
bool matchLayerNorm(Value y, Match &m) {
  auto scaled = [&](Value v) {
    return either<MulOp>(v, [&](Value n, Value s) {
      if (!isNormalized(n, m) || !isParam(s, m.x, m.axis))
        return false;
      m.scale = s;
      return true;
    });
  };
  if (either<AddOp>(y, [&](Value v, Value b) {
        if (!scaled(v) || !isParam(b, m.x, m.axis))
          return false;
        m.bias = b;
        return true;
      }))
    return true;
  m = Match();
  return scaled(y);
}

struct FuseLayerNormPass
    : public impl::FuseLayerNormPassBase<FuseLayerNormPass> {
  using Base::Base;
  void runOnOperation() final {
    // Outermost first: the Add of the bias before the Mul of the scale.
    SmallVector<Operation *> ends;
    getOperation()->walk([&](Operation *op) {
      if (isa<AddOp, MulOp>(op))
        ends.push_back(op);
    });
    bool changed = false;
    for (Operation *end : llvm::reverse(ends)) {
      if (!end->getParentOp() || end->use_empty())
        continue;
      Match m;
      Value y = end->getResult(0);
      if (!matchLayerNorm(y, m) || m.x.getType() != y.getType())
        continue;
      OpBuilder b(end);
      // Every value the match reads is defined before `end`: x, the scale and
      // the bias are operands of the decomposition.
      auto norm = LayerNormOp::create(
          b, end->getLoc(), y.getType(), m.x, m.scale, m.bias,
          b.getI64IntegerAttr(m.axis),
          b.getF32FloatAttr(static_cast<float>(m.epsilon)));
      y.replaceAllUsesWith(norm.getResult());
      // Now unread: erased at once, so that the scale's product it read is
      // not matched again as a norm without bias.
      end->erase();
      changed = true;
    }
    if (!changed)
      return;
    eraseDeadOps<MulOp, AddOp, SubOp, DivOp, PowOp, SqrtOp, RsqrtOp,
                 ReduceMeanOp, ConstantOp>(getOperation());
  }
};

} // namespace
} // namespace mlir::tessel
