//===- StateBlocks.cpp - Blocks of a global tensor, copied across meshes --===//
#include "tessel/tooling/StateBlocks.h"

#include "tessel/support/Checked.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

using namespace tessel::runtime;

namespace tessel::tooling {

namespace {

/// The box [lo, hi) of values both `a` and `b` hold; false when empty.
bool intersect(const StateBlock &a, const StateBlock &b,
               std::vector<int64_t> &lo, std::vector<int64_t> &hi) {
  const size_t rank = a.shape.size();
  lo.assign(rank, 0);
  hi.assign(rank, 0);
  for (size_t d = 0; d < rank; ++d) {
    lo[d] = std::max({a.offset[d], b.offset[d], a.lo[d], b.lo[d]});
    hi[d] = std::min({a.offset[d] + a.shape[d], b.offset[d] + b.shape[d],
                      a.hi[d], b.hi[d]});
    if (lo[d] >= hi[d])
      return false;
  }
  return true;
}

/// Copies the box [lo, hi) (global coordinates) from `src` (at `so`, shape
/// `ss`) into `dst` (at `dOff`, shape `ds`), one contiguous run of the last
/// dim at a time.
void copyBox(const std::vector<int64_t> &lo, const std::vector<int64_t> &hi,
             size_t es, const char *src, const std::vector<int64_t> &so,
             const Shape &ss, char *dst, const std::vector<int64_t> &dOff,
             const Shape &ds) {
  const size_t rank = lo.size();
  if (rank == 0) {
    std::memcpy(dst, src, es);
    return;
  }
  std::vector<int64_t> idx(lo);
  const size_t run = (hi[rank - 1] - lo[rank - 1]) * es;
  for (;;) {
    int64_t s = 0, d = 0;
    for (size_t k = 0; k < rank; ++k) {
      s = s * ss[k] + (idx[k] - so[k]);
      d = d * ds[k] + (idx[k] - dOff[k]);
    }
    std::memcpy(dst + d * es, src + s * es, run);
    // Next index of the outer dims.
    size_t k = rank - 1;
    for (;;) {
      if (k == 0)
        return;
      --k;
      if (++idx[k] < hi[k])
        break;
      idx[k] = lo[k];
    }
  }
}

int64_t volume(const std::vector<int64_t> &lo, const std::vector<int64_t> &hi) {
  // Shapes from the artifact and the checkpoint (dims up to 2^48 each):
  // checked, saturated at INT64_MAX, which no block's bytes can match.
  std::vector<int64_t> extent;
  for (size_t d = 0; d < lo.size(); ++d)
    extent.push_back(hi[d] - lo[d]);
  return ::tessel::checkedProduct(extent).value_or(INT64_MAX);
}

} // namespace

Status fillBlock(const std::string &name, size_t es, const StateBlock &dst,
                 void *dstData, const std::vector<StateBlock> &sources) {
  // What `dst` must receive: the values it holds.
  std::vector<int64_t> lo, hi;
  const int64_t want = intersect(dst, dst, lo, hi) ? volume(lo, hi) : 0;
  // Distinct source blocks (replicas hold equal ones); a sharding's blocks
  // are disjoint, so their overlaps with `dst` add up to what it receives.
  std::vector<const StateBlock *> distinct;
  for (const StateBlock &b : sources) {
    if (b.shape.size() != dst.shape.size())
      return Status::error("'" + name + "' is " +
                           std::to_string(b.shape.size()) + "-d in " + b.where +
                           ", " + std::to_string(dst.shape.size()) +
                           "-d here");
    bool seen = false;
    for (const StateBlock *c : distinct)
      seen |= c->offset == b.offset && c->shape == b.shape && c->lo == b.lo &&
              c->hi == b.hi;
    if (!seen)
      distinct.push_back(&b);
  }
  int64_t got = 0;
  for (const StateBlock *b : distinct) {
    if (!intersect(dst, *b, lo, hi))
      continue;
    copyBox(lo, hi, es, static_cast<const char *>(b->data), b->offset,
            b->shape, static_cast<char *>(dstData),
            dst.offset, dst.shape);
    got += volume(lo, hi);
  }
  if (got != want)
    return Status::error(
        "'" + name + "': the checkpoint's blocks (" +
        std::to_string(distinct.size()) + " distinct) cover " +
        std::to_string(got) + " of the " + std::to_string(want) +
        " elements of this rank's block " + shapeToString(dst.shape) + " at " +
        shapeToString(dst.offset) + (got > want ? " (they overlap)" : ""));
  return Status::ok();
}

std::string blockOfState(const std::string &state, const Shape &global,
                         const std::vector<int64_t> &offset, StateBlock &b) {
  b.offset = offset;
  b.within(global);
  // "NAME[dim D: A..B]"
  const size_t open = state.rfind("[dim ");
  if (open == std::string::npos || state.back() != ']')
    return state;
  long long d = -1, a = -1, e = -1;
  char tail = 0;
  if (std::sscanf(state.c_str() + open, "[dim %lld: %lld..%lld%c", &d, &a, &e,
                  &tail) != 4 ||
      tail != ']' || d < 0 || d >= static_cast<long long>(global.size()) ||
      a < 0 || e - a != global[d])
    return state;
  b.offset[d] += a;
  b.lo[d] = a;
  b.hi[d] = a + global[d];
  return state.substr(0, open);
}

} // namespace tessel::tooling
