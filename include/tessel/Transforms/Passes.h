//===- Passes.h - tessel transformation passes ------------------*- C++ -*-===//

#ifndef TESSEL_TRANSFORMS_PASSES_H
#define TESSEL_TRANSFORMS_PASSES_H

#include "dialects/tessel/TesselOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::tessel {

#define GEN_PASS_DECL
#include "tessel/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "tessel/Transforms/Passes.h.inc"

/// Dynamic loss scaling (-tessel-autodiff and -tessel-optimizer with
/// loss-scale): the state holding log2 of the scale over its initial value,
/// and the count of steps since the last overflow or growth.
constexpr llvm::StringLiteral kLossScaleLog2Name = "grad_scaler.log2_scale";
constexpr llvm::StringLiteral kLossScaleTrackerName =
    "grad_scaler.growth_tracker";

} // namespace mlir::tessel

#endif // TESSEL_TRANSFORMS_PASSES_H
