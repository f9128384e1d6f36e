//===- StateBlocks.h - Blocks of a global tensor, copied across meshes -*- C++ -*-===//
//
// A state (a parameter, its optimizer state) is held by each rank as a block
// of the whole tensor: its global shape, the block's offset in each dim and
// the block's shape (Buffer.global_shape). Replicated ranks hold equal
// blocks. A checkpoint saved on one mesh loads on another by copying, into
// each block the new mesh wants, the parts of the saved blocks it overlaps.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_TOOLING_STATEBLOCKS_H
#define TESSEL_TOOLING_STATEBLOCKS_H

#include "tessel/runtime/DType.h"
#include "tessel/runtime/Status.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tessel::tooling {

/// A block of a global tensor: its bytes (row-major, `shape`), where it
/// starts in the tensor, the part [lo, hi) of the tensor it may hold values
/// of (its padding, or the neighbouring piece of a fused parameter, lies
/// outside), and where it came from (for messages).
struct StateBlock {
  const void *data = nullptr;
  runtime::Shape shape;
  std::vector<int64_t> offset;
  std::vector<int64_t> lo, hi;
  std::string where; // "ck/rank1.safetensors"
  int rank = -1;     // the rank file it came from
  bool hasLayout = true; // false: that rank's own state, not a block of one
  /// lo = 0, hi = `global`: a block of a tensor of that shape.
  void within(const runtime::Shape &global) {
    lo.assign(global.size(), 0);
    hi.assign(global.begin(), global.end());
  }
};

/// Fills the values `dst` holds (its block, within its [lo, hi)) at
/// `dstData` (elements of `elemSize` bytes) from `sources`, blocks of the
/// same tensor: replicas (equal blocks) once, a sharding's blocks being
/// disjoint. Every such element must come from some source, else an error
/// naming the tensor `name` and how much is missing.
runtime::Status fillBlock(const std::string &name, size_t elemSize,
                          const StateBlock &dst, void *dstData,
                          const std::vector<StateBlock> &sources);

/// A state's block in the coordinates of the tensor it is part of: a state
/// named "NAME[dim D: A..B]" (a piece of fused parameter NAME,
/// tessel.source_slice) is the block at A of dim D of NAME, holding [A, A +
/// its global size) there; any other state is a block of itself. Returns the
/// tensor's name; sets `b`'s offset, lo and hi from the state's global
/// shape and offset.
std::string blockOfState(const std::string &state, const runtime::Shape &global,
                         const std::vector<int64_t> &offset, StateBlock &b);

} // namespace tessel::tooling

#endif // TESSEL_TOOLING_STATEBLOCKS_H
