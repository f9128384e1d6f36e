//===- BufferLifetimes.h - when each buffer of a step lives ------*- C++ -*-===//
//
// One set of rules for when each buffer of a step's arena is born and when
// it dies, over tessel IR in program order, as the exporter writes the step.
// Both of the compiler's memory models use them: --report's memory plan
// (lib/Export/MemoryReport.cpp) and Gemini's device budget
// (lib/Transforms/GeminiPlacement.cpp), the latter through a hook for the
// chunk fetches it plans before they are in the IR. The buffers are then
// laid out by TesselBufferPlanner, the arena planner the exporter uses.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_LIFETIMES_BUFFERLIFETIMES_H
#define TESSEL_LIFETIMES_BUFFERLIFETIMES_H

#include "tessel/runtime/BufferPlanner.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Block.h"
#include "llvm/ADT/SmallVector.h"

#include <cstdint>
#include <vector>

namespace mlir::tessel {

/// The bytes of a ranked tensor type (at least one per element); 0 for
/// other types.
int64_t tensorBytes(Type type);

/// The op computing `fn`'s output named "loss", or null.
Operation *lossOf(func::FuncOp fn);

/// What a caller adds to the step beyond the ops in its IR. Gemini's
/// placement plans chunk fetches before it inserts them: each fetch writes
/// copies of a chunk's parameters right before an instruction, and the
/// parameters' readers then read the copies.
class LifetimeHook {
public:
  virtual ~LifetimeHook();

  /// A buffer written in the slot right before an instruction: its bytes
  /// and the instruction of its last reader (-1: none reads it, it dies
  /// there).
  struct Inserted {
    int64_t bytes = 0;
    int64_t lastReader = -1;
  };
  /// The buffers written right before instruction `at`, in order.
  virtual void insertedBefore(int64_t at, SmallVectorImpl<Inserted> &out) const;
  /// Whether `user`, a user of the weight `weight` in the IR, still reads
  /// the weight itself in the step as it will be.
  virtual bool readsWeight(Operation *weight, Operation *user) const;
  /// The instructions right before which inserted ops read `weight`.
  virtual void weightReadsBefore(Operation *weight,
                                 SmallVectorImpl<int64_t> &at) const;
};

/// The arena's buffers of one step (a block in program order).
///
/// Times: instruction i is at time 2i + 1 and the slot right before it (a
/// hook's inserted buffers) at 2i; the step's inputs live from -1, its
/// outputs to end() = 2n + 2, n the number of instructions.
///
/// The rules: every value an op computes gets a buffer, live from that op
/// to its last reader; weights and constants are not the arena's; the
/// step's inputs live the whole step and its outputs to its end; a
/// shard_constraint's result is its input's buffer; a gradient bucket's
/// all_reduce writes in place on its operand when it is the operand's only
/// reader; an asynchronous all_reduce (a bucket) or reduce_scatter reads
/// its operand, and writes its result, until its wait (right before the
/// first reader of its result); an assign's value lives until the weight
/// it is copied into has been read for the last time (a prefetched
/// all_gather reads its weight until its wait, before the gather's first
/// reader).
struct StepLifetimes {
  std::vector<::tessel::runtime::BufferLifetime> buffers;
  int64_t instructions = 0;

  static int64_t timeOf(int64_t instruction) { return 2 * instruction + 1; }
  /// The instruction at time `t` (the slot before an instruction counts as
  /// it); -1 for the step's start.
  static int64_t instructionAt(int64_t t) { return t < 0 ? -1 : t / 2; }
  int64_t end() const { return 2 * instructions + 2; }
};

/// The buffers of the step `block`, by the rules above, with what `hook`
/// adds; in order: the block's arguments, then per instruction the hook's
/// buffers before it and the instruction's results.
StepLifetimes stepLifetimes(Block &block, const LifetimeHook *hook = nullptr);

/// The arena that the exporter's buffer planner lays out for `buffers`
/// (64-byte aligned).
int64_t planArena(const std::vector<::tessel::runtime::BufferLifetime> &buffers);

} // namespace mlir::tessel

#endif // TESSEL_LIFETIMES_BUFFERLIFETIMES_H
