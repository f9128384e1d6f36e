//===- EmitSchedule.h - tesselc --emit=schedule -----------------*- C++ -*-===//

#ifndef TESSEL_TOOLS_TESSELC_EMITSCHEDULE_H
#define TESSEL_TOOLS_TESSELC_EMITSCHEDULE_H

#include "llvm/Support/CommandLine.h"

#include <string>

namespace tessel {

/// The options of the schedule phase, for --help grouping.
llvm::cl::OptionCategory &getScheduleCategory();

/// Builds or loads the schedule named on the command line, simulates it and
/// writes the report, the timelines and the schedule file asked for. Returns
/// the process exit code; errors go to stderr as "tesselc: error: ...".
int emitSchedule(llvm::StringRef outputPath);

/// The schedule options as a pipelined training compile uses them
/// (--schedule, --schedule-file, --chunks, --stages auto).
struct PipelineFlags {
  std::string schedule; // empty: not given
  std::string scheduleFile;
  int chunks = 1;
  std::string stages; // "auto", or empty
};
PipelineFlags getPipelineFlags();

} // namespace tessel

#endif // TESSEL_TOOLS_TESSELC_EMITSCHEDULE_H
