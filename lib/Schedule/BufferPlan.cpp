//===- BufferPlan.cpp - Microbatch buffers of a schedule ------------------===//

#include "tessel/Schedule/BufferPlan.h"

#include <functional>
#include <queue>

namespace tessel::pipeline {

BufferPlan planBuffers(const Schedule &s) {
  BufferPlan plan;
  plan.numMicrobatches = s.getNumMicrobatches();
  plan.slot.assign(size_t(s.getNumStages()) * s.getNumMicrobatches(), -1);
  plan.slotsPerRank.assign(s.getNumRanks(), 0);
  for (int32_t r = 0; r < s.getNumRanks(); ++r) {
    std::priority_queue<int32_t, std::vector<int32_t>, std::greater<int32_t>>
        free;
    int32_t used = 0;
    for (const Action &a : s.getActions(r)) {
      bool opens =
          a.kind == ActionKind::RecvForward || a.kind == ActionKind::Forward;
      bool closes = a.kind == ActionKind::BackwardWeight ||
                    a.kind == ActionKind::FullBackward;
      if (!opens && !closes)
        continue;
      int32_t &slot =
          plan.slot[size_t(a.stage) * plan.numMicrobatches + a.microbatch];
      if (opens && slot == -1) {
        if (free.empty()) {
          slot = used++;
        } else {
          slot = free.top();
          free.pop();
        }
      } else if (closes && slot != -1) {
        free.push(slot);
      }
    }
    plan.slotsPerRank[r] = used;
  }
  return plan;
}

} // namespace tessel::pipeline
