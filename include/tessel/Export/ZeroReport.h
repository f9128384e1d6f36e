//===- ZeroReport.h - a plugin's memory beside ZeRO's figures ---*- C++ -*-===//

#ifndef TESSEL_EXPORT_ZEROREPORT_H
#define TESSEL_EXPORT_ZEROREPORT_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>

namespace mlir::tessel {

/// One rank's planned model states of a partitioned training step, by the
/// ZeRO paper's kinds, and the paper's analytic figures for them.
struct ZeroMemory {
  /// Psi: the trained parameters' elements (whole, not per rank).
  int64_t parameters = 0;
  /// The parameters' elements that one data-parallel group shares: Psi
  /// divided by the other axes (tp) that split them; the paper's Psi then.
  int64_t partitionParameters = 0;
  /// N: the size of the data-parallel axis.
  int64_t dp = 1;
  /// Per rank, planned: the trained parameters, the gradients the updates
  /// read (whole where all-reduced, a block where reduce-scattered), the
  /// optimizer state, the forward's activations kept for the backward.
  int64_t paramBytes = 0, gradBytes = 0, stateBytes = 0, activationBytes = 0;
  /// A pipeline rank's arena (its microbatches in flight and the backward's
  /// values, interleaved by the schedule), printed instead of the
  /// activations; -1: not a pipeline rank.
  int64_t pipelineArenaBytes = -1;
  /// The analytic figures for the stage: params 4 Psi (/ N from stage 3),
  /// grads 4 Psi (/ N from stage 2), state K Psi (/ N from stage 1), with
  /// 4 = the parameters' element bytes and K = the whole optimizer state's
  /// bytes per parameter (8: Adam's two fp32 moments).
  double analyticParams = 0, analyticGrads = 0, analyticState = 0;
};

/// The figures of `module` (partitioned) under ZeRO stage `stage` (0: DDP)
/// over the mesh axis `axis`.
ZeroMemory planZeroMemory(ModuleOp module, int stage, StringRef axis = "dp");

/// The figures of one rank's program `fn` (a pipeline rank's: its stages'
/// model states); activationBytes left 0.
ZeroMemory planZeroMemory(func::FuncOp fn, int stage, StringRef axis = "dp");
/// Prints `z` for --plugin `plugin`; `where` follows the plugin's name in
/// the heading (", pp rank 1 (stage 1)").
void printZeroFigures(const ZeroMemory &z, StringRef plugin, int stage,
                      StringRef where, llvm::raw_ostream &os);
/// Prints them for --plugin `plugin`: one table, or one per pp rank.
void printZeroReport(ModuleOp module, StringRef plugin, int stage,
                     llvm::raw_ostream &os);

} // namespace mlir::tessel

#endif // TESSEL_EXPORT_ZEROREPORT_H
