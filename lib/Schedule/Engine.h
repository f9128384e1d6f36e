//===- Engine.h - Event-driven execution of per-rank lists ------*- C++ -*-===//
//
// Private to TesselSchedule. Two executions of a schedule, both linear in the
// number of actions:
//
// - runTimed: every rank runs its list in order; an action may also wait for
//   one action of another rank (its remote dependency) plus a delay. Gives
//   each action's start and end, or stops where ranks wait on each other.
// - runRendezvous: sends and receives block until both ends have reached the
//   pair (synchronous send/recv, as NCCL's); compute never blocks. Returns
//   how far each rank gets: a rank short of its end is deadlocked.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_LIB_SCHEDULE_ENGINE_H
#define TESSEL_LIB_SCHEDULE_ENGINE_H

#include "ScheduleIndex.h"

#include <vector>

namespace tessel::pipeline::detail {

struct TimedRun {
  std::vector<double> start, end;
  /// Per rank, the position of the first action that did not run.
  std::vector<size_t> reached;
  bool complete = false;
};

/// dep[id]: id of the action `id` waits for (kNone for none); delay[id]: time
/// between the end of dep[id] and the earliest start of `id`; cost[id]: its
/// duration.
TimedRun runTimed(const FlatLayout &layout, const std::vector<int64_t> &dep,
                  const std::vector<double> &delay,
                  const std::vector<double> &cost);

/// partner[id]: for a send or receive, the id of its other end; kNone for
/// compute. Returns, per rank, the position of the first action not done.
std::vector<size_t> runRendezvous(const FlatLayout &layout,
                                  const std::vector<int64_t> &partner);

/// The remote dependencies of a schedule without sends and receives: F of
/// stage s waits for F of s-1, the B/BW of s for the B/BW of s+1, with
/// `transfer` added when the two stages sit on different ranks.
void buildImplicitDependencies(const Schedule &s, const FlatLayout &layout,
                               const ActionIndex &index, double transfer,
                               std::vector<int64_t> &dep,
                               std::vector<double> &delay);

} // namespace tessel::pipeline::detail

#endif // TESSEL_LIB_SCHEDULE_ENGINE_H
