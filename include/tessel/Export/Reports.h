//===- Reports.h - the sections of tesselc --report -------------*- C++ -*-===//
//
// Each prints one section of the report of a compiled module (tesselc
// --report), in the order tesselc prints them. A section
// that does not apply to the module prints nothing.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_EXPORT_REPORTS_H
#define TESSEL_EXPORT_REPORTS_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/raw_ostream.h"

namespace mlir::tessel {

/// What -tessel-classify-parameters decided (the module attribute
/// tessel.parameter_classes): the trainable tensors (count, elements, bytes)
/// and the frozen ones, each with the reason it was classed so. Nothing when
/// the module was not classified (not a training step).
void printParameterReport(ModuleOp module, llvm::raw_ostream &os);

/// Per rank of the module's mesh, each collective of the partitioned
/// program with its axes and the bytes the rank contributes (the local
/// operand), then per-rank and overall totals.
void printCollectiveReport(ModuleOp module, llvm::raw_ostream &os);

/// planMemory's figures (MemoryReport.h).
void printMemoryReport(ModuleOp module, llvm::raw_ostream &os);

/// For a module lowered by -tessel-pipeline-lower: per stage, its ops (one
/// microbatch's forward, and all its instructions of a step), parameters,
/// FLOPs of a step and their estimated time (OpCost.h), and the tensors it
/// sends per microbatch with their bytes; per pp rank, the planned peak
/// memory (MemoryReport.h). docs/pipeline.md. Nothing for a module that is
/// not pipelined.
void printPipelineReport(ModuleOp module, llvm::raw_ostream &os);

/// For --plugin `plugin` (ZeRO stage `stage`, 0: DDP): per rank, the
/// planned bytes of the model states beside the ZeRO paper's analytic
/// figures; one table, or one per pp rank.
void printZeroReport(ModuleOp module, StringRef plugin, int stage,
                     llvm::raw_ostream &os);

/// For a step that -tessel-gemini-placement placed (tesselc --plugin gemini
/// --report): each chunk (bytes, parameters), where it is in each phase of
/// the step (resident, or fetched and evicted at which instructions), and
/// the planned device peak against the limit.
void printGeminiReport(ModuleOp module, llvm::raw_ostream &os);

} // namespace mlir::tessel

#endif // TESSEL_EXPORT_REPORTS_H
