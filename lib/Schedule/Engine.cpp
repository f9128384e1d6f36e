//===- Engine.cpp - Event-driven execution of per-rank lists --------------===//

#include "Engine.h"

#include <algorithm>

namespace tessel::pipeline::detail {

/// Runs every rank's list as far as it goes, with a work list that starts
/// with every rank (rank 0 first): `advance(r, pc, work)` moves pc[r] on
/// (never past layout.offsets[r + 1]) until rank r blocks, and pushes onto
/// `work` the ranks its progress unblocks. Returns how many actions of its
/// list each rank reached.
template <typename AdvanceFn>
static std::vector<size_t> runWorkList(const FlatLayout &layout,
                                       AdvanceFn advance) {
  const int32_t numRanks = layout.numRanks();
  std::vector<size_t> pc(numRanks);
  std::vector<int32_t> work(numRanks);
  for (int32_t r = 0; r < numRanks; ++r) {
    pc[r] = layout.offsets[r];
    work[r] = numRanks - 1 - r;
  }
  while (!work.empty()) {
    int32_t r = work.back();
    work.pop_back();
    advance(r, pc, work);
  }
  std::vector<size_t> reached(numRanks);
  for (int32_t r = 0; r < numRanks; ++r)
    reached[r] = pc[r] - layout.offsets[r];
  return reached;
}

TimedRun runTimed(const FlatLayout &layout, const std::vector<int64_t> &dep,
                  const std::vector<double> &delay,
                  const std::vector<double> &cost) {
  const int32_t numRanks = layout.numRanks();
  const size_t n = layout.size();
  TimedRun run;
  run.start.assign(n, 0.0);
  run.end.assign(n, 0.0);
  std::vector<uint8_t> done(n, 0);
  std::vector<double> clock(numRanks, 0.0);
  // Ranks waiting on an action form an intrusive list: waitHead[action] is the
  // first waiting rank, waitNext[rank] the next. A rank waits on one action.
  std::vector<int32_t> waitHead(n, -1), waitNext(numRanks, -1);
  run.reached = runWorkList(layout, [&](int32_t r, std::vector<size_t> &pc,
                                        std::vector<int32_t> &work) {
    const size_t last = layout.offsets[r + 1];
    while (pc[r] < last) {
      size_t id = pc[r];
      double ready = clock[r];
      if (int64_t d = dep[id]; d != kNone) {
        if (!done[d]) {
          waitNext[r] = waitHead[d];
          waitHead[d] = r;
          break;
        }
        ready = std::max(ready, run.end[d] + delay[id]);
      }
      run.start[id] = ready;
      run.end[id] = ready + cost[id];
      clock[r] = run.end[id];
      done[id] = 1;
      ++pc[r];
      for (int32_t w = waitHead[id]; w != -1;) {
        int32_t next = waitNext[w];
        work.push_back(w);
        w = next;
      }
      waitHead[id] = -1;
    }
  });
  run.complete = true;
  for (int32_t r = 0; r < numRanks; ++r)
    if (layout.offsets[r] + run.reached[r] != layout.offsets[r + 1])
      run.complete = false;
  return run;
}

std::vector<size_t> runRendezvous(const FlatLayout &layout,
                                  const std::vector<int64_t> &partner) {
  return runWorkList(layout, [&](int32_t r, std::vector<size_t> &pc,
                                 std::vector<int32_t> &work) {
    const size_t last = layout.offsets[r + 1];
    while (pc[r] < last) {
      int64_t other = partner[pc[r]];
      if (other == kNone) {
        ++pc[r];
        continue;
      }
      // The pair completes only when the other rank stands on it too; if it
      // does not yet, it will find this rank waiting when it arrives.
      int32_t q = layout.rankOf(size_t(other));
      if (pc[q] != size_t(other))
        break;
      ++pc[r];
      ++pc[q];
      work.push_back(q);
    }
  });
}

void buildImplicitDependencies(const Schedule &s, const FlatLayout &layout,
                               const ActionIndex &index, double transfer,
                               std::vector<int64_t> &dep,
                               std::vector<double> &delay) {
  const size_t n = layout.size();
  const int32_t numStages = s.getNumStages();
  dep.assign(n, kNone);
  delay.assign(n, 0.0);
  for (size_t id = 0; id < n; ++id) {
    const Action &a = layout.actions[id];
    int64_t d = kNone;
    int32_t from = -1;
    if (a.kind == ActionKind::Forward && a.stage > 0) {
      from = a.stage - 1;
      d = index.get(ActionKind::Forward, from, a.microbatch);
    } else if (producesInputGradient(a.kind) && a.stage + 1 < numStages) {
      from = a.stage + 1;
      d = index.inputGradient(from, a.microbatch);
    }
    if (d == kNone)
      continue;
    dep[id] = d;
    if (s.getRank(from) != s.getRank(a.stage))
      delay[id] = transfer;
  }
}

} // namespace tessel::pipeline::detail
