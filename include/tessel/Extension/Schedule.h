//===- Schedule.h - A pipeline schedule generator ---------------*- C++ -*-===//
//
// A schedule: for each pipeline rank, the order of its forward and backward
// passes over the microbatches of a step (docs/pipeline.md). Tessel adds the
// sends and receives, verifies the result (every dependency honoured, no
// deadlock) and simulates it, exactly as for its built-in schedules, which
// are registered the same way.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_EXTENSION_SCHEDULE_H
#define TESSEL_EXTENSION_SCHEDULE_H

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace tessel::ext {

/// What a schedule is generated for: p ranks, m microbatches, v chunks
/// (model pieces) per rank; stage s lives on rank s % p.
struct ScheduleParams {
  int32_t ranks = 1;
  int32_t microbatches = 1;
  int32_t chunks = 1;
};

struct ScheduleStep {
  /// F: forward; B: input gradient of a split backward; W: its weight
  /// gradient; BW: the whole backward; Step: the optimizer (once per stage,
  /// after its last backward; added by Tessel where a rank has none).
  enum class Kind { F, B, W, BW, Step };
  Kind kind = Kind::F;
  int32_t stage = 0;
  int32_t microbatch = 0; // -1 for Step
};

struct ScheduleDef {
  std::string name;
  std::string description;
  /// Fills perRank[r] with rank r's steps in order (perRank has p entries);
  /// returns "" or why these parameters are not supported.
  std::function<std::string(const ScheduleParams &params,
                            std::vector<std::vector<ScheduleStep>> &perRank)>
      generate;
};

} // namespace tessel::ext

#endif // TESSEL_EXTENSION_SCHEDULE_H
