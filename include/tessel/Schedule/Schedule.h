//===- Schedule.h - Per-rank pipeline action lists --------------*- C++ -*-===//
//
// A Schedule is the pipeline part of a training step as the compiler lowers it
// and the runtime executes it: for every pipeline rank, the ordered list of
// actions it performs, plus where each model stage lives (chunk placement).
//
// Stages are the model pieces in forward order, 0 .. numStages-1; stage s
// feeds stage s+1. A rank may hold several stages (model chunks): with v
// chunks per rank and Megatron's looped placement, stage s lives on rank
// s % p as that rank's chunk s / p.
//
// Point-to-point messages are identified by (direction, sending stage,
// microbatch); getMessageTag() turns that into the integer tag the runtime
// uses, so a send and its receive compute the same tag independently.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_SCHEDULE_SCHEDULE_H
#define TESSEL_SCHEDULE_SCHEDULE_H

#include "tessel/Schedule/Action.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tessel::pipeline {

/// The most (stage, microbatch) pairs a schedule may have: 4M, about 300 MB
/// of actions and indexes. Bounds what a typo on the command line allocates.
inline constexpr uint64_t kMaxStageMicrobatchPairs = uint64_t(1) << 22;

class Schedule {
public:
  Schedule() = default;

  /// A schedule of `numMicrobatches` microbatches whose stage s lives on rank
  /// stageToRank[s]. The ranks' action lists start empty. Fails when a rank
  /// holds no stage or a rank index is out of range.
  static llvm::Expected<Schedule> create(std::string name, int32_t numRanks,
                                         int32_t numMicrobatches,
                                         std::vector<int32_t> stageToRank);

  /// Megatron's looped placement: `chunks` stages per rank, stage s on rank
  /// s % numRanks. Fails on numRanks < 1, chunks < 1 or numMicrobatches < 1.
  static llvm::Expected<Schedule> createLooped(std::string name,
                                               int32_t numRanks, int32_t chunks,
                                               int32_t numMicrobatches);

  const std::string &getName() const { return name; }
  void setName(std::string n) { name = std::move(n); }
  int32_t getNumRanks() const { return numRanks; }
  int32_t getNumStages() const {
    return static_cast<int32_t>(stageRank.size());
  }
  int32_t getNumMicrobatches() const { return numMicrobatches; }

  /// The rank that holds stage `s`.
  int32_t getRank(int32_t s) const { return stageRank[s]; }
  /// Which of its rank's chunks stage `s` is (0 for the rank's first stage).
  int32_t getChunk(int32_t s) const { return stageChunk[s]; }
  /// The stages held by `rank`, in increasing order.
  llvm::ArrayRef<int32_t> getStagesOf(int32_t rank) const {
    return rankStages[rank];
  }

  llvm::ArrayRef<Action> getActions(int32_t rank) const {
    return rankActions[rank];
  }
  std::vector<Action> &getMutableActions(int32_t rank) {
    return rankActions[rank];
  }
  void append(int32_t rank, Action a) { rankActions[rank].push_back(a); }

  /// Total number of actions over all ranks.
  size_t size() const;
  /// True when some rank lists a send or a receive.
  bool hasCommunication() const;

  /// The stage on the other end of a send or receive: SEND_F s -> s+1,
  /// RECV_F s -> s-1, SEND_B s -> s-1, RECV_B s -> s+1.
  static int32_t getPeerStage(const Action &a);
  /// The rank on the other end of a send or receive (placement permitting).
  int32_t getPeerRank(const Action &a) const {
    return stageRank[getPeerStage(a)];
  }
  /// The tag of the message a send or receive moves; equal on both ends.
  int64_t getMessageTag(const Action &a) const;
  /// The action that pairs with a send or receive: `1SEND_F0` <-> `2RECV_F0`.
  static Action getMatchingAction(const Action &a);

  bool operator==(const Schedule &o) const {
    return numRanks == o.numRanks && numMicrobatches == o.numMicrobatches &&
           stageRank == o.stageRank && rankActions == o.rankActions;
  }

private:
  std::string name;
  int32_t numRanks = 0;
  int32_t numMicrobatches = 0;
  std::vector<int32_t> stageRank;
  std::vector<int32_t> stageChunk;
  std::vector<std::vector<int32_t>> rankStages;
  std::vector<std::vector<Action>> rankActions;
};

/// Makes an llvm::Error carrying `msg` (lowercase, names the thing).
llvm::Error makeScheduleError(const llvm::Twine &msg);

} // namespace tessel::pipeline

#endif // TESSEL_SCHEDULE_SCHEDULE_H
