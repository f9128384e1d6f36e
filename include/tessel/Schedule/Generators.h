//===- Generators.h - Built-in pipeline schedules ---------------*- C++ -*-===//
//
// Each generator returns the compute order of every rank (F, B, W, BW and one
// STEP per stage at the end); sends and receives are added afterwards by
// insertCommunication() (see Communication.h). A generator may also return a
// schedule that already lists its sends and receives; it is then verified as
// it stands.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_SCHEDULE_GENERATORS_H
#define TESSEL_SCHEDULE_GENERATORS_H

#include "tessel/Extension/Schedule.h"
#include "tessel/Schedule/Schedule.h"

namespace tessel::pipeline {

/// What a generator is asked for: p ranks (the pipeline depth), m
/// microbatches per training step, v model chunks per rank (interleaved
/// schedules; p*v stages in all). The same parameters a plugin's schedule
/// is generated for.
using ScheduleOptions = ext::ScheduleParams;

/// All forwards, then all backwards (fused), then the optimizer step.
/// Every rank keeps m activations in flight. Takes one chunk per rank.
llvm::Expected<Schedule> generateGPipe(const ScheduleOptions &opts);

/// Non-interleaved 1F1B (PipeDream-Flush, Megatron): rank r runs
/// min(p-1-r, m) warm-up forwards, then alternates one forward and one fused
/// backward, then drains the remaining backwards. At most p in flight.
llvm::Expected<Schedule> generateOneFOneB(const ScheduleOptions &opts);

/// Megatron's interleaved 1F1B: v chunks per rank, stage s on rank s % p.
/// Needs m to be a multiple of p. With v == 1 it is 1F1B.
llvm::Expected<Schedule>
generateInterleavedOneFOneB(const ScheduleOptions &opts);

/// ZB-H1 (Qi et al., "Zero Bubble Pipeline Parallelism"): backward split into
/// B and W; rank r runs at slot x the triple (F_x, B_{x-(p-1-r)},
/// W_{x-(p-1)}), skipping indices outside [0, m). Same peak activations as
/// 1F1B, a third of its bubble when F = B = W.
llvm::Expected<Schedule> generateZeroBubbleH1(const ScheduleOptions &opts);

} // namespace tessel::pipeline

#endif // TESSEL_SCHEDULE_GENERATORS_H
