//===- PipelineAttrs.h - the attributes of pipelined training ---*- C++ -*-===//
//
// Part of the dialect (its verifier checks them; passes and the exporter
// read them): what -tessel-stage-split, -tessel-microbatch,
// -tessel-autodiff and -tessel-optimizer write on ops,
// -tessel-pipeline-lower reads and the exporter turns into
// Instruction.action (docs/pipeline.md):
//   tessel.stage      i64: the pipeline stage of a forward op (and of the
//                     backward and update ops derived from it)
//   tessel.microbatch i64: the microbatch of an op the microbatch pass copied
//   tessel.phase      string: "F", "BW", "W" (accumulation of a weight's
//                     gradient), "STEP"; after lowering also "B", "SEND",
//                     "RECV"
// and on the per-rank functions:
//   tessel.pp_rank    i64: the coordinate along the `pp` mesh axis whose
//                     program the function is
//   tessel.pp_schedule {name, chunks, microbatches, tag_width}: the schedule
//                     the function follows and the width of its messages'
//                     tags (a message's tag is the schedule's message tag
//                     times tag_width plus the value's index in it), from
//                     which a prediction expands it to more microbatches
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_DIALECT_PIPELINEATTRS_H
#define TESSEL_DIALECT_PIPELINEATTRS_H

#include "mlir/IR/Operation.h"
#include "llvm/ADT/StringRef.h"

namespace mlir::tessel {

inline constexpr llvm::StringLiteral kStageAttr = "tessel.stage";
inline constexpr llvm::StringLiteral kMicrobatchAttr = "tessel.microbatch";
inline constexpr llvm::StringLiteral kPhaseAttr = "tessel.phase";
inline constexpr llvm::StringLiteral kPpRankAttr = "tessel.pp_rank";
inline constexpr llvm::StringLiteral kPpScheduleAttr = "tessel.pp_schedule";
/// The mesh axis of pipeline parallelism; never in a sharding spec.
inline constexpr llvm::StringLiteral kPipelineAxis = "pp";

/// An op's integer pipeline attribute, or `dflt`.
inline int64_t getPipelineInt(Operation *op, llvm::StringRef name,
                              int64_t dflt = -1) {
  if (auto a = op->getAttrOfType<IntegerAttr>(name))
    return a.getInt();
  return dflt;
}

} // namespace mlir::tessel

#endif // TESSEL_DIALECT_PIPELINEATTRS_H
