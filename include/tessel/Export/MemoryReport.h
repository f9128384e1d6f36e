//===- MemoryReport.h - what a training step keeps in memory ----*- C++ -*-===//

#ifndef TESSEL_EXPORT_MEMORYREPORT_H
#define TESSEL_EXPORT_MEMORYREPORT_H

#include "tessel/Lifetimes/BufferLifetimes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

#include <cstdint>

namespace mlir::tessel {

/// The op computing the training step's loss (the entry function's output
/// named "loss"), or null: ops after it are the backward and the update.
Operation *lossOp(ModuleOp module);

/// The planned memory of one rank's program (the partitioned one, or the
/// whole program on one device), in bytes.
struct MemoryPlan {
  int64_t params = 0;         // weights (parameters, read-only weights)
  int64_t optimizerState = 0; // zero-initialised weights (exp_avg, ...)
  int64_t constants = 0;
  /// The arena the buffer planner lays out for every computed value of the
  /// step (forward, backward, update), as the exporter will.
  int64_t arena = 0;
  /// Whether `arena` is the planner's layout; without it (planMemory's
  /// planArena false) it is the live bytes at the peak (activations +
  /// grads), which no layout goes below: peak() is then a lower bound.
  bool arenaPlanned = true;
  /// At the instruction where the most computed bytes are live: those the
  /// forward computed (and the inputs) and those the backward and the
  /// update computed (gradients, their temporaries).
  int64_t activations = 0;
  int64_t grads = 0;
  /// Training steps: the forward's values still live when the backward
  /// starts (inputs included): what activation checkpointing cuts.
  int64_t keptForBackward = 0;
  int64_t peakInstruction = -1;
  std::string peakOp;

  int64_t peak() const { return params + optimizerState + constants + arena; }
};

/// Plans the memory of the module's entry function (one rank's program):
/// live ranges in program order, as the exporter's buffer planner sees them.
MemoryPlan planMemory(ModuleOp module);
/// The plan of one function (a pipeline rank's), `lossDef` the op that
/// computes its loss (null: none on this rank). Without `planArena` the
/// buffers are not laid out (MemoryPlan::arenaPlanned): the live bytes are
/// a sweep, the layout is the planner's search.
MemoryPlan planMemory(func::FuncOp fn, Operation *lossDef,
                      bool planArena = true);

} // namespace mlir::tessel

#endif // TESSEL_EXPORT_MEMORYREPORT_H
