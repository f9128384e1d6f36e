//===- Verifier.cpp - Checks a pipeline schedule before it runs -----------===//
//
// Linear in the number of actions: one pass builds the (kind, stage,
// microbatch) index, one walks the dependency edges, and one event-driven run
// looks for a deadlock (see Engine.h).
//
//===----------------------------------------------------------------------===//

#include "tessel/Schedule/Verifier.h"

#include "Engine.h"
#include "ScheduleIndex.h"

#include "llvm/ADT/Twine.h"
#include "llvm/Support/raw_ostream.h"

using namespace llvm;

namespace tessel::pipeline {
namespace {

using detail::ActionIndex;
using detail::FlatLayout;
using detail::kNone;

class Verifier {
public:
  Verifier(const Schedule &s, unsigned maxDiagnostics)
      : s(s), layout(s), index(s.getNumStages(), s.getNumMicrobatches()),
        maxDiagnostics(std::max(1u, maxDiagnostics)) {}

  std::vector<ScheduleDiagnostic> run() {
    if (!checkActions() || !checkCompleteness() || !checkOrder())
      return std::move(diags);
    checkDeadlock();
    return std::move(diags);
  }

private:
  bool full() const { return diags.size() >= maxDiagnostics; }

  std::string where(size_t id) const {
    int32_t r = layout.rankOf(id);
    return ("rank " + Twine(r) + ", position " + Twine(id - layout.offsets[r]))
        .str();
  }
  std::string token(size_t id) const {
    return formatAction(layout.actions[id]);
  }
  /// "position 3" when `other` is on the same rank as `id`, else "rank 1,
  /// position 3".
  std::string relative(size_t id, size_t other) const {
    int32_t r = layout.rankOf(other);
    if (r == layout.rankOf(id))
      return ("position " + Twine(other - layout.offsets[r])).str();
    return where(other);
  }

  void report(size_t id, const Twine &msg) {
    if (full())
      return;
    int32_t r = layout.rankOf(id);
    ScheduleDiagnostic d;
    d.rank = r;
    d.position = int64_t(id - layout.offsets[r]);
    d.message = (where(id) + " (" + token(id) + "): " + msg).str();
    diags.push_back(std::move(d));
  }
  void reportRank(int32_t rank, const Twine &msg) {
    if (full())
      return;
    ScheduleDiagnostic d;
    d.rank = rank;
    d.message = ("rank " + Twine(rank) + ": " + msg).str();
    diags.push_back(std::move(d));
  }

  /// V1 and the duplicate half of V2; fills the index.
  bool checkActions();
  /// V2.
  bool checkCompleteness();
  /// V3, V4, V5.
  bool checkOrder();
  void checkEdge(size_t producer, size_t consumer, bool forward);
  /// V6.
  void checkDeadlock();

  const Schedule &s;
  FlatLayout layout;
  ActionIndex index;
  unsigned maxDiagnostics;
  bool hasCommunication = false;
  std::vector<ScheduleDiagnostic> diags;
};

bool Verifier::checkActions() {
  const int32_t numStages = s.getNumStages();
  const int32_t numMb = s.getNumMicrobatches();
  for (size_t id = 0; id < layout.size() && !full(); ++id) {
    const Action &a = layout.actions[id];
    int32_t r = layout.rankOf(id);
    if (a.stage < 0 || a.stage >= numStages) {
      report(id, "stage " + Twine(a.stage) + " is out of range [0, " +
                     Twine(numStages) + ")");
      continue;
    }
    if (a.kind != ActionKind::OptimizerStep &&
        (a.microbatch < 0 || a.microbatch >= numMb)) {
      report(id, "microbatch " + Twine(a.microbatch) + " is out of range [0, " +
                     Twine(numMb) + ")");
      continue;
    }
    if (s.getRank(a.stage) != r) {
      report(id, "stage " + Twine(a.stage) + " belongs to rank " +
                     Twine(s.getRank(a.stage)));
      continue;
    }
    if (isCommunication(a.kind)) {
      int32_t peer = Schedule::getPeerStage(a);
      if (peer < 0) {
        report(id, a.kind == ActionKind::RecvForward
                       ? "the first stage receives no activation"
                       : "the first stage sends no gradient");
        continue;
      }
      if (peer >= numStages) {
        report(id, a.kind == ActionKind::SendForward
                       ? "the last stage sends no activation"
                       : "the last stage receives no gradient");
        continue;
      }
      if (s.getRank(peer) == r) {
        report(id, "stages " + Twine(a.stage) + " and " + Twine(peer) +
                       " both sit on rank " + Twine(r) +
                       " and exchange nothing");
        continue;
      }
      hasCommunication = true;
    }
    int64_t &slot = index.slot(a);
    if (slot != kNone) {
      report(id, "appears twice (first at " + relative(id, size_t(slot)) + ")");
      continue;
    }
    slot = int64_t(id);
  }
  return diags.empty();
}

bool Verifier::checkCompleteness() {
  const int32_t numStages = s.getNumStages();
  const int32_t numMb = s.getNumMicrobatches();
  for (int32_t st = 0; st < numStages && !full(); ++st) {
    int32_t q = s.getRank(st);
    for (int32_t mb = 0; mb < numMb && !full(); ++mb) {
      int64_t f = index.get(ActionKind::Forward, st, mb);
      int64_t b = index.get(ActionKind::BackwardInput, st, mb);
      int64_t w = index.get(ActionKind::BackwardWeight, st, mb);
      int64_t bw = index.get(ActionKind::FullBackward, st, mb);
      if (f == kNone)
        reportRank(q, "missing " + formatAction(Action::forward(st, mb)));
      if (bw != kNone && (b != kNone || w != kNone)) {
        size_t other = size_t(b != kNone ? b : w);
        report(size_t(bw), "stage " + Twine(st) + " microbatch " + Twine(mb) +
                               " also has the split backward " + token(other) +
                               " at " + relative(size_t(bw), other));
      } else if (bw == kNone && b == kNone && w == kNone) {
        reportRank(q, "missing the backward of stage " + Twine(st) +
                          " microbatch " + Twine(mb) + " (" +
                          formatAction(Action::fullBackward(st, mb)) + ", or " +
                          formatAction(Action::backwardInput(st, mb)) +
                          " and " +
                          formatAction(Action::backwardWeight(st, mb)) + ")");
      } else if (b != kNone && w == kNone) {
        report(size_t(b), "has no weight-gradient " +
                              formatAction(Action::backwardWeight(st, mb)));
      } else if (w != kNone && b == kNone) {
        report(size_t(w), "has no input-gradient " +
                              formatAction(Action::backwardInput(st, mb)));
      }
    }
    if (index.get(ActionKind::OptimizerStep, st, -1) == kNone)
      reportRank(q, "missing the optimizer step " +
                        formatAction(Action::optimizerStep(st)) + " of stage " +
                        Twine(st));
  }
  return diags.empty();
}

void Verifier::checkEdge(size_t producer, size_t consumer, bool forward) {
  int32_t pr = layout.rankOf(producer), cr = layout.rankOf(consumer);
  if (pr == cr) {
    if (consumer < producer)
      report(consumer, "runs before " + token(producer) + " at " +
                           relative(consumer, producer) +
                           ", whose output it needs");
    return;
  }
  if (!hasCommunication)
    return;
  const Action &prod = layout.actions[producer];
  const Action &cons = layout.actions[consumer];
  Action send{forward ? ActionKind::SendForward : ActionKind::SendBackward,
              prod.stage, prod.microbatch};
  Action recv{forward ? ActionKind::RecvForward : ActionKind::RecvBackward,
              cons.stage, cons.microbatch};
  int64_t sendId = index.get(send), recvId = index.get(recv);
  if (recvId == kNone) {
    report(consumer, "needs the " + Twine(forward ? "activation" : "gradient") +
                         " of " + token(producer) + " from rank " + Twine(pr) +
                         " but no " + formatAction(recv) + " comes before it");
    return;
  }
  if (size_t(recvId) > consumer)
    report(size_t(recvId), "comes after " + token(consumer) + " at " +
                               relative(size_t(recvId), consumer) +
                               ", which needs it");
  if (sendId == kNone) {
    report(size_t(recvId),
           "has no matching " + formatAction(send) + " on rank " + Twine(pr));
    return;
  }
  if (size_t(sendId) < producer)
    report(size_t(sendId), "runs before " + token(producer) + " at " +
                               relative(size_t(sendId), producer) +
                               " produces what it sends");
}

bool Verifier::checkOrder() {
  const int32_t numStages = s.getNumStages();
  const int32_t numMb = s.getNumMicrobatches();
  std::vector<int64_t> lastBackward(numStages, kNone);
  for (int32_t st = 0; st < numStages && !full(); ++st) {
    for (int32_t mb = 0; mb < numMb && !full(); ++mb) {
      size_t f = size_t(index.get(ActionKind::Forward, st, mb));
      size_t bwd = size_t(index.inputGradient(st, mb));
      int64_t w = index.get(ActionKind::BackwardWeight, st, mb);
      if (bwd < f)
        report(bwd, "runs before its forward " + token(f) + " at " +
                        relative(bwd, f));
      if (w != kNone && size_t(w) < bwd)
        report(size_t(w), "runs before its input-gradient backward " +
                              token(bwd) + " at " + relative(size_t(w), bwd));
      int64_t last = std::max<int64_t>(int64_t(bwd), w);
      lastBackward[st] = std::max(lastBackward[st], last);
      if (st > 0)
        checkEdge(size_t(index.get(ActionKind::Forward, st - 1, mb)), f,
                  /*forward=*/true);
      if (st + 1 < numStages)
        checkEdge(size_t(index.inputGradient(st + 1, mb)), bwd,
                  /*forward=*/false);
    }
    size_t step = size_t(index.get(ActionKind::OptimizerStep, st, -1));
    if (int64_t(step) < lastBackward[st])
      report(step, "runs before the last backward of stage " + Twine(st) +
                       ", " + token(size_t(lastBackward[st])) + " at " +
                       relative(step, size_t(lastBackward[st])));
  }
  return diags.empty();
}

void Verifier::checkDeadlock() {
  const int32_t numRanks = s.getNumRanks();
  if (hasCommunication) {
    std::vector<int64_t> partner(layout.size(), kNone);
    for (size_t id = 0; id < layout.size(); ++id) {
      const Action &a = layout.actions[id];
      if (isCommunication(a.kind))
        partner[id] = index.get(Schedule::getMatchingAction(a));
    }
    std::vector<size_t> reached = detail::runRendezvous(layout, partner);
    for (int32_t r = 0; r < numRanks; ++r) {
      if (reached[r] == layout.rankSize(r))
        continue;
      size_t id = layout.offsets[r] + reached[r];
      size_t other = size_t(partner[id]);
      int32_t q = layout.rankOf(other);
      size_t qid = layout.offsets[q] + reached[q];
      std::string peerState =
          reached[q] == layout.rankSize(q)
              ? ("which has finished its list")
              : ("which is blocked at position " + Twine(reached[q]) + " (" +
                 token(qid) + ")")
                    .str();
      report(id, "deadlock under blocking send/recv: waits for " +
                     token(other) + " at " + where(other) + ", " + peerState);
    }
    return;
  }
  std::vector<int64_t> dep;
  std::vector<double> delay;
  detail::buildImplicitDependencies(s, layout, index, 0.0, dep, delay);
  std::vector<double> cost(layout.size(), 1.0);
  detail::TimedRun run = detail::runTimed(layout, dep, delay, cost);
  if (run.complete)
    return;
  for (int32_t r = 0; r < numRanks; ++r) {
    if (run.reached[r] == layout.rankSize(r))
      continue;
    size_t id = layout.offsets[r] + run.reached[r];
    size_t d = size_t(dep[id]);
    int32_t q = layout.rankOf(d);
    std::string peerState =
        ("which is blocked at position " + Twine(run.reached[q]) + " (" +
         token(layout.offsets[q] + run.reached[q]) + ")")
            .str();
    report(id, "deadlock: waits for " + token(d) + " at " + where(d) + ", " +
                   peerState);
  }
}

} // namespace

std::vector<ScheduleDiagnostic> verifySchedule(const Schedule &s,
                                               unsigned maxDiagnostics) {
  return Verifier(s, maxDiagnostics).run();
}

Error verify(const Schedule &s, unsigned maxDiagnostics) {
  std::vector<ScheduleDiagnostic> diags = verifySchedule(s, maxDiagnostics);
  if (diags.empty())
    return Error::success();
  std::string msg = "schedule '" + s.getName() + "' is invalid:";
  for (const ScheduleDiagnostic &d : diags)
    msg += "\n  " + d.message;
  return makeScheduleError(msg);
}

} // namespace tessel::pipeline
