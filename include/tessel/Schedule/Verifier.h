//===- Verifier.h - Checks a pipeline schedule before it runs ---*- C++ -*-===//
//
// The verifier refuses a schedule that could compute the wrong thing or hang:
//
//  V1  every action names a stage of its own rank and a microbatch in range;
//      sends and receives cross ranks (adjacent stages on one rank exchange
//      nothing);
//  V2  every (stage, microbatch) has exactly one F and either one BW or one B
//      and one W; every stage has exactly one STEP; nothing appears twice;
//  V3  on a rank: B/BW after its F, W after its B, STEP after the stage's
//      last W/BW;
//  V4  across stages: F of s+1 after F of s, and the backward of s after the
//      backward of s+1 (when both sit on one rank, by list order);
//  V5  when the schedule lists sends and receives: every cross-rank edge of V4
//      has its send after the producer and its receive before the consumer,
//      each send is matched by exactly one receive and vice versa;
//  V6  no deadlock: with blocking (rendezvous) send/recv, or, for a schedule
//      without sends and receives, with every action waiting for its producer.
//
// A diagnostic names the rank, the 0-based position in that rank's list and
// the action, e.g. "rank 1, position 4 (1B0): runs before its forward 1F0".
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_SCHEDULE_VERIFIER_H
#define TESSEL_SCHEDULE_VERIFIER_H

#include "tessel/Schedule/Schedule.h"

#include <string>
#include <vector>

namespace tessel::pipeline {

struct ScheduleDiagnostic {
  /// -1 when the problem is not tied to one rank.
  int32_t rank = -1;
  /// -1 when the problem is not tied to one position (e.g. a missing action).
  int64_t position = -1;
  std::string message;
};

/// All problems found, up to `maxDiagnostics`; empty when the schedule is
/// valid. Later checks run only when the earlier ones pass.
std::vector<ScheduleDiagnostic> verifySchedule(const Schedule &s,
                                               unsigned maxDiagnostics = 16);

/// The same as an llvm::Error whose message lists the diagnostics, one a
/// line, after "schedule '<name>' is invalid:".
llvm::Error verify(const Schedule &s, unsigned maxDiagnostics = 16);

} // namespace tessel::pipeline

#endif // TESSEL_SCHEDULE_VERIFIER_H
