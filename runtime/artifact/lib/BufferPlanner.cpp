//===- BufferPlanner.cpp - Liveness-based arena planning ------------------===//
#include "tessel/runtime/BufferPlanner.h"

#include <algorithm>
#include <numeric>

namespace tessel::runtime {

namespace {
bool livesOverlap(const BufferLifetime &a, const BufferLifetime &b) {
  return a.firstUse <= b.lastUse && b.firstUse <= a.lastUse;
}
uint64_t alignUp(uint64_t v, uint64_t a) { return (v + a - 1) & ~(a - 1); }
} // namespace

BufferPlan planBuffers(const std::vector<BufferLifetime> &buffers,
                       uint64_t alignment) {
  if (alignment == 0 || (alignment & (alignment - 1)))
    alignment = 64;
  BufferPlan plan;
  plan.offsets.assign(buffers.size(), 0);
  std::vector<size_t> order(buffers.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (buffers[a].size != buffers[b].size)
      return buffers[a].size > buffers[b].size;
    return buffers[a].firstUse < buffers[b].firstUse;
  });

  std::vector<size_t> placed;
  std::vector<std::pair<uint64_t, uint64_t>> busy; // [offset, end)
  for (size_t idx : order) {
    const BufferLifetime &b = buffers[idx];
    uint64_t size = alignUp(std::max<uint64_t>(b.size, 1), alignment);
    busy.clear();
    for (size_t p : placed)
      if (livesOverlap(b, buffers[p]))
        busy.emplace_back(plan.offsets[p],
                          plan.offsets[p] + alignUp(std::max<uint64_t>(buffers[p].size, 1), alignment));
    std::sort(busy.begin(), busy.end());
    uint64_t offset = 0;
    for (auto [lo, hi] : busy) {
      if (lo >= offset + size)
        break; // the gap before this busy range fits
      offset = std::max(offset, hi);
    }
    plan.offsets[idx] = offset;
    plan.arenaSize = std::max(plan.arenaSize, offset + size);
    placed.push_back(idx);
  }
  return plan;
}

bool isValidPlan(const std::vector<BufferLifetime> &buffers,
                 const BufferPlan &plan) {
  if (plan.offsets.size() != buffers.size())
    return false;
  for (size_t i = 0; i < buffers.size(); ++i) {
    if (plan.offsets[i] + buffers[i].size > plan.arenaSize)
      return false;
    for (size_t j = i + 1; j < buffers.size(); ++j) {
      if (!livesOverlap(buffers[i], buffers[j]) || !buffers[i].size ||
          !buffers[j].size)
        continue;
      uint64_t a0 = plan.offsets[i], a1 = a0 + buffers[i].size;
      uint64_t b0 = plan.offsets[j], b1 = b0 + buffers[j].size;
      if (a0 < b1 && b0 < a1)
        return false;
    }
  }
  return true;
}

} // namespace tessel::runtime
