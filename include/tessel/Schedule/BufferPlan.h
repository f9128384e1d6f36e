//===- BufferPlan.h - Microbatch buffers of a schedule ----------*- C++ -*-===//
//
// What the lowering allocates per rank: an activation slot for every
// (stage, microbatch), live from its F (or the RECV_F that fills its input)
// to its last backward piece (W or BW), reused once free. Slot numbers are
// stable, so the per-rank program can address `activations[slot]`.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_SCHEDULE_BUFFERPLAN_H
#define TESSEL_SCHEDULE_BUFFERPLAN_H

#include "tessel/Schedule/Schedule.h"

#include <vector>

namespace tessel::pipeline {

struct BufferPlan {
  /// Slots each rank needs: the most activations it holds at once.
  std::vector<int32_t> slotsPerRank;
  /// slot[stage * numMicrobatches + microbatch].
  std::vector<int32_t> slot;
  int32_t numMicrobatches = 0;

  int32_t getSlot(int32_t stage, int32_t microbatch) const {
    return slot[size_t(stage) * numMicrobatches + microbatch];
  }
};

/// Plans the activation slots of a valid schedule (lowest free slot first).
BufferPlan planBuffers(const Schedule &s);

} // namespace tessel::pipeline

#endif // TESSEL_SCHEDULE_BUFFERPLAN_H
