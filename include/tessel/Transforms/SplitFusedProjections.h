//===- SplitFusedProjections.h - split fused weights at a split -*- C++ -*-===//

#ifndef TESSEL_TRANSFORMS_SPLITFUSEDPROJECTIONS_H
#define TESSEL_TRANSFORMS_SPLITFUSEDPROJECTIONS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mlir::tessel {

/// Moves every `tessel.split` whose input dim is split over mesh axes up to
/// the weights it comes from, when the chain from the weights to the split
/// maps that dim to one pass factor in every op's rule. GPT-2's fused
/// attention projection `split(matmul(x, W[in, 3d]) + b[3d])` becomes three
/// projections over the weights `W[:, 0:d]`, `W[:, d:2d]`, `W[:, 2d:3d]`
/// (each column-split like `W`, so each rank keeps its heads of q, k and v
/// together, as Megatron does) instead of a split that would need the whole
/// fused output on every rank.
LogicalResult splitFusedProjections(func::FuncOp fn);

} // namespace mlir::tessel

#endif // TESSEL_TRANSFORMS_SPLITFUSEDPROJECTIONS_H
