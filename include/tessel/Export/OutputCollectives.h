//===- OutputCollectives.h - what makes a program's outputs whole -*- C++ -*-===//
//
// A partitioned function's outputs leave every rank whole: the exporter
// (emitOutput) appends an all_reduce per partial axis and an all_gather per
// sharded dim of each output's global spec. These are not ops of the IR;
// the collective report and --predict read them from here.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_EXPORT_OUTPUTCOLLECTIVES_H
#define TESSEL_EXPORT_OUTPUTCOLLECTIVES_H

#include "dialects/tessel/TesselOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mlir::tessel {

struct OutputCollective {
  /// All-reduce (a partial axis, `reduction` its kind) or all-gather (a
  /// sharded dim, over `axes` in order).
  bool allReduce = false;
  ReductionKind reduction = ReductionKind::Sum;
  std::vector<std::string> axes;
  /// The output's name ("output<i>" without one).
  std::string output;
  /// The bytes of the value it moves on each rank, as the report counts
  /// them: the output's local shape, grown by the dims gathered before it.
  int64_t bytes = 0;
};

/// The collectives that make `fn`'s outputs whole, in the exporter's order
/// (per output: its partial axes, then its sharded dims).
std::vector<OutputCollective> getOutputCollectives(func::FuncOp fn);

} // namespace mlir::tessel

#endif // TESSEL_EXPORT_OUTPUTCOLLECTIVES_H
