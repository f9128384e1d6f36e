//===- GradientReductions.h - the data-parallel gradient all_reduces -*- C++ -*-===//
//
// What -tessel-bucket-gradients buckets and -tessel-grad-handler replaces:
// in a partitioned training step, the all_reduces whose results feed only
// the update (no other collective, not the function's results).
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_LIB_TRANSFORMS_GRADIENTREDUCTIONS_H
#define TESSEL_LIB_TRANSFORMS_GRADIENTREDUCTIONS_H

#include "dialects/tessel/TesselOps.h"

#include "llvm/ADT/SmallVector.h"

namespace mlir::tessel {

/// A collective or point-to-point op.
bool isCollectiveOp(Operation *op);

/// The gradient all_reduces of `block` in program order: used, not yet in a
/// bucket, and reaching neither another collective nor the block's return.
SmallVector<AllReduceOp> findGradientReductions(Block &block);

} // namespace mlir::tessel

#endif // TESSEL_LIB_TRANSFORMS_GRADIENTREDUCTIONS_H
