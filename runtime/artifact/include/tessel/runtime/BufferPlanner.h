//===- BufferPlanner.h - Liveness-based arena planning ----------*- C++ -*-===//
//
// Assigns arena offsets to buffers so that buffers whose live ranges overlap
// never share bytes. Pure C++; the compiler's exporter calls it too.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_RUNTIME_BUFFERPLANNER_H
#define TESSEL_RUNTIME_BUFFERPLANNER_H

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

/// Places the buffers in O(n log n): greedy by size (the largest first, each
/// at the lowest offset clear of the placed buffers it meets in time, as
/// TFLite's arena planner) under a work budget, and a sweep over live ranges
/// with a best-fit free list; the smaller arena wins (BufferPlanner.cpp).
/// Offsets are aligned to `alignment`, a power of 2 (64 otherwise).
BufferPlan planBuffers(const std::vector<BufferLifetime> &buffers,
                       uint64_t alignment = 64);

/// The planner before issue 18, kept as the reference of tests and
/// bench/plan_bench: greedy by size checking every placed buffer, O(n^2).
BufferPlan planBuffersAllPairs(const std::vector<BufferLifetime> &buffers,
                               uint64_t alignment = 64);

/// True when no two buffers with intersecting live ranges overlap in memory.
bool isValidPlan(const std::vector<BufferLifetime> &buffers,
                 const BufferPlan &plan);

} // namespace tessel::runtime

#endif // TESSEL_RUNTIME_BUFFERPLANNER_H
