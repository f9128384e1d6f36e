//===- Report.cpp - Human- and FileCheck-readable schedule report ---------===//

#include "tessel/Schedule/Report.h"
#include "tessel/Schedule/BufferPlan.h"
#include "tessel/Schedule/TextFormat.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

using namespace llvm;

namespace tessel::pipeline {

/// Times as short as they can be: 33, 33.5, 0.125.
static std::string num(double v) {
  std::string s;
  raw_string_ostream os(s);
  os << format("%.10g", v);
  return s;
}

void printReport(raw_ostream &os, const Schedule &s, const ScheduleCosts &costs,
                 const SimulationResult &sim, bool printActions) {
  if (printActions)
    printSchedule(os, s);
  os << "# simulated with ";
  if (costs.stageForward.empty())
    os << "F=" << num(costs.forward) << " B=" << num(costs.backwardInput)
       << " W=" << num(costs.backwardWeight)
       << " BW=" << num(costs.getCost(ActionKind::FullBackward));
  else
    for (size_t i = 0; i < costs.stageForward.size(); ++i)
      os << (i ? "; " : "") << "stage " << i << " F=" << num(costs.stageForward[i])
         << " B=" << num(costs.stageBackwardInput[i])
         << " W=" << num(costs.stageBackwardWeight[i]);
  os << " STEP=" << num(costs.optimizerStep) << ", p2p latency "
     << num(costs.p2pLatency) << ", bandwidth ";
  if (costs.p2pBandwidth > 0)
    os << num(costs.p2pBandwidth) << " bytes/unit, " << num(costs.messageBytes)
       << " bytes a message\n";
  else
    os << "unlimited\n";
  BufferPlan buffers = planBuffers(s);
  for (int32_t r = 0; r < s.getNumRanks(); ++r) {
    const RankStatistics &st = sim.ranks[r];
    os << "rank " << r << " stats: busy=" << num(st.busyTime)
       << " idle=" << num(st.idleTime)
       << " bubble=" << format("%.4f", st.bubbleFraction)
       << " peak_activations=" << st.peakActivations
       << " activation_slots=" << buffers.slotsPerRank[r]
       << " peak_pending_w=" << st.peakPendingWeightGradients << '\n';
  }
  os << "schedule: " << s.getName() << '\n';
  os << "ranks: " << s.getNumRanks() << '\n';
  os << "stages: " << s.getNumStages() << '\n';
  os << "microbatches: " << s.getNumMicrobatches() << '\n';
  os << "actions: " << s.size() << '\n';
  os << "step_time: " << num(sim.stepTime) << '\n';
  os << "peak_activations: " << sim.peakActivations << '\n';
  os << "bubble_fraction: " << format("%.4f", sim.meanBubbleFraction) << '\n';
}

} // namespace tessel::pipeline
