//===- PipelineReport.h - tesselc --report's pipeline table -----*- C++ -*-===//
//
// For a module lowered by -tessel-pipeline-lower: per stage, its ops (one
// microbatch's forward, and all its instructions of a step), parameters,
// FLOPs of a step and their estimated time (OpCost.h), and the tensors it
// sends per microbatch with their bytes; per pp rank, the planned peak
// memory (MemoryReport.h). docs/pipeline.md.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_EXPORT_PIPELINEREPORT_H
#define TESSEL_EXPORT_PIPELINEREPORT_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/raw_ostream.h"

namespace mlir::tessel {

/// Prints nothing for a module that is not pipelined.
void printPipelineReport(ModuleOp module, llvm::raw_ostream &os);

} // namespace mlir::tessel

#endif // TESSEL_EXPORT_PIPELINEREPORT_H
