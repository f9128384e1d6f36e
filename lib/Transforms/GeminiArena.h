//===- GeminiArena.h - the arena of a step with Gemini's fetches -*- C++
//-*-===//
//
// -tessel-gemini-placement's model of device memory: the arena the exporter
// will plan for the step with a plan's chunk fetches inserted, computed on
// the step before they are (lib/Export/MemoryReport.cpp's live ranges, the
// exporter's buffer planner).
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_LIB_TRANSFORMS_GEMINIARENA_H
#define TESSEL_LIB_TRANSFORMS_GEMINIARENA_H

#include "tessel/runtime/BufferPlanner.h"

#include "mlir/IR/Block.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"

#include <map>
#include <vector>

namespace mlir::tessel::gemini {

/// The bytes of a ranked tensor type (0 for other types).
int64_t bytesOf(Type t);

/// What a plan adds to the step: its fetches, each before an instruction,
/// with the bytes of each copy and the copy's last reader (-1: none); and,
/// for each parameter of a host chunk, the instructions its fetches precede
/// (in the placed step the weight's readers are those fetches, its update
/// and its assign: the others read the copies).
struct Moves {
  std::map<int64_t, SmallVector<std::pair<int64_t, int64_t>>> before;
  DenseMap<Operation *, SmallVector<int64_t>> weightFetches;
};

/// The arena's buffers of the step `block` (`pos`: each op's instruction,
/// `n` of them) with `moves` inserted: every computed value from its writer
/// to its last reader, as the exporter plans them over the placed step.
/// Instruction i of `block` is at time 2i + 1, a fetch before it at 2i.
std::vector<::tessel::runtime::BufferLifetime>
arenaBuffers(Block &block, const DenseMap<Operation *, int64_t> &pos, int64_t n,
             const Moves &moves);

/// The arena the exporter's buffer planner lays out for `buffers`.
int64_t arenaOf(const std::vector<::tessel::runtime::BufferLifetime> &buffers);

} // namespace mlir::tessel::gemini

#endif // TESSEL_LIB_TRANSFORMS_GEMINIARENA_H
