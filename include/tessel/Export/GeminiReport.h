//===- GeminiReport.h - Gemini's chunks and their placement -----*- C++ -*-===//

#ifndef TESSEL_EXPORT_GEMINIREPORT_H
#define TESSEL_EXPORT_GEMINIREPORT_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/raw_ostream.h"

namespace mlir::tessel {

/// Prints, for a step that -tessel-gemini-placement placed (tesselc
/// --plugin gemini --report): each chunk (bytes, parameters), where it is
/// in each phase of the step (resident, or fetched and evicted at which
/// instructions), and the planned device peak against the limit.
void printGeminiReport(ModuleOp module, llvm::raw_ostream &os);

} // namespace mlir::tessel

#endif // TESSEL_EXPORT_GEMINIREPORT_H
