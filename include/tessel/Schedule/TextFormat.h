//===- TextFormat.h - Schedules as text -------------------------*- C++ -*-===//
//
// The text form of a schedule, one line per rank:
//
//   # comments run to the end of the line
//   rank 0: 0F0 0SEND_F0 0F1 0SEND_F1 0RECV_B0 0BW0 ...
//   rank 1: 1RECV_F0 1F0 ...
//
// The parser also takes CSV, one row per rank in rank order, as PyTorch's
// pipelining writes it: `0F0,0F1,,0BW0` (empty cells are skipped). Actions are
// separated by commas and/or blanks. Placement is read off the lists: a stage
// lives on the rank whose list names it. printSchedule's output parses back
// to an equal schedule.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_SCHEDULE_TEXTFORMAT_H
#define TESSEL_SCHEDULE_TEXTFORMAT_H

#include "tessel/Schedule/Schedule.h"

namespace llvm {
class raw_ostream;
} // namespace llvm

namespace tessel::pipeline {

void printSchedule(llvm::raw_ostream &os, const Schedule &s);
std::string formatSchedule(const Schedule &s);

/// Parses the text or CSV form. Errors read "<bufferName>:<line>:<column>:
/// <what>". The schedule is not verified here.
llvm::Expected<Schedule> parseSchedule(llvm::StringRef text,
                                       llvm::StringRef bufferName,
                                       llvm::StringRef scheduleName = "file");

/// Reads and parses a schedule file; the schedule is named after the file.
llvm::Expected<Schedule> readScheduleFile(llvm::StringRef path);

} // namespace tessel::pipeline

#endif // TESSEL_SCHEDULE_TEXTFORMAT_H
