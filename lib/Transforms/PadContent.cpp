//===- PadContent.cpp - what the pad of a padded shard holds --------------===//

#include "tessel/Transforms/PadContent.h"

#include "dialects/tessel/TesselOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <cmath>

namespace mlir::tessel {

namespace {

using State = std::pair<PadContent, Operation *>;

/// The worse of two: Unknown over Finite over Zero; the culprit of the
/// worse.
State worse(State a, State b) { return a.first >= b.first ? a : b; }

} // namespace

namespace {

/// The integer a value's pad holds where it comes from a graph input with a
/// `tessel.pad_value` through ops that move data (0 without one); nullopt
/// where it cannot be told.
std::optional<int64_t> padValueOf(Value v) {
  while (Operation *op = v.getDefiningOp()) {
    if (!op->hasTrait<OpTrait::tessel::DataMovement>() ||
        op->getNumOperands() != 1)
      return std::nullopt;
    v = op->getOperand(0);
  }
  auto arg = cast<BlockArgument>(v);
  auto fn = dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp());
  if (!fn)
    return std::nullopt;
  auto a = fn.getArgAttrOfType<IntegerAttr>(arg.getArgNumber(),
                                            TesselDialect::kPadValueAttrName);
  return a ? a.getInt() : 0;
}

bool holds(ComparePredicate p, int64_t a, int64_t b) {
  switch (p) {
  case ComparePredicate::EQ:
    return a == b;
  case ComparePredicate::NE:
    return a != b;
  case ComparePredicate::LT:
    return a < b;
  case ComparePredicate::LE:
    return a <= b;
  case ComparePredicate::GT:
    return a > b;
  case ComparePredicate::GE:
    return a >= b;
  }
  return false;
}

/// The value of `cmp` in its pad: one operand an input's pad (padValueOf),
/// the other an integer constant whose every element gives the same answer.
std::optional<bool> comparePad(CompareOp cmp) {
  for (int side = 0; side < 2; ++side) {
    Value padded = cmp->getOperand(side), other = cmp->getOperand(1 - side);
    std::optional<int64_t> p = padValueOf(padded);
    auto c = other.getDefiningOp<ConstantOp>();
    auto values = c ? dyn_cast<DenseIntElementsAttr>(c.getValue())
                    : DenseIntElementsAttr();
    if (!p || !values)
      continue;
    std::optional<bool> answer;
    for (const APInt &e : values.getValues<APInt>()) {
      int64_t x = e.getSExtValue();
      bool r = side == 0 ? holds(cmp.getPredicate(), *p, x)
                         : holds(cmp.getPredicate(), x, *p);
      if (answer && *answer != r)
        return std::nullopt;
      answer = r;
    }
    return answer;
  }
  return std::nullopt;
}

/// Whether every entry of `v` is >= 0 (or NaN), from its producer:
/// squares, sums and means of such, exp, sigmoid, softmax, and constants.
bool nonNegative(Value v, int depth = 0) {
  if (depth > 8)
    return false;
  if (std::optional<double> c = splatFloatValue(v))
    return *c >= 0;
  Operation *op = v.getDefiningOp();
  if (!op)
    return false;
  auto nn = [&](Value x) { return nonNegative(x, depth + 1); };
  if (isa<MulOp>(op) && op->getOperand(0) == op->getOperand(1))
    return true; // a square
  if (isa<ExpOp, SigmoidOp, SoftmaxOp, ReluOp, AbsOp, SqrtOp>(op))
    return true;
  // Moved entries, and sums, means and maxima of non-negative ones.
  if ((op->hasTrait<OpTrait::tessel::DataMovement>() &&
       op->getNumOperands() == 1) ||
      isa<ReduceSumOp, ReduceMeanOp, ReduceMaxOp, BatchNormVarianceOp>(op))
    return nn(op->getOperand(0));
  if (isa<AddOp, MulOp>(op))
    return nn(op->getOperand(0)) && nn(op->getOperand(1));
  return false;
}

/// Whether every entry of `v` is > 0 (or NaN): a non-negative value plus a
/// positive constant (a norm's variance + eps).
bool positive(Value v) {
  if (std::optional<double> c = splatFloatValue(v))
    return *c > 0;
  auto add = v.getDefiningOp<AddOp>();
  if (!add)
    return false;
  for (int k = 0; k < 2; ++k) {
    std::optional<double> c = splatFloatValue(add->getOperand(k));
    if (c && *c > 0 && nonNegative(add->getOperand(1 - k)))
      return true;
  }
  return false;
}

} // namespace

PadContent PadContentAnalysis::get(Value v) { return compute(v).first; }

bool PadContentAnalysis::zeroByFactor(Operation *op) {
  auto iface = dyn_cast<ShardingRuleOpInterface>(op);
  OpShardingRuleAttr rule = iface ? iface.getShardingRule() : nullptr;
  if (!rule || rule.getResultMappings().size() != 1)
    return false;
  SmallVector<int64_t> resultPads = padsOf(op->getResult(0));
  ArrayRef<DimMappingAttr> dims = rule.getResultMappings()[0].getDims();
  bool any = false;
  for (auto [d, pad] : llvm::enumerate(resultPads)) {
    if (!pad)
      continue;
    if (d >= dims.size() || dims[d].getFactors().empty())
      return false;
    const int64_t f = dims[d].getFactors()[0];
    bool zero = false;
    for (auto [i, m] : llvm::enumerate(rule.getOperandMappings())) {
      Value o = op->getOperand(i);
      SmallVector<int64_t> pads = padsOf(o);
      for (auto [od, dm] : llvm::enumerate(m.getDims()))
        if (od < pads.size() && pads[od] && !dm.getFactors().empty() &&
            dm.getFactors()[0] == f && compute(o).first == PadContent::Zero)
          zero = true;
    }
    if (!zero)
      return false;
    any = true;
  }
  return any;
}

Operation *PadContentAnalysis::culprit(Value v) { return compute(v).second; }

std::pair<PadContent, Operation *> PadContentAnalysis::compute(Value v) {
  if (auto it = memo.find(v); it != memo.end())
    return it->second;
  // Cycles cannot occur (SSA in one block); the placeholder keeps a bad
  // graph from recursing forever.
  memo[v] = {PadContent::Unknown, nullptr};
  State s = [&]() -> State {
    Operation *op = v.getDefiningOp();
    if (std::optional<double> c = splatFloatValue(v))
      return {*c == 0 ? PadContent::Zero : PadContent::Finite, nullptr};
    if (!padded(v) && !(op && op->hasTrait<OpTrait::tessel::Collective>()))
      return {PadContent::Finite, nullptr};
    if (!op) // a graph input: padded on load, with zeros or its pad_value
      return {padValueOf(v).value_or(0) == 0 ? PadContent::Zero
                                             : PadContent::Finite,
              nullptr};
    // A comparison of an input with a known pad (the labels' -100) against
    // constants: false in the whole pad is zero, true finite.
    if (auto cmp = dyn_cast<CompareOp>(op)) {
      if (std::optional<bool> r = comparePad(cmp))
        return {*r ? PadContent::Finite : PadContent::Zero, nullptr};
      return {PadContent::Unknown, op};
    }
    auto operand = [&](unsigned i) { return compute(op->getOperand(i)); };
    auto all = [&] {
      State r{PadContent::Zero, nullptr};
      for (Value o : op->getOperands())
        r = worse(r, compute(o));
      return r;
    };
    // Zero on load.
    if (isa<WeightOp>(op))
      return {PadContent::Zero, nullptr};
    // A product is zero where one factor is (and the others finite); a
    // matmul's padded result dims come from operands that are.
    if (isa<MulOp, MatmulOp, GemmOp>(op)) {
      State r = all();
      if (r.first == PadContent::Unknown)
        return r;
      bool anyZero = false, paddedFinite = false;
      for (Value o : op->getOperands()) {
        PadContent c = compute(o).first;
        anyZero |= c == PadContent::Zero && (padded(o) || splatFloatValue(o));
        paddedFinite |= c == PadContent::Finite && padded(o);
      }
      if (isa<MulOp>(op))
        return anyZero ? State{PadContent::Zero, nullptr} : r;
      if (!paddedFinite)
        return {PadContent::Zero, nullptr};
      // Two padded operands (attention's scores by the values, a gradient
      // by the keys): each padded result dim's entries come from the pads of
      // the operands that hold its factor; one of them zero makes them zero.
      if (padsOf && zeroByFactor(op))
        return {PadContent::Zero, nullptr};
      return r;
    }
    // Fused attention: a padded batch or head entry (a leading dim) holds
    // probabilities of finite scores times v's zero pad, and for the
    // gradient the output gradient's zero pad gives zero ds, dq, dkt, dv;
    // a padded query row (dim -2) of the gradient gives zero dq rows. Other
    // padded dims (the keys, a query row of the output) are finite.
    if (isa<AttentionOp, AttentionGradOp>(op)) {
      State r = all();
      if (r.first == PadContent::Unknown)
        return r;
      const bool grad = isa<AttentionGradOp>(op);
      if (!grad && v != op->getResult(0))
        return {PadContent::Finite, op}; // lse
      // The dims whose pad the zero source's pad makes zero: the leading
      // ones, dq's query rows, the output's last (v's own).
      const int64_t rank = cast<RankedTensorType>(v.getType()).getRank();
      const bool dq = grad && v == op->getResult(0);
      auto zeroed = [&](int64_t d) {
        return d < rank - 2 || (dq && d == rank - 2) ||
               (!grad && d == rank - 1);
      };
      SmallVector<int64_t> pads =
          padsOf ? padsOf(v) : SmallVector<int64_t>();
      bool allZeroed = !pads.empty();
      for (auto [d, pad] : llvm::enumerate(pads))
        allZeroed &= !pad || zeroed(int64_t(d));
      Value zeroSource = grad ? cast<AttentionGradOp>(op).getGrad()
                              : cast<AttentionOp>(op).getV();
      if (allZeroed && compute(zeroSource).first == PadContent::Zero)
        return {PadContent::Zero, nullptr};
      return {PadContent::Finite, op};
    }
    // where(c, a, b): a's or b's entries, whatever c holds.
    if (isa<WhereOp>(op))
      return worse(operand(1), operand(2));
    // gather_grad scatters dy's rows into zeros (sums of them): dy's pad.
    if (isa<GatherGradOp>(op))
      return operand(0);
    // Gradient kernels: dy times a derivative of a finite value keeps dy's
    // zeros (relu_grad: dy or 0, whatever the output).
    if (isa<GeluGradOp, LogSoftmaxGradOp, ReluGradOp>(op)) {
      State x = operand(0), dy = operand(1);
      if (dy.first == PadContent::Zero &&
          (isa<ReluGradOp>(op) || x.first != PadContent::Unknown))
        return dy;
      return worse(worse(x, dy), {PadContent::Finite, op});
    }
    // sqrt(0) = 0; sqrt of a finite pad may be of a negative number. Of a
    // positive finite pad (a norm's variance + eps), sqrt, rsqrt, 1/x and
    // log are finite.
    if (isa<SqrtOp>(op)) {
      State r = operand(0);
      if (r.first == PadContent::Zero ||
          (r.first == PadContent::Finite && nonNegative(op->getOperand(0))))
        return r;
      return {PadContent::Unknown, op};
    }
    if (isa<RsqrtOp, ReciprocalOp, LogOp>(op)) {
      State r = operand(0);
      if (r.first != PadContent::Unknown && positive(op->getOperand(0)))
        return {PadContent::Finite, r.first == PadContent::Zero ? op : r.second};
      return {PadContent::Unknown, op};
    }
    // x / c with a constant c != 0 keeps x's zeros and finiteness; x^c with
    // c > 0 keeps zeros, and finiteness for a whole c (a fractional power of
    // a negative pad is NaN).
    if (isa<DivOp>(op)) {
      std::optional<double> c = splatFloatValue(op->getOperand(1));
      if (c && *c != 0)
        return operand(0);
      // x / y with y positive and finite: x's zeros and finiteness.
      State y = operand(1);
      if (y.first != PadContent::Unknown && positive(op->getOperand(1)))
        return operand(0);
      return {PadContent::Unknown, op};
    }
    if (isa<PowOp>(op)) {
      std::optional<double> c = splatFloatValue(op->getOperand(1));
      State r = operand(0);
      if (c && *c > 0 &&
          (r.first == PadContent::Zero || std::floor(*c) == *c))
        return r;
      return {PadContent::Unknown, op};
    }
    // Moved, reshaped, reduced over other dims or summed across ranks, or
    // f(0) = 0 elementwise (after the sharper rules above): what the
    // operands held.
    if (op->hasTrait<OpTrait::tessel::DataMovement>() ||
        op->hasTrait<OpTrait::tessel::ZeroPreserving>())
      return all();
    // f(0) != 0, finite.
    if (op->hasTrait<OpTrait::tessel::FinitePreserving>()) {
      State r = all();
      if (r.first == PadContent::Unknown)
        return r;
      return {PadContent::Finite, r.first == PadContent::Zero ? op : r.second};
    }
    return {PadContent::Unknown, op}; // log(0), 1/0, rsqrt(0), ...
  }();
  memo[v] = s;
  return s;
}

} // namespace mlir::tessel
