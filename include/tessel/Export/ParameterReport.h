//===- ParameterReport.h - which weights train, for --report ----*- C++ -*-===//
//
// Prints what -tessel-classify-parameters decided (the module attribute
// tessel.parameter_classes): the trainable tensors (count, elements, bytes)
// and the frozen ones, each with the reason it was classed so.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_EXPORT_PARAMETERREPORT_H
#define TESSEL_EXPORT_PARAMETERREPORT_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/raw_ostream.h"

namespace mlir::tessel {

/// Nothing when the module was not classified (not a training step).
void printParameterReport(ModuleOp module, llvm::raw_ostream &os);

} // namespace mlir::tessel

#endif // TESSEL_EXPORT_PARAMETERREPORT_H
