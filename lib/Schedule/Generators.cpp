//===- Generators.cpp - Built-in pipeline schedules -----------------------===//

#include "tessel/Schedule/Generators.h"

#include "llvm/ADT/Twine.h"

#include <algorithm>

using namespace llvm;

namespace tessel::pipeline {

/// A looped schedule `name` of `opts`: `fill(s, r)` appends rank r's compute
/// actions (room for `perRank` actions is reserved), then every rank steps
/// the optimizer of each stage it holds, after everything else it does.
/// `oneChunk`: the schedule takes one chunk per rank and refuses more.
template <typename FillFn>
static Expected<Schedule> generateLooped(StringRef name,
                                         const ScheduleOptions &opts,
                                         bool oneChunk, size_t perRank,
                                         FillFn fill) {
  if (oneChunk && opts.chunks != 1)
    return makeScheduleError(name + " takes one chunk per rank, got " +
                             Twine(opts.chunks) +
                             " (interleaved-1f1b runs several)");
  Expected<Schedule> s = Schedule::createLooped(name.str(), opts.ranks,
                                                opts.chunks, opts.microbatches);
  if (!s)
    return s.takeError();
  for (int32_t r = 0; r < s->getNumRanks(); ++r)
    s->getMutableActions(r).reserve(perRank);
  for (int32_t r = 0; r < s->getNumRanks(); ++r)
    fill(*s, r);
  for (int32_t r = 0; r < s->getNumRanks(); ++r)
    for (int32_t st : s->getStagesOf(r))
      s->append(r, Action::optimizerStep(st));
  return s;
}

Expected<Schedule> generateGPipe(const ScheduleOptions &opts) {
  const int32_t m = opts.microbatches;
  return generateLooped(
      "gpipe", opts, /*oneChunk=*/true, 2 * size_t(m) + 1,
      [&](Schedule &s, int32_t r) {
        for (int32_t mb = 0; mb < m; ++mb)
          s.append(r, Action::forward(r, mb));
        for (int32_t mb = 0; mb < m; ++mb)
          s.append(r, Action::fullBackward(r, mb));
      });
}

Expected<Schedule> generateOneFOneB(const ScheduleOptions &opts) {
  const int32_t p = opts.ranks, m = opts.microbatches;
  return generateLooped(
      "1f1b", opts, /*oneChunk=*/true, 2 * size_t(m) + 1,
      [&](Schedule &s, int32_t r) {
        int32_t warmup = std::min(p - 1 - r, m);
        for (int32_t mb = 0; mb < warmup; ++mb)
          s.append(r, Action::forward(r, mb));
        for (int32_t i = 0; i < m - warmup; ++i) {
          s.append(r, Action::forward(r, warmup + i));
          s.append(r, Action::fullBackward(r, i));
        }
        for (int32_t mb = m - warmup; mb < m; ++mb)
          s.append(r, Action::fullBackward(r, mb));
      });
}

Expected<Schedule> generateInterleavedOneFOneB(const ScheduleOptions &opts) {
  if (opts.ranks >= 1 && opts.microbatches >= 1 &&
      opts.microbatches % opts.ranks != 0)
    return makeScheduleError(
        "interleaved-1f1b needs the number of microbatches to be a multiple "
        "of the number of stages: " +
        Twine(opts.microbatches) + " is not a multiple of " +
        Twine(opts.ranks));
  const int64_t p = opts.ranks, v = opts.chunks, m = opts.microbatches;
  const int64_t total = v * m;
  const int64_t group = p * v;
  // Megatron's numbering of a rank's virtual microbatches: k runs over groups
  // of p microbatches, chunk by chunk; backwards visit the chunks in reverse.
  auto microbatchOf = [&](int64_t k) {
    return static_cast<int32_t>((k / group) * p + k % p);
  };
  auto chunkOf = [&](int64_t k, bool forward) {
    int64_t c = (k % group) / p;
    return forward ? c : v - 1 - c;
  };
  return generateLooped(
      "interleaved-1f1b", opts, /*oneChunk=*/false,
      2 * size_t(total) + size_t(v), [&](Schedule &s, int32_t r) {
        int64_t warmup = v == 1 ? p - 1 - r : (p - r - 1) * 2 + (v - 1) * p;
        warmup = std::min(warmup, total);
        auto fwd = [&](int64_t k) {
          s.append(r, Action::forward(
                          static_cast<int32_t>(chunkOf(k, true) * p + r),
                          microbatchOf(k)));
        };
        auto bwd = [&](int64_t k) {
          s.append(r, Action::fullBackward(
                          static_cast<int32_t>(chunkOf(k, false) * p + r),
                          microbatchOf(k)));
        };
        for (int64_t k = 0; k < warmup; ++k)
          fwd(k);
        for (int64_t i = 0; i < total - warmup; ++i) {
          fwd(warmup + i);
          bwd(i);
        }
        for (int64_t k = total - warmup; k < total; ++k)
          bwd(k);
      });
}

Expected<Schedule> generateZeroBubbleH1(const ScheduleOptions &opts) {
  const int32_t p = opts.ranks, m = opts.microbatches;
  return generateLooped(
      "zb-h1", opts, /*oneChunk=*/true, 3 * size_t(m) + 1,
      [&](Schedule &s, int32_t r) {
        // Slot x holds F_x, B_{x-(p-1-r)} and W_{x-(p-1)}: the B lag gives
        // 1F1B's warm-up (and its peak memory); W waits p-1 slots so that the
        // W passes fill the drain where 1F1B idles.
        for (int32_t x = 0; x < m + p - 1; ++x) {
          if (x < m)
            s.append(r, Action::forward(r, x));
          int32_t b = x - (p - 1 - r);
          if (b >= 0 && b < m)
            s.append(r, Action::backwardInput(r, b));
          int32_t w = x - (p - 1);
          if (w >= 0 && w < m)
            s.append(r, Action::backwardWeight(r, w));
        }
      });
}

} // namespace tessel::pipeline
