//===- Schedule.cpp - Per-rank pipeline action lists ----------------------===//

#include "tessel/Schedule/Schedule.h"

#include "llvm/ADT/Twine.h"

using namespace llvm;

namespace tessel::pipeline {

Error makeScheduleError(const Twine &msg) {
  return make_error<StringError>(msg, inconvertibleErrorCode());
}

/// "number of <what> must be at least 1, got <n>" for the first count
/// below 1.
static Error checkCounts(ArrayRef<std::pair<StringRef, int32_t>> counts) {
  for (auto [what, n] : counts)
    if (n < 1)
      return makeScheduleError("number of " + what +
                               " must be at least 1, got " + Twine(n));
  return Error::success();
}

Expected<Schedule> Schedule::create(std::string name, int32_t numRanks,
                                    int32_t numMicrobatches,
                                    std::vector<int32_t> stageToRank) {
  if (Error e = checkCounts(
          {{"ranks", numRanks}, {"microbatches", numMicrobatches}}))
    return std::move(e);
  if (stageToRank.empty())
    return makeScheduleError("a schedule needs at least one stage");
  if (uint64_t(stageToRank.size()) * uint64_t(numMicrobatches) >
      kMaxStageMicrobatchPairs)
    return makeScheduleError(
        "schedule too large: " + Twine(stageToRank.size()) + " stages x " +
        Twine(numMicrobatches) + " microbatches exceeds " +
        Twine(kMaxStageMicrobatchPairs) + " stage-microbatch pairs");
  Schedule s;
  s.name = std::move(name);
  s.numRanks = numRanks;
  s.numMicrobatches = numMicrobatches;
  s.rankStages.resize(numRanks);
  s.stageChunk.resize(stageToRank.size());
  for (size_t st = 0; st < stageToRank.size(); ++st) {
    int32_t r = stageToRank[st];
    if (r < 0 || r >= numRanks)
      return makeScheduleError("stage " + Twine(st) + " is placed on rank " +
                               Twine(r) + ", outside [0, " + Twine(numRanks) +
                               ")");
    s.stageChunk[st] = static_cast<int32_t>(s.rankStages[r].size());
    s.rankStages[r].push_back(static_cast<int32_t>(st));
  }
  for (int32_t r = 0; r < numRanks; ++r)
    if (s.rankStages[r].empty())
      return makeScheduleError("rank " + Twine(r) + " holds no stage");
  s.stageRank = std::move(stageToRank);
  s.rankActions.resize(numRanks);
  return s;
}

Expected<Schedule> Schedule::createLooped(std::string name, int32_t numRanks,
                                          int32_t chunks,
                                          int32_t numMicrobatches) {
  if (Error e = checkCounts({{"stages", numRanks},
                             {"chunks", chunks},
                             {"microbatches", numMicrobatches}}))
    return std::move(e);
  if (uint64_t(numRanks) * uint64_t(chunks) * uint64_t(numMicrobatches) >
      kMaxStageMicrobatchPairs)
    return makeScheduleError("schedule too large: " + Twine(numRanks) +
                             " stages x " + Twine(chunks) + " chunks x " +
                             Twine(numMicrobatches) + " microbatches exceeds " +
                             Twine(kMaxStageMicrobatchPairs) +
                             " stage-microbatch pairs");
  std::vector<int32_t> placement(size_t(numRanks) * chunks);
  for (size_t s = 0; s < placement.size(); ++s)
    placement[s] = static_cast<int32_t>(s % numRanks);
  return create(std::move(name), numRanks, numMicrobatches,
                std::move(placement));
}

size_t Schedule::size() const {
  size_t n = 0;
  for (const auto &list : rankActions)
    n += list.size();
  return n;
}

bool Schedule::hasCommunication() const {
  for (const auto &list : rankActions)
    for (const Action &a : list)
      if (isCommunication(a.kind))
        return true;
  return false;
}

int32_t Schedule::getPeerStage(const Action &a) {
  switch (a.kind) {
  case ActionKind::SendForward:
  case ActionKind::RecvBackward:
    return a.stage + 1;
  case ActionKind::RecvForward:
  case ActionKind::SendBackward:
    return a.stage - 1;
  default:
    return a.stage;
  }
}

Action Schedule::getMatchingAction(const Action &a) {
  // Each send kind and the receive kind that matches it, both ways.
  static constexpr std::pair<ActionKind, ActionKind> kSendRecv[] = {
      {ActionKind::SendForward, ActionKind::RecvForward},
      {ActionKind::SendBackward, ActionKind::RecvBackward},
  };
  Action m = a;
  m.stage = getPeerStage(a);
  for (auto [send, recv] : kSendRecv) {
    if (a.kind == send)
      m.kind = recv;
    else if (a.kind == recv)
      m.kind = send;
  }
  return m;
}

int64_t Schedule::getMessageTag(const Action &a) const {
  // A message is named by the stage that sends it, its microbatch and its
  // direction; both ends derive the same value.
  int64_t sender = isSend(a.kind) ? a.stage : getPeerStage(a);
  bool gradient =
      a.kind == ActionKind::SendBackward || a.kind == ActionKind::RecvBackward;
  return (int64_t(a.microbatch) * getNumStages() + sender) * 2 +
         (gradient ? 1 : 0);
}

} // namespace tessel::pipeline
