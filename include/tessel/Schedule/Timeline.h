//===- Timeline.h - Drawing a simulated schedule ----------------*- C++ -*-===//
//
// Two pictures of a simulated schedule: a Chrome-trace / Perfetto JSON (one
// thread per rank, one slice per action, flow arrows from sends to receives;
// one cost unit is drawn as one millisecond) and a standalone SVG with the
// familiar staircase, one row per rank, F/B/W/BW coloured.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_SCHEDULE_TIMELINE_H
#define TESSEL_SCHEDULE_TIMELINE_H

#include "tessel/Schedule/Simulator.h"

namespace llvm {
class raw_ostream;
} // namespace llvm

namespace tessel::pipeline {

void writeChromeTrace(llvm::raw_ostream &os, const Schedule &s,
                      const SimulationResult &sim);
void writeSvgTimeline(llvm::raw_ostream &os, const Schedule &s,
                      const SimulationResult &sim);

/// Writes `path` in the format its extension names: `.json` or `.svg`.
llvm::Error writeTimelineFile(llvm::StringRef path, const Schedule &s,
                              const SimulationResult &sim);

} // namespace tessel::pipeline

#endif // TESSEL_SCHEDULE_TIMELINE_H
