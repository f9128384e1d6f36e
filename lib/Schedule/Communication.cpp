//===- Communication.cpp - Sends and receives for a compute order ---------===//

#include "tessel/Schedule/Communication.h"
#include "tessel/Schedule/Verifier.h"

#include "Engine.h"
#include "ScheduleIndex.h"

#include <algorithm>

using namespace llvm;

namespace tessel::pipeline {

using detail::ActionIndex;
using detail::FlatLayout;
using detail::kNone;

namespace {
struct Message {
  double time;
  int64_t tag;
  Action action;
};
} // namespace

static double unitCost(ActionKind k) {
  return k == ActionKind::FullBackward ? 2.0 : 1.0;
}

Error insertCommunication(Schedule &s) {
  if (s.hasCommunication())
    return makeScheduleError("schedule '" + s.getName() +
                             "' already lists its sends and receives");
  FlatLayout layout(s);
  ActionIndex index = ActionIndex::build(s, layout);
  std::vector<int64_t> dep;
  std::vector<double> delay;
  detail::buildImplicitDependencies(s, layout, index, 0.0, dep, delay);
  std::vector<double> cost(layout.size());
  for (size_t id = 0; id < layout.size(); ++id)
    cost[id] = unitCost(layout.actions[id].kind);
  detail::TimedRun run = detail::runTimed(layout, dep, delay, cost);
  if (!run.complete)
    return makeScheduleError("schedule '" + s.getName() +
                             "' deadlocks; verify it before adding sends and "
                             "receives");

  const int32_t numRanks = s.getNumRanks();
  std::vector<std::vector<Message>> messages(numRanks);
  for (size_t id = 0; id < layout.size(); ++id) {
    int64_t d = dep[id];
    if (d == kNone)
      continue;
    const Action &cons = layout.actions[id];
    const Action &prod = layout.actions[size_t(d)];
    int32_t pr = s.getRank(prod.stage), cr = s.getRank(cons.stage);
    if (pr == cr)
      continue;
    bool forward = cons.kind == ActionKind::Forward;
    Action send{forward ? ActionKind::SendForward : ActionKind::SendBackward,
                prod.stage, prod.microbatch};
    Action recv{forward ? ActionKind::RecvForward : ActionKind::RecvBackward,
                cons.stage, cons.microbatch};
    double t = run.end[size_t(d)];
    int64_t tag = s.getMessageTag(send);
    messages[pr].push_back({t, tag, send});
    messages[cr].push_back({t, tag, recv});
  }

  for (int32_t r = 0; r < numRanks; ++r) {
    std::vector<Message> &msgs = messages[r];
    if (msgs.empty())
      continue;
    std::sort(msgs.begin(), msgs.end(), [](const Message &a, const Message &b) {
      return a.time != b.time ? a.time < b.time : a.tag < b.tag;
    });
    std::vector<Action> merged;
    merged.reserve(layout.rankSize(r) + msgs.size());
    size_t next = 0;
    for (size_t id = layout.offsets[r]; id < layout.offsets[r + 1]; ++id) {
      while (next < msgs.size() && msgs[next].time <= run.start[id])
        merged.push_back(msgs[next++].action);
      merged.push_back(layout.actions[id]);
    }
    for (; next < msgs.size(); ++next)
      merged.push_back(msgs[next].action);
    s.getMutableActions(r) = std::move(merged);
  }
  return Error::success();
}

Expected<Schedule> finalizeSchedule(Schedule s) {
  if (Error e = verify(s))
    return std::move(e);
  if (s.hasCommunication())
    return std::move(s);
  if (Error e = insertCommunication(s))
    return std::move(e);
  if (Error e = verify(s))
    return std::move(e);
  return std::move(s);
}

} // namespace tessel::pipeline
