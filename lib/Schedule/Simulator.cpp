//===- Simulator.cpp - Timing of a pipeline schedule ----------------------===//

#include "tessel/Schedule/Simulator.h"

#include "Engine.h"
#include "ScheduleIndex.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/Twine.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

using namespace llvm;

namespace tessel::pipeline {

using detail::ActionIndex;
using detail::FlatLayout;
using detail::kNone;

static std::string formatNumber(double v) {
  char buffer[32];
  snprintf(buffer, sizeof(buffer), "%g", v);
  return buffer;
}

double ScheduleCosts::getCost(ActionKind k) const {
  switch (k) {
  case ActionKind::Forward:
    return forward;
  case ActionKind::BackwardInput:
    return backwardInput;
  case ActionKind::BackwardWeight:
    return backwardWeight;
  case ActionKind::FullBackward:
    return backwardInput + backwardWeight;
  case ActionKind::OptimizerStep:
    return optimizerStep;
  default:
    return 0.0;
  }
}

double ScheduleCosts::getCost(ActionKind k, int32_t stage) const {
  if (stageForward.empty() || stage < 0 ||
      static_cast<size_t>(stage) >= stageForward.size())
    return getCost(k);
  ScheduleCosts one = *this;
  one.forward = stageForward[stage];
  one.backwardInput = stageBackwardInput[stage];
  one.backwardWeight = stageBackwardWeight[stage];
  return one.getCost(k);
}

double ScheduleCosts::getTransferTime() const {
  double t = p2pLatency;
  if (p2pBandwidth > 0)
    t += messageBytes / p2pBandwidth;
  return t;
}

Error ScheduleCosts::validate() const {
  const std::pair<const char *, double> fields[] = {
      {"forward cost", forward},
      {"input-gradient backward cost", backwardInput},
      {"weight-gradient backward cost", backwardWeight},
      {"optimizer step cost", optimizerStep},
      {"p2p latency", p2pLatency},
      {"p2p bandwidth", p2pBandwidth},
      {"message size", messageBytes}};
  for (const auto &[name, value] : fields)
    if (!std::isfinite(value) || value < 0)
      return makeScheduleError(Twine(name) +
                               " must be a non-negative number, got " +
                               formatNumber(value));
  if (stageBackwardInput.size() != stageForward.size() ||
      stageBackwardWeight.size() != stageForward.size())
    return makeScheduleError("per-stage costs need F, B and W of every stage");
  for (const std::vector<double> *v :
       {&stageForward, &stageBackwardInput, &stageBackwardWeight})
    for (double c : *v)
      if (!std::isfinite(c) || c < 0)
        return makeScheduleError(
            "a per-stage cost must be a non-negative number, got " +
            formatNumber(c));
  return Error::success();
}

Expected<ScheduleCosts> ScheduleCosts::parse(StringRef text) {
  if (text.contains(';')) {
    SmallVector<StringRef, 8> stages;
    text.split(stages, ';');
    ScheduleCosts c;
    for (size_t i = 0; i < stages.size(); ++i) {
      Expected<ScheduleCosts> one = parse(stages[i]);
      if (!one)
        return makeScheduleError("stage " + Twine(i) + ": " +
                                 toString(one.takeError()));
      if (i == 0) {
        c.forward = one->forward;
        c.backwardInput = one->backwardInput;
        c.backwardWeight = one->backwardWeight;
      }
      c.stageForward.push_back(one->forward);
      c.stageBackwardInput.push_back(one->backwardInput);
      c.stageBackwardWeight.push_back(one->backwardWeight);
    }
    return c;
  }
  SmallVector<StringRef, 4> parts;
  text.split(parts, ',');
  if (parts.size() != 3)
    return makeScheduleError("costs must be three numbers F,B,W, got '" + text +
                             "'");
  double values[3];
  const char *names[3] = {"F", "B", "W"};
  for (int i = 0; i < 3; ++i) {
    StringRef p = parts[i].trim();
    if (p.getAsDouble(values[i]) || !std::isfinite(values[i]) || values[i] < 0)
      return makeScheduleError(Twine("cost of ") + names[i] +
                               " must be a non-negative number, got '" + p +
                               "'");
  }
  ScheduleCosts c;
  c.forward = values[0];
  c.backwardInput = values[1];
  c.backwardWeight = values[2];
  return c;
}

Expected<SimulationResult> simulate(const Schedule &s,
                                    const ScheduleCosts &costs) {
  if (Error e = costs.validate())
    return std::move(e);
  if (!costs.stageForward.empty() &&
      costs.stageForward.size() != static_cast<size_t>(s.getNumStages()))
    return makeScheduleError(
        "per-stage costs name " + Twine(costs.stageForward.size()) +
        " stages, but schedule '" + s.getName() + "' has " +
        Twine(s.getNumStages()));
  FlatLayout layout(s);
  ActionIndex index = ActionIndex::build(s, layout);
  const size_t n = layout.size();
  const double transfer = costs.getTransferTime();
  std::vector<int64_t> dep;
  std::vector<double> delay;
  if (s.hasCommunication()) {
    dep.assign(n, kNone);
    delay.assign(n, 0.0);
    for (size_t id = 0; id < n; ++id) {
      const Action &a = layout.actions[id];
      if (!isRecv(a.kind))
        continue;
      dep[id] = index.get(Schedule::getMatchingAction(a));
      delay[id] = transfer;
    }
  } else {
    detail::buildImplicitDependencies(s, layout, index, transfer, dep, delay);
  }
  std::vector<double> cost(n);
  for (size_t id = 0; id < n; ++id)
    cost[id] = costs.getCost(layout.actions[id].kind, layout.actions[id].stage);
  detail::TimedRun run = detail::runTimed(layout, dep, delay, cost);
  if (!run.complete) {
    for (int32_t r = 0; r < s.getNumRanks(); ++r)
      if (run.reached[r] < layout.rankSize(r))
        return makeScheduleError(
            "schedule '" + s.getName() + "' deadlocks: rank " + Twine(r) +
            " stops at position " + Twine(run.reached[r]) + " (" +
            formatAction(layout.actions[layout.offsets[r] + run.reached[r]]) +
            ")");
  }

  SimulationResult result;
  const int32_t numRanks = s.getNumRanks();
  result.ranks.resize(numRanks);
  for (int32_t r = 0; r < numRanks; ++r) {
    RankStatistics &st = result.ranks[r];
    int32_t inFlight = 0, pendingW = 0;
    for (size_t id = layout.offsets[r]; id < layout.offsets[r + 1]; ++id) {
      ActionKind k = layout.actions[id].kind;
      if (isCompute(k))
        st.busyTime += cost[id];
      st.finishTime = std::max(st.finishTime, run.end[id]);
      if (k == ActionKind::Forward)
        st.peakActivations = std::max(st.peakActivations, ++inFlight);
      else if (producesInputGradient(k))
        --inFlight;
      if (k == ActionKind::BackwardInput)
        st.peakPendingWeightGradients =
            std::max(st.peakPendingWeightGradients, ++pendingW);
      else if (k == ActionKind::BackwardWeight)
        --pendingW;
    }
    result.stepTime = std::max(result.stepTime, st.finishTime);
    result.peakActivations =
        std::max(result.peakActivations, st.peakActivations);
  }
  double sum = 0;
  for (RankStatistics &st : result.ranks) {
    st.idleTime = result.stepTime - st.busyTime;
    st.bubbleFraction =
        result.stepTime > 0 ? st.idleTime / result.stepTime : 0.0;
    sum += st.bubbleFraction;
  }
  result.meanBubbleFraction = sum / numRanks;
  result.offsets = std::move(layout.offsets);
  result.start = std::move(run.start);
  result.end = std::move(run.end);
  return result;
}

} // namespace tessel::pipeline
