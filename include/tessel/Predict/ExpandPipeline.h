//===- ExpandPipeline.h - a pipeline of M microbatches from 3 -----*- C++ -*-===//
//
// --plan=auto predicts pipelines of up to 4 x pp microbatches. Compiling
// each with every microbatch copied costs time in proportion to the count
// (a 7 B Llama's pp=4 with 16 microbatches: 7 s, against 0.3 s without a
// pipeline). The microbatches of a step are alike but for three roles:
// the first (its gradients start the sums), those in the middle (they add
// to the sums) and the last (after it, the once-per-step reductions). So
// the step is compiled with the first three copies of the M-way split
// (-tessel-microbatch copies=3), lowered on the schedule for three, and
// expanded here: each pp rank's function is rebuilt on the schedule for M,
// every action cloned from the copy of its microbatch's role, the
// accumulations chained from one microbatch to the next, and each message
// given its tag in the M schedule. The result is the program
// PipelineLower writes for M microbatches, up to the order of ops within an
// action; --predict plays it as it plays any program.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_PREDICT_EXPANDPIPELINE_H
#define TESSEL_PREDICT_EXPANDPIPELINE_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/Support/Error.h"

namespace mlir::tessel {

/// The microbatch copies a step is compiled with for expandPipeline.
inline constexpr int64_t kExpandedPipelineCopies = 3;

/// A copy of `module`, a pipelined training step lowered with the first
/// three of its microbatches, whose pp rank functions run `microbatches`
/// microbatches of the same schedule. An error where the module is not
/// such a program (no pp ranks, a schedule that is not registered, a value
/// read across microbatches other than an accumulation).
llvm::Expected<OwningOpRef<ModuleOp>> expandPipeline(ModuleOp module,
                                                     int64_t microbatches);

} // namespace mlir::tessel

#endif // TESSEL_PREDICT_EXPANDPIPELINE_H
