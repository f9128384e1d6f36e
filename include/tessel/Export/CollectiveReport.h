//===- CollectiveReport.h - what a partitioned program sends ----*- C++ -*-===//

#ifndef TESSEL_EXPORT_COLLECTIVEREPORT_H
#define TESSEL_EXPORT_COLLECTIVEREPORT_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/raw_ostream.h"

namespace mlir::tessel {

/// Prints, per rank of the module's mesh, each collective of the partitioned
/// program with its axes and the bytes the rank contributes (the local
/// operand), then per-rank and overall totals.
void printCollectiveReport(ModuleOp module, llvm::raw_ostream &os);

} // namespace mlir::tessel

#endif // TESSEL_EXPORT_COLLECTIVEREPORT_H
