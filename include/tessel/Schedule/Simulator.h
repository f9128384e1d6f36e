//===- Simulator.h - Timing of a pipeline schedule --------------*- C++ -*-===//
//
// Runs a verified schedule against per-action costs and reports the step time,
// each rank's bubble fraction (idle time / step time) and its peak number of
// activations in flight.
//
// Timing model: every rank starts at 0 and runs its list in order. F, B, W
// and STEP take their cost, BW takes B + W. A send is posted on a
// communication stream and costs its rank nothing; the matching receive ends
// at max(when the receiver reaches it, when the send was posted + latency +
// bytes / bandwidth). A schedule without sends and receives is timed as if
// each consumer received right before it runs. The verifier, separately,
// proves the order safe under fully blocking send/recv.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_SCHEDULE_SIMULATOR_H
#define TESSEL_SCHEDULE_SIMULATOR_H

#include "tessel/Schedule/Schedule.h"

#include <vector>

namespace tessel::pipeline {

struct ScheduleCosts {
  double forward = 1.0;
  double backwardInput = 1.0;
  double backwardWeight = 1.0;
  double optimizerStep = 0.0;
  /// Time from posting a send to its data being usable by the receiver,
  /// before the bandwidth term.
  double p2pLatency = 0.0;
  /// Bytes per time unit; 0 means unlimited.
  double p2pBandwidth = 0.0;
  /// Bytes in one activation or gradient message.
  double messageBytes = 0.0;

  /// Per-stage F, B, W costs (a measured run's stages differ), by
  /// (virtual) stage; empty: every stage costs forward, backwardInput,
  /// backwardWeight.
  std::vector<double> stageForward, stageBackwardInput, stageBackwardWeight;

  /// The cost of a compute action (0 for sends and receives).
  double getCost(ActionKind k) const;
  /// The cost of a compute action of `stage` (the per-stage costs where
  /// given).
  double getCost(ActionKind k, int32_t stage) const;
  /// latency + bytes / bandwidth.
  double getTransferTime() const;

  /// Parses "F,B,W" (three non-negative numbers) into the compute costs,
  /// or "F0,B0,W0;F1,B1,W1;..." into per-stage costs (one triple per
  /// stage; the uniform fields get the first).
  static llvm::Expected<ScheduleCosts> parse(llvm::StringRef text);
  /// Checks that every field is finite and non-negative.
  llvm::Error validate() const;
};

struct RankStatistics {
  /// Time spent in F, B, W, BW and STEP.
  double busyTime = 0;
  /// Step time minus busy time.
  double idleTime = 0;
  /// idleTime / step time.
  double bubbleFraction = 0;
  /// When the rank's last action ends.
  double finishTime = 0;
  /// Most microbatches whose forward has run and whose input-gradient
  /// backward (B or BW) has not, over all stages of the rank.
  int32_t peakActivations = 0;
  /// Most B whose W has not run yet.
  int32_t peakPendingWeightGradients = 0;
};

struct SimulationResult {
  /// When the last rank finishes.
  double stepTime = 0;
  /// Mean of the ranks' bubble fractions.
  double meanBubbleFraction = 0;
  /// Largest peakActivations over ranks.
  int32_t peakActivations = 0;
  std::vector<RankStatistics> ranks;
  /// Start and end of every action: rank r's action i is at offsets[r] + i.
  std::vector<size_t> offsets;
  std::vector<double> start, end;

  double getStart(int32_t rank, size_t pos) const {
    return start[offsets[rank] + pos];
  }
  double getEnd(int32_t rank, size_t pos) const {
    return end[offsets[rank] + pos];
  }
};

/// Times `s`, which must be valid (see Verifier.h); fails with a message if
/// the ranks block each other.
llvm::Expected<SimulationResult> simulate(const Schedule &s,
                                          const ScheduleCosts &costs);

} // namespace tessel::pipeline

#endif // TESSEL_SCHEDULE_SIMULATOR_H
