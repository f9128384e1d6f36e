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

} // namespace mlir::tessel

#endif // TESSEL_TRANSFORMS_PASSES_H
