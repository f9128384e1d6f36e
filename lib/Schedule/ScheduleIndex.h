//===- ScheduleIndex.h - Flat numbering of a schedule's actions -*- C++ -*-===//
//
// Private to TesselSchedule. Every action gets a global id, offsets[rank] +
// position, and ActionIndex finds the id of (kind, stage, microbatch) in O(1),
// so the verifier, the communication pass and the simulator stay linear in
// the number of actions.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_LIB_SCHEDULE_SCHEDULEINDEX_H
#define TESSEL_LIB_SCHEDULE_SCHEDULEINDEX_H

#include "tessel/Schedule/Schedule.h"

#include <algorithm>
#include <vector>

namespace tessel::pipeline::detail {

inline constexpr int64_t kNone = -1;

struct FlatLayout {
  /// offsets[r] is the id of rank r's first action; offsets.back() the total.
  std::vector<size_t> offsets;
  /// The actions in id order.
  std::vector<Action> actions;

  explicit FlatLayout(const Schedule &s) {
    offsets.reserve(s.getNumRanks() + 1);
    actions.reserve(s.size());
    for (int32_t r = 0; r < s.getNumRanks(); ++r) {
      offsets.push_back(actions.size());
      llvm::ArrayRef<Action> list = s.getActions(r);
      actions.insert(actions.end(), list.begin(), list.end());
    }
    offsets.push_back(actions.size());
  }
  size_t size() const { return actions.size(); }
  int32_t numRanks() const { return int32_t(offsets.size()) - 1; }
  size_t rankSize(int32_t r) const { return offsets[r + 1] - offsets[r]; }
  int32_t rankOf(size_t id) const {
    auto it = std::upper_bound(offsets.begin(), offsets.end(), id);
    return int32_t(it - offsets.begin()) - 1;
  }
};

/// The id of every (kind, stage, microbatch), kNone where absent.
class ActionIndex {
public:
  ActionIndex(int32_t numStages, int32_t numMicrobatches)
      : numStages(numStages), numMicrobatches(numMicrobatches) {
    size_t n = size_t(numStages) * numMicrobatches;
    for (auto &v : perKind)
      v.assign(n, kNone);
    steps.assign(numStages, kNone);
  }

  /// Indexes an already verified schedule (later duplicates win).
  static ActionIndex build(const Schedule &s, const FlatLayout &layout) {
    ActionIndex index(s.getNumStages(), s.getNumMicrobatches());
    for (size_t id = 0; id < layout.size(); ++id)
      index.slot(layout.actions[id]) = int64_t(id);
    return index;
  }

  int64_t &slot(const Action &a) {
    if (a.kind == ActionKind::OptimizerStep)
      return steps[a.stage];
    return perKind[unsigned(a.kind)]
                  [size_t(a.stage) * numMicrobatches + a.microbatch];
  }
  int64_t get(ActionKind k, int32_t stage, int32_t mb) const {
    if (k == ActionKind::OptimizerStep)
      return steps[stage];
    return perKind[unsigned(k)][size_t(stage) * numMicrobatches + mb];
  }
  int64_t get(const Action &a) const {
    return get(a.kind, a.stage, a.microbatch);
  }
  /// The action that produces stage `stage`'s input gradient: B or BW.
  int64_t inputGradient(int32_t stage, int32_t mb) const {
    int64_t b = get(ActionKind::BackwardInput, stage, mb);
    return b != kNone ? b : get(ActionKind::FullBackward, stage, mb);
  }

private:
  int32_t numStages, numMicrobatches;
  std::vector<int64_t> perKind[kNumActionKinds - 1];
  std::vector<int64_t> steps;
};

} // namespace tessel::pipeline::detail

#endif // TESSEL_LIB_SCHEDULE_SCHEDULEINDEX_H
