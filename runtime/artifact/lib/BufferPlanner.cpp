//===- BufferPlanner.cpp - Liveness-based arena planning ------------------===//
//
// Two planners, each O(n log n) in the number of buffers; the smaller arena
// wins.
// - The sweep: buffers in order of first use; before each instruction index
//   the buffers whose last use has passed give their ranges back to a free
//   list, then the buffers that start there (largest first) each take the
//   best fitting free range (the smallest that fits, lowest offset among
//   equals) or the top of the arena. Free ranges are kept by offset (to
//   merge neighbours) and by (size, offset) (to find the best fit).
// - Greedy by size, the plan this planner always made: the largest buffers
//   first, each at the lowest offset clear of the placed buffers that it
//   meets in time, found with a segment tree over live ranges instead of
//   checking every placed buffer. Its cost grows with how many live ranges
//   each buffer meets, so it runs under a work budget of O(n log n) and
//   gives way to the sweep when it would exceed it.
//
//===----------------------------------------------------------------------===//
#include "tessel/runtime/BufferPlanner.h"

#include "tessel/support/Checked.h"

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <utility>

namespace tessel::runtime {

namespace {

bool livesOverlap(const BufferLifetime &a, const BufferLifetime &b) {
  return a.firstUse <= b.lastUse && b.firstUse <= a.lastUse;
}
uint64_t alignUp(uint64_t v, uint64_t a) { return (v + a - 1) & ~(a - 1); }

/// Free byte ranges below the arena's top.
class FreeList {
public:
  /// The offset of the best fitting free range for `size` bytes, taken out
  /// of the list; or the top of the arena, which grows (from a free range
  /// that ends at the top, when there is one).
  uint64_t take(uint64_t size) {
    auto it = bySize.lower_bound({size, 0});
    if (it != bySize.end()) {
      auto [len, off] = *it;
      erase(off, len);
      if (len > size)
        insert(off + size, len - size);
      return off;
    }
    uint64_t off = top;
    if (!byOffset.empty()) {
      auto last = std::prev(byOffset.end());
      if (last->first + last->second == top) {
        off = last->first;
        erase(last->first, last->second);
      }
    }
    top = std::max(top, off + size);
    return off;
  }

  /// Gives [off, off + size) back, merged with its free neighbours.
  void give(uint64_t off, uint64_t size) {
    auto next = byOffset.lower_bound(off);
    if (next != byOffset.end() && next->first == off + size) {
      size += next->second;
      erase(next->first, next->second);
    }
    next = byOffset.lower_bound(off);
    if (next != byOffset.begin()) {
      auto prev = std::prev(next);
      if (prev->first + prev->second == off) {
        off = prev->first;
        size += prev->second;
        erase(prev->first, prev->second);
      }
    }
    insert(off, size);
  }

  uint64_t arenaTop() const { return top; }

private:
  void insert(uint64_t off, uint64_t size) {
    byOffset.emplace(off, size);
    bySize.emplace(size, off);
  }
  void erase(uint64_t off, uint64_t size) {
    byOffset.erase(off);
    bySize.erase({size, off});
  }

  std::map<uint64_t, uint64_t> byOffset;           // offset -> size
  std::set<std::pair<uint64_t, uint64_t>> bySize;  // (size, offset)
  uint64_t top = 0;
};


/// The buffers as both planners see them: aligned sizes, and a last use no
/// earlier than the first.
struct Lifetimes {
  std::vector<uint64_t> size;
  std::vector<int64_t> first, last;
  size_t count() const { return size.size(); }
};

/// The sweep: buffers by first use (largest first among equals), each in
/// the best fitting free range or at the top. O(n log n), always.
BufferPlan planBySweep(const Lifetimes &b) {
  const size_t n = b.count();
  BufferPlan plan;
  plan.offsets.assign(n, 0);
  std::vector<size_t> starts(n), ends;
  std::iota(starts.begin(), starts.end(), 0);
  std::stable_sort(starts.begin(), starts.end(), [&](size_t x, size_t y) {
    if (b.first[x] != b.first[y])
      return b.first[x] < b.first[y];
    return b.size[x] > b.size[y];
  });
  ends = starts;
  std::stable_sort(ends.begin(), ends.end(),
                   [&](size_t x, size_t y) { return b.last[x] < b.last[y]; });
  FreeList free;
  size_t e = 0;
  for (size_t s = 0; s < n;) {
    const int64_t t = b.first[starts[s]];
    // Ranges whose last use comes before t are free again at t.
    for (; e < n && b.last[ends[e]] < t; ++e)
      free.give(plan.offsets[ends[e]], b.size[ends[e]]);
    for (; s < n && b.first[starts[s]] == t; ++s)
      plan.offsets[starts[s]] = free.take(b.size[starts[s]]);
  }
  plan.arenaSize = free.arenaTop();
  return plan;
}

/// The placed buffers' live ranges, to find those that intersect a range:
/// a segment tree over the (compressed) instruction indices, each range
/// stored in the O(log n) nodes that tile it; a query visits the nodes that
/// intersect it and skips empty subtrees, so it costs O((k + 1) log n) for
/// k ranges found.
class LiveIndex {
public:
  explicit LiveIndex(std::vector<int64_t> times) : t(std::move(times)) {
    std::sort(t.begin(), t.end());
    t.erase(std::unique(t.begin(), t.end()), t.end());
    at.resize(4 * std::max<size_t>(t.size(), 1));
    below.assign(at.size(), 0);
  }
  void insert(uint32_t id, int64_t first, int64_t last) {
    insert(1, 0, t.size() - 1, rank(first), rank(last), id);
  }
  /// Calls visit(id) for every inserted range that intersects [first, last]
  /// (an id may come more than once); returns the nodes visited.
  template <typename F> uint64_t query(int64_t first, int64_t last, F visit) {
    return query(1, 0, t.size() - 1, rank(first), rank(last), visit);
  }

private:
  size_t rank(int64_t v) const {
    return std::lower_bound(t.begin(), t.end(), v) - t.begin();
  }
  uint32_t insert(size_t node, size_t lo, size_t hi, size_t f, size_t l,
                  uint32_t id) {
    if (l < lo || hi < f)
      return 0;
    uint32_t stored = 1;
    if (f <= lo && hi <= l) {
      at[node].push_back(id);
    } else {
      size_t mid = lo + (hi - lo) / 2;
      stored = insert(2 * node, lo, mid, f, l, id) +
               insert(2 * node + 1, mid + 1, hi, f, l, id);
    }
    below[node] += stored;
    return stored;
  }
  template <typename F>
  uint64_t query(size_t node, size_t lo, size_t hi, size_t f, size_t l,
                 F &visit) {
    if (l < lo || hi < f || below[node] == 0)
      return 0;
    for (uint32_t id : at[node])
      visit(id);
    uint64_t work = 1 + at[node].size();
    if (lo != hi && below[node] > at[node].size()) {
      size_t mid = lo + (hi - lo) / 2;
      work += query(2 * node, lo, mid, f, l, visit) +
              query(2 * node + 1, mid + 1, hi, f, l, visit);
    }
    return work;
  }

  std::vector<int64_t> t;
  std::vector<std::vector<uint32_t>> at; // ranges that tile the node
  std::vector<uint64_t> below;           // ranges stored in the subtree
};

/// Greedy by size (as TFLite's arena planner): the largest buffers first,
/// each at the lowest offset clear of the placed buffers it meets in time.
/// Packs tighter than the sweep on most programs, but its cost grows with
/// the number of live ranges each buffer meets: it gives up (nullopt) once
/// it has done `budget` units of work.
std::optional<BufferPlan> planBySize(const Lifetimes &b, uint64_t budget) {
  const size_t n = b.count();
  BufferPlan plan;
  plan.offsets.assign(n, 0);
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) {
    if (b.size[x] != b.size[y])
      return b.size[x] > b.size[y];
    return b.first[x] < b.first[y];
  });
  std::vector<int64_t> times(b.first);
  times.insert(times.end(), b.last.begin(), b.last.end());
  LiveIndex placed(std::move(times));
  std::vector<size_t> seen(n, SIZE_MAX);
  std::vector<std::pair<uint64_t, uint64_t>> busy; // [offset, end)
  uint64_t work = 0;
  for (size_t k = 0; k < n; ++k) {
    const size_t idx = order[k];
    busy.clear();
    work += placed.query(b.first[idx], b.last[idx], [&](uint32_t p) {
      if (seen[p] != idx) {
        seen[p] = idx;
        busy.emplace_back(plan.offsets[p], plan.offsets[p] + b.size[p]);
      }
    });
    work += busy.size();
    if (work > budget)
      return std::nullopt;
    std::sort(busy.begin(), busy.end());
    uint64_t offset = 0;
    for (auto [lo, hi] : busy) {
      if (lo >= offset + b.size[idx])
        break; // the gap before this busy range fits
      offset = std::max(offset, hi);
    }
    plan.offsets[idx] = offset;
    plan.arenaSize = std::max(plan.arenaSize, offset + b.size[idx]);
    placed.insert(uint32_t(idx), b.first[idx], b.last[idx]);
  }
  return plan;
}

} // namespace

BufferPlan planBuffers(const std::vector<BufferLifetime> &buffers,
                       uint64_t alignment) {
  if (alignment == 0 || (alignment & (alignment - 1)))
    alignment = 64;
  const size_t n = buffers.size();
  Lifetimes b;
  // No arena the planners make exceeds the sum of the aligned sizes: when
  // that sum fits in 64 bits, no offset they compute can wrap. Sizes come
  // from the model; a sum that does not fit gets no plan.
  uint64_t total = 0;
  for (const BufferLifetime &l : buffers) {
    std::optional<uint64_t> padded =
        checkedAdd<uint64_t>(std::max<uint64_t>(l.size, 1), alignment - 1);
    std::optional<uint64_t> sum =
        padded ? checkedAdd(total, *padded & ~(alignment - 1)) : std::nullopt;
    if (!sum) {
      BufferPlan none;
      none.offsets.assign(n, 0);
      none.arenaSize = kNoArena;
      return none;
    }
    total = *sum;
    b.size.push_back(*padded & ~(alignment - 1));
    b.first.push_back(l.firstUse);
    b.last.push_back(std::max(l.lastUse, l.firstUse));
  }
  BufferPlan sweep = planBySweep(b);
  // Greedy by size costs about the number of pairs of buffers that meet in
  // time: counted first (pairs minus those apart, O(n log n)), it runs when
  // they are at most 32 per buffer and level of the tree (a chain has 1 per
  // buffer, a GPT-2 training step 8 per level), and a work budget of 64 per
  // buffer and level stops it in any case.
  uint64_t levels = 1;
  while ((size_t(1) << levels) < n + 2)
    ++levels;
  std::vector<int64_t> lasts(b.last);
  std::sort(lasts.begin(), lasts.end());
  uint64_t apart = 0;
  for (int64_t f : b.first)
    apart += std::lower_bound(lasts.begin(), lasts.end(), f) - lasts.begin();
  const uint64_t meeting = uint64_t(n) * (n ? n - 1 : 0) / 2 - apart;
  std::optional<BufferPlan> bySize;
  if (meeting <= 32 * (n + 64) * levels)
    bySize = planBySize(b, 64 * (n + 64) * levels);
  return bySize && bySize->arenaSize <= sweep.arenaSize ? std::move(*bySize)
                                                        : std::move(sweep);
}

BufferPlan planBuffersAllPairs(const std::vector<BufferLifetime> &buffers,
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
