//===- OpCost.h - a FLOP estimate of one op ---------------------*- C++ -*-===//
//
// The cost model of --stages auto and of the pipeline report: contractions
// and convolutions (an op's CostClass, declared in its ODS entry) count 2
// per multiply-add, everything else one FLOP per result element. Estimated
// time is FLOPs over a nominal rate (kNominalFlopsPerSecond).
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_DIALECT_OPCOST_H
#define TESSEL_DIALECT_OPCOST_H

#include "dialects/tessel/TesselOps.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Operation.h"

namespace mlir::tessel {

/// The nominal rate of the estimate: one CPU core's sustained f32 rate.
inline constexpr double kNominalFlopsPerSecond = 2.0e10;

/// The contracted dim's size of a contraction (matmul, gemm): the lhs's
/// last dim, its first with trans_a (gemm's [K, M] operand: a weight
/// gradient's); 0 for other ops or unknown sizes.
inline int64_t getContractionK(Operation *op) {
  auto cost = dyn_cast<CostOpInterface>(op);
  if (!cost || cost.getCostClass() != CostClass::Contraction ||
      op->getNumOperands() < 2)
    return 0;
  auto lhs = dyn_cast<RankedTensorType>(op->getOperand(0).getType());
  if (!lhs || lhs.getRank() < 1)
    return 0;
  const int64_t k = op->hasAttr("trans_a") && lhs.getRank() >= 2
                        ? lhs.getRank() - 2
                        : lhs.getRank() - 1;
  return lhs.isDynamicDim(k) ? 0 : lhs.getDimSize(k);
}

/// The FLOPs of `op`, by its cost class (CostOpInterface; one per result
/// element for ops without it).
inline double estimateFlops(Operation *op) {
  auto numel = [](Type t) -> double {
    auto rt = dyn_cast<RankedTensorType>(t);
    return rt && rt.hasStaticShape() ? double(rt.getNumElements()) : 0.0;
  };
  double out = 0;
  for (Type t : op->getResultTypes())
    out += numel(t);
  auto cost = dyn_cast<CostOpInterface>(op);
  const CostClass cls = cost ? cost.getCostClass() : CostClass::PerElement;
  if (int64_t k = getContractionK(op))
    return 2.0 * out * double(k);
  // A convolution's multiply-adds: 2 x (output elements of the forward)
  // x (weight elements per output channel), for the forward and both of
  // its backward ops (conv2d_backward_data(dy, w), _weight(x, dy) -> w).
  auto conv = [&](Type y, Type w) -> double {
    auto wt = dyn_cast<RankedTensorType>(w);
    if (!wt || !wt.hasStaticShape() || wt.getRank() < 2 ||
        wt.getDimSize(0) <= 0)
      return out;
    return 2.0 * numel(y) * double(wt.getNumElements() / wt.getDimSize(0));
  };
  // Attention's products: q kt and p v, and in the backward the scores
  // recomputed, dp = grad v^T, dv, dq and dkt; q [..., S, D], v [..., T, Dv].
  if (cls == CostClass::Attention || cls == CostClass::AttentionBackward) {
    auto q = dyn_cast<RankedTensorType>(op->getOperand(0).getType());
    auto v = dyn_cast<RankedTensorType>(op->getOperand(2).getType());
    if (!q || !v || !q.hasStaticShape() || !v.hasStaticShape() ||
        q.getRank() < 2 || v.getRank() < 2)
      return out;
    const double d = double(q.getShape().back()),
                 dv = double(v.getShape().back()),
                 t = double(v.getShape()[v.getRank() - 2]);
    const double rows = d > 0 ? double(q.getNumElements()) / d : 0.0;
    const double perScore = cls == CostClass::Attention ? d + dv : 3 * d + 2 * dv;
    return 2.0 * rows * t * perScore;
  }
  if (op->getNumOperands() >= 2 && op->getNumResults() == 1) {
    switch (cls) {
    case CostClass::Convolution:
      return conv(op->getResult(0).getType(), op->getOperand(1).getType());
    case CostClass::ConvolutionBackwardData:
      return conv(op->getOperand(0).getType(), op->getOperand(1).getType());
    case CostClass::ConvolutionBackwardWeight:
      return conv(op->getOperand(1).getType(), op->getResult(0).getType());
    case CostClass::PerElement:
    case CostClass::Contraction:
    case CostClass::Attention:
    case CostClass::AttentionBackward:
      break;
    }
  }
  return out;
}

} // namespace mlir::tessel

#endif // TESSEL_DIALECT_OPCOST_H
