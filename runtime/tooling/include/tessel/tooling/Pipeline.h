//===- Pipeline.h - What tessel-run measures of pipelined runs ---*- C++ -*-===//
//
// A pipelined step program (docs/pipeline.md) tags each instruction with
// its schedule action (Op::action). From a run's trace events this file
// forms the action spans (consecutive instructions of one action: "F 0.3",
// "RECV 1.2", ...) that --trace shows on a track of their own and that
// --timeline draws; it sums each rank's idle time (blocked in recv/wait,
// Executor::lastRunStats) into the bubble tessel-run prints.
//
// --timeline FILE.svg: every rank writes its compute spans of the last
// run to FILE.svg.rankR (a line `bubble FRACTION`, then one line per span:
// phase stage microbatch begin_us end_us); the launcher of -n N draws them into FILE.svg, times relative
// to the earliest span of any rank, with the schedule simulator's picture
// (tessel/timeline/SvgTimeline.h).
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_RUN_PIPELINE_H
#define TESSEL_RUN_PIPELINE_H

#include "tessel/runtime/Executor.h"
#include "tessel/runtime/Program.h"

#include <string>
#include <vector>

namespace tessel::tooling {

/// Consecutive trace events of instructions with one pipeline action.
struct ActionSpan {
  runtime::PipelineAction action;
  double beginUs = 0, endUs = 0;
};

/// The spans of `events` (in run order) of a pipelined `program`.
std::vector<ActionSpan>
actionSpans(const runtime::Program &program,
            const std::vector<runtime::TraceEvent> &events);

/// The time of the timed runs (or steps) and the part blocked on peers.
struct BubbleMeter {
  double wallUs = 0, idleUs = 0;
  int runs = 0;
  void add(const runtime::RunStats &s) {
    wallUs += s.wallUs;
    idleUs += s.idleUs;
    ++runs;
  }
  /// "bubble 23.1% (blocked in recv/wait 5.210 ms of 22.553 ms per step,
  /// mean of 8 steps)".
  std::string describe(const char *unit) const;
};

/// This rank's compute spans of the last run and its bubble, for the
/// launcher's picture.
runtime::Status writeTimelineSpans(const std::string &path, int rank,
                                   const runtime::Program &program,
                                   const std::vector<runtime::TraceEvent> &events,
                                   const BubbleMeter &bubble);
/// Draws the `ranks` files PATH.rankR into the SVG `path` and removes them;
/// `heading` describes the run.
runtime::Status mergeTimeline(const std::string &path, int ranks,
                              const std::string &heading);

} // namespace tessel::tooling

#endif // TESSEL_RUN_PIPELINE_H
