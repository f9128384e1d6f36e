//===- FactorSharding.cpp - dim shardings <-> factor shardings ------------===//

#include "tessel/Transforms/FactorSharding.h"

#include "mlir/IR/BuiltinTypes.h"

using namespace mlir;
using namespace mlir::tessel;

int64_t mlir::tessel::getNumShards(ArrayRef<StringAttr> axes,
                                   AxisSizeFn axisSize) {
  int64_t n = 1;
  for (StringAttr a : axes)
    n *= axisSize(a);
  return n;
}

SmallVector<AxisList>
mlir::tessel::projectDimToFactors(ArrayRef<int64_t> factorSizes,
                                  ArrayRef<StringAttr> axes,
                                  AxisSizeFn axisSize, bool *complete) {
  SmallVector<AxisList> out(factorSizes.size());
  size_t f = 0, a = 0;
  int64_t left = factorSizes.empty() ? 1 : factorSizes[0];
  while (a < axes.size() && f < factorSizes.size()) {
    int64_t n = axisSize(axes[a]);
    if (left % n == 0) {
      out[f].push_back(axes[a++]);
      left /= n;
      continue;
    }
    // The factor is not used up: a minor factor may not take axes yet.
    if (left != 1)
      break;
    if (++f < factorSizes.size())
      left = factorSizes[f];
  }
  if (complete)
    *complete = a == axes.size();
  return out;
}

AxisList mlir::tessel::projectFactorsToDim(ArrayRef<int64_t> factorSizes,
                                           ArrayRef<AxisList> factorAxes,
                                           AxisSizeFn axisSize) {
  AxisList out;
  for (auto [size, axes] : llvm::zip(factorSizes, factorAxes)) {
    out.append(axes.begin(), axes.end());
    if (getNumShards(axes, axisSize) != size)
      break;
  }
  return out;
}

std::optional<int64_t>
mlir::tessel::factorPadOfDim(ArrayRef<int64_t> factorSizes, int64_t dimPad) {
  // A dim without factors (a size-1 dim, which no rule maps) has no major
  // factor to carry the pad.
  if (factorSizes.empty())
    return std::nullopt;
  int64_t inner = 1;
  for (int64_t s : llvm::drop_begin(factorSizes))
    inner *= s;
  if (inner <= 0 || dimPad % inner)
    return std::nullopt;
  return dimPad / inner;
}

int64_t mlir::tessel::dimPadOfFactor(ArrayRef<int64_t> factorSizes,
                                     ArrayRef<AxisList> factorAxes,
                                     int64_t factorPad) {
  if (factorSizes.empty() || !factorPad || factorAxes[0].empty() ||
      llvm::any_of(llvm::drop_begin(factorAxes),
                   [](const AxisList &a) { return !a.empty(); }))
    return 0;
  int64_t inner = 1;
  for (int64_t s : llvm::drop_begin(factorSizes))
    inner *= s;
  return factorPad * inner;
}

ReductionKind mlir::tessel::getReductionKind(Operation *op) {
  if (auto iface = dyn_cast<ShardingRuleOpInterface>(op))
    return iface.getReductionKind();
  // No rule, so no reduction factor to shard: nothing is ever partial.
  return ReductionKind::Sum;
}

int64_t mlir::tessel::getSizeInBytes(Type type) {
  auto t = dyn_cast<RankedTensorType>(type);
  if (!t || !t.hasStaticShape())
    return 0;
  int64_t bits = t.getElementType().getIntOrFloatBitWidth();
  return t.getNumElements() * std::max<int64_t>(1, bits / 8);
}

std::string mlir::tessel::formatAxes(ArrayRef<StringAttr> axes) {
  std::string s = "{";
  for (auto [i, a] : llvm::enumerate(axes))
    s += (i ? ", \"" : "\"") + a.getValue().str() + "\"";
  return s + "}";
}
