//===- BufferPlanner.h - Liveness-based arena planning ----------*- C++ -*-===//
//
// Assigns arena offsets to buffers so that buffers whose live ranges overlap
// never share bytes. Pure C++; the compiler's exporter calls it too.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_RUNTIME_BUFFERPLANNER_H
#define TESSEL_RUNTIME_BUFFERPLANNER_H

#include <cstddef>
#include <cstdint>
#include <vector>

namespace tessel::runtime {

/// One buffer to place: its size in bytes and the inclusive range of
/// instruction indices during which it holds a live value (first definition
/// or program start, to last use or program end).
struct BufferLifetime {
  uint64_t size = 0;
  int64_t firstUse = 0;
  int64_t lastUse = 0;
};

struct BufferPlan {
  std::vector<uint64_t> offsets; // one per BufferLifetime, aligned
  uint64_t arenaSize = 0;        // bytes, a multiple of the alignment
};

/// The arenaSize of planBuffers' answer when the buffers' aligned sizes
/// sum past 2^64 bytes: no plan (every offset 0); writers refuse it.
constexpr uint64_t kNoArena = UINT64_MAX;

/// Places the buffers in O(n log n): greedy by size (the largest first, each
/// at the lowest offset clear of the placed buffers it meets in time, as
/// TFLite's arena planner) under a work budget, and a sweep over live ranges
/// with a best-fit free list; the smaller arena wins (BufferPlanner.cpp).
/// Offsets are aligned to `alignment`, a power of 2 (64 otherwise). When the
/// aligned sizes sum past 2^64 the answer is no plan (arenaSize kNoArena).
BufferPlan planBuffers(const std::vector<BufferLifetime> &buffers,
                       uint64_t alignment = 64);

/// The planner before issue 18, kept as the reference of tests and
/// bench/plan_bench: greedy by size checking every placed buffer, O(n^2).
BufferPlan planBuffersAllPairs(const std::vector<BufferLifetime> &buffers,
                               uint64_t alignment = 64);

/// The element offset in its operand (row-major, of shape `shape`) of a
/// slice's result (of shape `out`, from `starts` by `steps`) when the result
/// is one contiguous run of the operand's elements: every dim after some
/// dim k taken whole, every dim before k one index wide, steps of 1 where a
/// dim is more than one index wide. -1 otherwise, and for an empty result.
/// The buffer planner places such a result inside its operand's bytes (a
/// view), and the runtime then skips the copy.
inline int64_t contiguousSliceOffset(const std::vector<int64_t> &shape,
                                     const std::vector<int64_t> &starts,
                                     const std::vector<int64_t> &steps,
                                     const std::vector<int64_t> &out) {
  const std::size_t rank = shape.size();
  if (out.size() != rank || starts.size() != rank || steps.size() != rank)
    return -1;
  // From the last dim back: whole dims, then at most one cut dim, then dims
  // one index wide.
  std::size_t d = rank;
  while (d > 0 && out[d - 1] == shape[d - 1] && starts[d - 1] == 0 &&
         (steps[d - 1] == 1 || out[d - 1] <= 1))
    --d;
  if (d > 0) {
    --d; // the cut dim
    if (steps[d] != 1 && out[d] > 1)
      return -1;
    for (std::size_t e = 0; e < d; ++e)
      if (out[e] != 1)
        return -1;
  }
  int64_t offset = 0, stride = 1, n = 1;
  for (std::size_t e = rank; e-- > 0;) {
    if (out[e] <= 0 || shape[e] <= 0 || starts[e] < 0 ||
        starts[e] + out[e] > shape[e])
      return -1;
    offset += starts[e] * stride;
    stride *= shape[e];
    n *= out[e];
  }
  return n > 0 ? offset : -1;
}

/// True when no two buffers with intersecting live ranges overlap in memory.
bool isValidPlan(const std::vector<BufferLifetime> &buffers,
                 const BufferPlan &plan);

} // namespace tessel::runtime

#endif // TESSEL_RUNTIME_BUFFERPLANNER_H
