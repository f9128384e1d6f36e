//===- Predict.h - a partitioned step's time and memory, predicted -*- C++ -*-===//
//
// tesselc --predict: plays the program every rank would run (the partitioned,
// lowered module, as the exporter sees it) against a cluster's tables
// (tessel/Cost/Cluster.h), without running it:
//   - each op costs its FLOPs at the device's rate for its class, or its
//     bytes at the memory bandwidth, whichever is slower, plus the device's
//     per-op overhead (dialects/tessel/OpCost.h gives the FLOPs);
//   - a collective costs its algorithm over the link of its group; the
//     asynchronous ones (gradient buckets, FSDP's prefetch) run on a
//     communication stream and block only the first op that reads them,
//     where NICs or copy engines move the bytes; where the ranks' own cores
//     do (shared memory, TCP), they take the rank's time, plus the link's
//     async_overhead;
//   - pipeline ranks run their instruction lists in order, each receive
//     waiting for its send: the bubble is what that leaves idle.
// Memory is the memory report's planned peak per rank. docs/auto-plan.md.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_PREDICT_PREDICT_H
#define TESSEL_PREDICT_PREDICT_H

#include "tessel/Cost/Cluster.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace mlir::tessel {

/// One rank program's (one pp coordinate's, or the SPMD program's) figures,
/// in seconds and bytes.
struct RankPrediction {
  /// The pp coordinate (-1: not pipelined).
  int64_t ppRank = -1;
  /// When its last instruction ends.
  double finish = 0;
  /// Time in compute ops.
  double compute = 0;
  /// Time blocked in synchronous collectives or waiting for asynchronous
  /// ones to finish.
  double communication = 0;
  /// Time waiting for a pipeline receive.
  double idle = 0;
  double flops = 0;
  int64_t peakBytes = 0;
  /// Seconds and count per op name ("tessel.gemm", "tessel.all_reduce"),
  /// to hold beside a measured trace (tessel-run --trace).
  std::map<std::string, std::pair<double, int64_t>> byOp;
};

struct Prediction {
  /// The whole step: when the slowest rank finishes.
  double stepTime = 0;
  /// The slowest rank's split of stepTime: compute + exposed
  /// communication + bubble (idle waiting for another stage) = stepTime.
  double compute = 0, communication = 0, bubble = 0;
  /// Every rank's FLOPs over the step time, summed: FLOP/s achieved.
  double achievedFlops = 0;
  /// The largest rank's planned peak memory (with predictStep's
  /// planArenas false, a lower bound: peakIsLowerBound).
  int64_t peakBytes = 0;
  bool peakIsLowerBound = false;
  int64_t ranks = 1;
  /// Which of `programs` finishes last and so sets the step.
  size_t slowest = 0;
  /// Ranks share devices when the mesh has more ranks than the cluster
  /// has devices (CPU ranks on fewer cores): compute slows by this.
  double oversubscription = 1.0;
  std::vector<RankPrediction> programs;
};

/// Predicts one step (one run of an inference program) of `module`, a
/// partitioned program (tesselc's module after its last pass). Without
/// `planArenas` each rank's peak is the live bytes at its peak, a lower
/// bound of the planned one, without the buffer planner's search (most of
/// a pipeline's prediction): --plan=auto weighs the memory of only the
/// candidates that may win (docs/auto-plan.md).
llvm::Expected<Prediction> predictStep(ModuleOp module,
                                       const ::tessel::cost::ClusterSpec &cluster,
                                       bool planArenas = true);

/// tesselc --predict's text: the step time and its split, per program, the
/// memory, and whether it fits the device; with `byOp`, the slowest
/// program's time per op name too (--explain).
void printPrediction(const Prediction &p,
                     const ::tessel::cost::ClusterSpec &cluster,
                     llvm::raw_ostream &os, bool byOp = false);

} // namespace mlir::tessel

#endif // TESSEL_PREDICT_PREDICT_H
