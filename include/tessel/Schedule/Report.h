//===- Report.h - Human- and FileCheck-readable schedule report -*- C++ -*-===//
//
// What `tesselc --emit=schedule` prints: the schedule's text form (which
// parses back, see TextFormat.h), then one stats line per rank, then the
// step's figures, one `key: value` a line, ending with
// `bubble_fraction: X` (mean over ranks, 4 decimals).
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_SCHEDULE_REPORT_H
#define TESSEL_SCHEDULE_REPORT_H

#include "tessel/Schedule/Simulator.h"

namespace llvm {
class raw_ostream;
} // namespace llvm

namespace tessel::pipeline {

void printReport(llvm::raw_ostream &os, const Schedule &s,
                 const ScheduleCosts &costs, const SimulationResult &sim,
                 bool printActions = true);

} // namespace tessel::pipeline

#endif // TESSEL_SCHEDULE_REPORT_H
