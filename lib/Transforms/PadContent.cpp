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

PadContent PadContentAnalysis::get(Value v) { return compute(v).first; }

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
    if (!padded(v) && !isa_and_nonnull<AllGatherOp, AllReduceOp,
                                       ReduceScatterOp, AllToAllOp,
                                       LocalSliceOp>(op))
      return {PadContent::Finite, nullptr};
    if (!op) // a graph input: padded with zeros on load
      return {PadContent::Zero, nullptr};
    auto operand = [&](unsigned i) { return compute(op->getOperand(i)); };
    auto all = [&] {
      State r{PadContent::Zero, nullptr};
      for (Value o : op->getOperands())
        r = worse(r, compute(o));
      return r;
    };
    // Zero on load; moved, reshaped, reduced over other dims or summed
    // across ranks: what the operands held.
    if (isa<WeightOp>(op))
      return {PadContent::Zero, nullptr};
    if (isa<ReshapeOp, TransposeOp, SliceOp, ExpandOp, SplitOp, ConcatOp,
            ShardConstraintOp, AllReduceOp, AllGatherOp, ReduceScatterOp,
            AllToAllOp, LocalSliceOp, ReduceSumOp, ReduceMaxOp, ReduceMeanOp,
            CastOp, NegOp, ReluOp, TanhOp, GeluOp, AbsOp, ErfOp,
            LeakyReluOp, HardSwishOp, AddOp, SubOp, MaxOp, MinOp>(op))
      return all();
    // f(0) != 0, finite.
    if (isa<ExpOp, SigmoidOp, SoftplusOp, SoftmaxOp, LayerNormOp, RmsNormOp,
            GatherOp>(op)) {
      State r = all();
      if (r.first == PadContent::Unknown)
        return r;
      return {PadContent::Finite, r.first == PadContent::Zero ? op : r.second};
    }
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
      return paddedFinite ? r : State{PadContent::Zero, nullptr};
    }
    // sqrt(0) = 0; sqrt of a finite pad may be of a negative number.
    if (isa<SqrtOp>(op)) {
      State r = operand(0);
      return r.first == PadContent::Zero ? r : State{PadContent::Unknown, op};
    }
    // x / c with a constant c != 0 keeps x's zeros and finiteness; x^c with
    // c > 0 keeps zeros, and finiteness for a whole c (a fractional power of
    // a negative pad is NaN).
    if (isa<DivOp>(op)) {
      std::optional<double> c = splatFloatValue(op->getOperand(1));
      if (c && *c != 0)
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
    return {PadContent::Unknown, op}; // log(0), 1/0, rsqrt(0), ...
  }();
  memo[v] = s;
  return s;
}

} // namespace mlir::tessel
