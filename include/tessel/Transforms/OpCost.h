//===- OpCost.h - a FLOP estimate of one op ---------------------*- C++ -*-===//
//
// The cost model of --stages auto and of the pipeline report: matmuls and
// convolutions count 2 multiply-adds per output element and reduction
// element, everything else one FLOP per result element. Estimated time is
// FLOPs over a nominal rate (kNominalFlopsPerSecond).
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_TRANSFORMS_OPCOST_H
#define TESSEL_TRANSFORMS_OPCOST_H

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Operation.h"

namespace mlir::tessel {

/// The nominal rate of the estimate: one CPU core's sustained f32 rate.
inline constexpr double kNominalFlopsPerSecond = 2.0e10;

inline double estimateFlops(Operation *op) {
  auto numel = [](Type t) -> double {
    auto rt = dyn_cast<RankedTensorType>(t);
    return rt && rt.hasStaticShape() ? double(rt.getNumElements()) : 0.0;
  };
  double out = 0;
  for (Type t : op->getResultTypes())
    out += numel(t);
  StringRef name = op->getName().getStringRef();
  if ((name == "tessel.matmul" || name == "tessel.gemm") &&
      op->getNumOperands() >= 2)
    if (auto lhs = dyn_cast<RankedTensorType>(op->getOperand(0).getType()))
      if (lhs.getRank() >= 1)
        return 2.0 * out * double(lhs.getShape().back());
  if (name.contains("conv") && op->getNumOperands() >= 2)
    if (auto w = dyn_cast<RankedTensorType>(op->getOperand(1).getType()))
      if (w.hasStaticShape() && w.getRank() >= 2 && w.getDimSize(0) > 0)
        return 2.0 * out * double(w.getNumElements() / w.getDimSize(0));
  return out;
}

} // namespace mlir::tessel

#endif // TESSEL_TRANSFORMS_OPCOST_H
