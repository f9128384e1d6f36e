//===- SvgTimeline.cpp - Staircase picture of a schedule ------------------===//
//
// A simulated schedule as tessel/timeline/SvgTimeline.h's picture (shared
// with tessel-run's measured timelines): a box per compute action at its
// simulated times; a rank's odd-numbered chunks are drawn lighter.
//
//===----------------------------------------------------------------------===//

#include "tessel/Schedule/Timeline.h"
#include "tessel/timeline/SvgTimeline.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <sstream>

using namespace llvm;

namespace tessel::pipeline {

void writeSvgTimeline(raw_ostream &os, const Schedule &s,
                      const SimulationResult &sim) {
  timeline::Picture p;
  p.rows = s.getNumRanks();
  p.span = sim.stepTime;
  {
    raw_string_ostream h(p.heading);
    h << s.getName() << ": " << p.rows << " ranks, " << s.getNumStages()
      << " stages, " << s.getNumMicrobatches() << " microbatches; step time "
      << timeline::formatNumber(sim.stepTime) << ", bubble fraction "
      << format("%.4f", sim.meanBubbleFraction);
  }
  for (int32_t r = 0; r < p.rows; ++r) {
    ArrayRef<Action> actions = s.getActions(r);
    for (size_t i = 0; i < actions.size(); ++i) {
      const Action &a = actions[i];
      if (!isCompute(a.kind))
        continue;
      timeline::Box b;
      b.row = r;
      switch (a.kind) {
      case ActionKind::Forward:
        b.kind = timeline::BoxKind::Forward;
        break;
      case ActionKind::BackwardInput:
        b.kind = timeline::BoxKind::BackwardInput;
        break;
      case ActionKind::BackwardWeight:
        b.kind = timeline::BoxKind::BackwardWeight;
        break;
      case ActionKind::FullBackward:
        b.kind = timeline::BoxKind::FullBackward;
        break;
      default:
        b.kind = timeline::BoxKind::OptimizerStep;
      }
      b.microbatch = a.microbatch;
      b.start = sim.getStart(r, i);
      b.end = sim.getEnd(r, i);
      b.lighter = s.getChunk(a.stage) % 2 == 1;
      raw_string_ostream t(b.title);
      printAction(t, a);
      t << " on rank " << r << ": " << timeline::formatNumber(b.start)
        << " to " << timeline::formatNumber(b.end);
      t.flush();
      p.boxes.push_back(std::move(b));
    }
  }
  p.note = "numbers are microbatches; lighter boxes are a rank's "
           "odd-numbered chunks; hover for details";
  std::ostringstream out;
  timeline::writeSvg(out, p);
  os << out.str();
}

Error writeTimelineFile(StringRef path, const Schedule &s,
                        const SimulationResult &sim) {
  StringRef ext = sys::path::extension(path);
  bool json = ext.equals_insensitive(".json");
  if (!json && !ext.equals_insensitive(".svg"))
    return makeScheduleError("timeline file '" + path +
                             "' must end in .json (Chrome trace) or .svg");
  std::error_code ec;
  raw_fd_ostream os(path, ec, sys::fs::OF_Text);
  if (ec)
    return makeScheduleError("cannot write timeline file '" + path +
                             "': " + ec.message());
  if (json)
    writeChromeTrace(os, s, sim);
  else
    writeSvgTimeline(os, s, sim);
  os.close();
  if (os.has_error()) {
    std::error_code writeError = os.error();
    os.clear_error();
    return makeScheduleError("cannot write timeline file '" + path +
                             "': " + writeError.message());
  }
  return Error::success();
}

} // namespace tessel::pipeline
