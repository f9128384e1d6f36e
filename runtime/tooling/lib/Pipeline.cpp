//===- Pipeline.cpp - What tessel-run measures of pipelined runs ----------===//
#include "tessel/tooling/Pipeline.h"

#include "tessel/tooling/Trace.h"
#include "tessel/timeline/SvgTimeline.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <limits>
#include <sstream>

namespace tessel::tooling {

using runtime::Status;

std::vector<ActionSpan>
actionSpans(const runtime::Program &program,
            const std::vector<runtime::TraceEvent> &events) {
  std::vector<ActionSpan> spans;
  for (const runtime::TraceEvent &e : events) {
    const runtime::PipelineAction &a = program.ops[e.op].action;
    if (a.empty())
      continue;
    ActionSpan *last = spans.empty() ? nullptr : &spans.back();
    if (last && last->action.phase == a.phase &&
        last->action.stage == a.stage &&
        last->action.microbatch == a.microbatch) {
      last->endUs = e.beginUs + e.durUs;
      continue;
    }
    spans.push_back({a, e.beginUs, e.beginUs + e.durUs});
  }
  return spans;
}

std::string BubbleMeter::describe(const char *unit) const {
  if (wallUs <= 0)
    return "bubble not measured (this backend does not time its runs)";
  char buf[256];
  const double n = runs > 0 ? runs : 1;
  std::snprintf(buf, sizeof(buf),
                "bubble %.1f%% (blocked in recv/wait %.3f ms of %.3f ms per "
                "%s, mean of %d %s%s)",
                wallUs > 0 ? 100.0 * idleUs / wallUs : 0.0, idleUs / n / 1000,
                wallUs / n / 1000, unit, runs, unit, runs == 1 ? "" : "s");
  return buf;
}

Status writeTimelineSpans(const std::string &path, int rank,
                          const runtime::Program &program,
                          const std::vector<runtime::TraceEvent> &events,
                          const BubbleMeter &bubble) {
  std::ostringstream os;
  os.precision(17);
  os << "bubble " << (bubble.wallUs > 0 ? bubble.idleUs / bubble.wallUs : 0.0)
     << '\n';
  for (const ActionSpan &s : actionSpans(program, events)) {
    timeline::BoxKind kind;
    if (timeline::boxKindOf(s.action.phase, kind))
      os << s.action.phase << ' ' << s.action.stage << ' '
         << s.action.microbatch << ' ' << s.beginUs << ' ' << s.endUs << '\n';
  }
  return writeTextFile(rankTracePath(path, rank), os.str(), "timeline spans");
}

Status mergeTimeline(const std::string &path, int ranks,
                     const std::string &heading) {
  timeline::Picture p;
  p.rows = ranks;
  std::string bubbles;
  double t0 = std::numeric_limits<double>::infinity(), t1 = -t0;
  TSL_RETURN_IF_ERROR(readRankFiles(
      path, ranks, "timeline",
      [&](int r, const std::string &part, std::istream &f) -> Status {
        std::string phase;
        int stage, mb;
        double b, e, fraction = 0;
        if (!(f >> phase >> fraction) || phase != "bubble")
          return Status::error(part + ": not a timeline of tessel-run");
        char pct[32];
        std::snprintf(pct, sizeof(pct), "%.1f%%", 100 * fraction);
        bubbles += (r ? ", " : "") + std::string(pct);
        while (f >> phase >> stage >> mb >> b >> e) {
          timeline::Box box;
          if (!timeline::boxKindOf(phase, box.kind))
            return Status::error(part + ": unknown phase '" + phase + "'");
          box.row = r;
          box.microbatch = mb;
          box.start = b;
          box.end = e;
          box.title = phase + " " + std::to_string(stage) +
                      (mb >= 0 ? "." + std::to_string(mb) : "") + " on rank " +
                      std::to_string(r);
          t0 = std::min(t0, b);
          t1 = std::max(t1, e);
          p.boxes.push_back(std::move(box));
        }
        return Status::ok();
      }));
  if (p.boxes.empty())
    t0 = t1 = 0;
  // Milliseconds from the first span of any rank (the steady clock is
  // shared by the processes of a host).
  for (timeline::Box &box : p.boxes) {
    box.start = (box.start - t0) / 1000;
    box.end = (box.end - t0) / 1000;
    box.title += ": " + timeline::formatNumber(box.start) + " to " +
                 timeline::formatNumber(box.end) + " ms";
  }
  p.span = (t1 - t0) / 1000;
  p.heading = heading + "; step time " + timeline::formatNumber(p.span) +
              " ms, bubble per rank " + bubbles;
  p.note = "measured by tessel-run: the last step's actions, in ms; numbers "
           "are microbatches; hover for details";
  std::ostringstream svg;
  timeline::writeSvg(svg, p);
  return replaceRankFiles(path, ranks, svg.str(), "timeline");
}

} // namespace tessel::tooling
