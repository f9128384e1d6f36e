//===- ChromeTrace.cpp - Chrome-trace / Perfetto JSON of a schedule -------===//

#include "tessel/Schedule/Timeline.h"

#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

using namespace llvm;

namespace tessel::pipeline {

/// One cost unit is shown as one millisecond; trace timestamps are in µs.
static double toMicros(double t) { return t * 1000.0; }

static StringRef categoryOf(ActionKind k) {
  switch (k) {
  case ActionKind::SendForward:
  case ActionKind::SendBackward:
    return "send";
  case ActionKind::RecvForward:
  case ActionKind::RecvBackward:
    return "recv";
  default:
    return getActionKindName(k);
  }
}

void writeChromeTrace(raw_ostream &os, const Schedule &s,
                      const SimulationResult &sim) {
  json::OStream j(os);
  j.objectBegin();
  j.attribute("displayTimeUnit", "ms");
  j.attributeObject("otherData", [&] {
    j.attribute("schedule", s.getName());
    j.attribute("ranks", s.getNumRanks());
    j.attribute("stages", s.getNumStages());
    j.attribute("microbatches", s.getNumMicrobatches());
    j.attribute("step_time", sim.stepTime);
    j.attribute("bubble_fraction", sim.meanBubbleFraction);
  });
  j.attributeArray("traceEvents", [&] {
    j.object([&] {
      j.attribute("name", "process_name");
      j.attribute("ph", "M");
      j.attribute("pid", 0);
      j.attributeObject("args", [&] {
        j.attribute("name", "pipeline schedule '" + s.getName() + "'");
      });
    });
    for (int32_t r = 0; r < s.getNumRanks(); ++r) {
      j.object([&] {
        j.attribute("name", "thread_name");
        j.attribute("ph", "M");
        j.attribute("pid", 0);
        j.attribute("tid", r);
        j.attributeObject(
            "args", [&] { j.attribute("name", "rank " + std::to_string(r)); });
      });
      j.object([&] {
        j.attribute("name", "thread_sort_index");
        j.attribute("ph", "M");
        j.attribute("pid", 0);
        j.attribute("tid", r);
        j.attributeObject("args", [&] { j.attribute("sort_index", r); });
      });
    }
    for (int32_t r = 0; r < s.getNumRanks(); ++r) {
      ArrayRef<Action> actions = s.getActions(r);
      double previousEnd = 0;
      for (size_t i = 0; i < actions.size(); ++i) {
        const Action &a = actions[i];
        double start = sim.getStart(r, i), end = sim.getEnd(r, i);
        // A receive is drawn from when the rank reaches it, so waiting shows.
        if (isRecv(a.kind))
          start = previousEnd;
        previousEnd = end;
        j.object([&] {
          j.attribute("name", formatAction(a));
          j.attribute("cat", categoryOf(a.kind));
          j.attribute("ph", "X");
          j.attribute("pid", 0);
          j.attribute("tid", r);
          j.attribute("ts", toMicros(start));
          j.attribute("dur", toMicros(end - start));
          j.attributeObject("args", [&] {
            j.attribute("stage", a.stage);
            j.attribute("chunk", s.getChunk(a.stage));
            if (a.kind != ActionKind::OptimizerStep)
              j.attribute("microbatch", a.microbatch);
            if (isCommunication(a.kind)) {
              j.attribute("peer_rank", s.getPeerRank(a));
              j.attribute("tag", s.getMessageTag(a));
            }
          });
        });
        if (isCommunication(a.kind)) {
          // Flow arrow from the send to the end of its receive.
          j.object([&] {
            j.attribute("name", "p2p");
            j.attribute("cat", "p2p");
            j.attribute("ph", isSend(a.kind) ? "s" : "f");
            if (isRecv(a.kind))
              j.attribute("bp", "e");
            j.attribute("id", s.getMessageTag(a));
            j.attribute("pid", 0);
            j.attribute("tid", r);
            j.attribute("ts", toMicros(isSend(a.kind) ? start : end));
          });
        }
      }
    }
  });
  j.objectEnd();
  os << '\n';
}

} // namespace tessel::pipeline
