//===- SvgTimeline.cpp - Staircase picture of a schedule ------------------===//
//
// A standalone SVG: one row per rank, time to the right, one box per compute
// action coloured by kind (F blue, B teal, W purple, BW green, STEP grey),
// microbatch numbers inside the boxes when they fit, a hover title on each
// box. A rank's second and later chunks are drawn lighter.
//
//===----------------------------------------------------------------------===//

#include "tessel/Schedule/Timeline.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cmath>

using namespace llvm;

namespace tessel::pipeline {

static const char *colourOf(ActionKind k) {
  switch (k) {
  case ActionKind::Forward:
    return "#4e79a7";
  case ActionKind::BackwardInput:
    return "#2ca58d";
  case ActionKind::BackwardWeight:
    return "#9467bd";
  case ActionKind::FullBackward:
    return "#59a14f";
  default:
    return "#9c9c9c";
  }
}

static void escape(raw_ostream &os, StringRef text) {
  for (char c : text) {
    switch (c) {
    case '<':
      os << "&lt;";
      break;
    case '>':
      os << "&gt;";
      break;
    case '&':
      os << "&amp;";
      break;
    case '"':
      os << "&quot;";
      break;
    default:
      os << c;
    }
  }
}

/// Short decimal for coordinates.
static std::string num(double v) {
  std::string s;
  raw_string_ostream os(s);
  os << format("%.2f", v);
  // Drop trailing zeros: "12.50" -> "12.5", "3.00" -> "3".
  while (!s.empty() && s.back() == '0')
    s.pop_back();
  if (!s.empty() && s.back() == '.')
    s.pop_back();
  return s;
}

void writeSvgTimeline(raw_ostream &os, const Schedule &s,
                      const SimulationResult &sim) {
  const double left = 78, top = 52, rowHeight = 26, rowGap = 6, right = 24;
  const int32_t numRanks = s.getNumRanks();
  const double stepTime = sim.stepTime > 0 ? sim.stepTime : 1.0;
  const double plotWidth = std::clamp(stepTime * 28.0, 640.0, 4800.0);
  const double scale = plotWidth / stepTime;
  const double plotBottom = top + numRanks * (rowHeight + rowGap);
  const double width = left + plotWidth + right;
  const double height = plotBottom + 72;

  os << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << num(width)
     << "\" height=\"" << num(height) << "\" viewBox=\"0 0 " << num(width)
     << ' ' << num(height) << "\" font-family=\"sans-serif\">\n";
  os << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  os << "<text x=\"" << num(left) << "\" y=\"24\" font-size=\"15\">";
  escape(os, s.getName());
  os << ": " << numRanks << " ranks, " << s.getNumStages() << " stages, "
     << s.getNumMicrobatches() << " microbatches; step time "
     << num(sim.stepTime) << ", bubble fraction "
     << format("%.4f", sim.meanBubbleFraction) << "</text>\n";

  // Time axis: about ten ticks at a round step.
  double tick = std::pow(10.0, std::floor(std::log10(stepTime / 10.0)));
  if (stepTime / tick > 50)
    tick *= 5;
  else if (stepTime / tick > 20)
    tick *= 2;
  os << "<g stroke=\"#dddddd\" stroke-width=\"1\">\n";
  for (double t = 0; t <= stepTime + 1e-9; t += tick)
    os << "<line x1=\"" << num(left + t * scale) << "\" y1=\"" << num(top - 6)
       << "\" x2=\"" << num(left + t * scale) << "\" y2=\"" << num(plotBottom)
       << "\"/>\n";
  os << "</g>\n<g font-size=\"10\" fill=\"#555555\" text-anchor=\"middle\">\n";
  for (double t = 0; t <= stepTime + 1e-9; t += tick)
    os << "<text x=\"" << num(left + t * scale) << "\" y=\""
       << num(plotBottom + 14) << "\">" << num(t) << "</text>\n";
  os << "</g>\n";

  for (int32_t r = 0; r < numRanks; ++r) {
    double y = top + r * (rowHeight + rowGap);
    os << "<text x=\"" << num(left - 10) << "\" y=\""
       << num(y + rowHeight / 2 + 4)
       << "\" font-size=\"12\" text-anchor=\"end\">rank " << r << "</text>\n";
    os << "<rect x=\"" << num(left) << "\" y=\"" << num(y) << "\" width=\""
       << num(plotWidth) << "\" height=\"" << num(rowHeight)
       << "\" fill=\"#f4f4f4\"/>\n";
    ArrayRef<Action> actions = s.getActions(r);
    for (size_t i = 0; i < actions.size(); ++i) {
      const Action &a = actions[i];
      if (!isCompute(a.kind))
        continue;
      double start = sim.getStart(r, i), end = sim.getEnd(r, i);
      if (end <= start)
        continue;
      double x = left + start * scale, w = (end - start) * scale;
      os << "<g><title>";
      printAction(os, a);
      os << " on rank " << r << ": " << num(start) << " to " << num(end)
         << "</title><rect x=\"" << num(x) << "\" y=\"" << num(y)
         << "\" width=\"" << num(w) << "\" height=\"" << num(rowHeight)
         << "\" fill=\"" << colourOf(a.kind) << '"';
      if (s.getChunk(a.stage) % 2 == 1)
        os << " fill-opacity=\"0.6\"";
      if (w >= 3)
        os << " stroke=\"white\" stroke-width=\"1\"";
      os << "/>";
      if (w >= 14 && a.kind != ActionKind::OptimizerStep)
        os << "<text x=\"" << num(x + w / 2) << "\" y=\""
           << num(y + rowHeight / 2 + 4)
           << "\" font-size=\"11\" fill=\"white\" text-anchor=\"middle\">"
           << a.microbatch << "</text>";
      os << "</g>\n";
    }
  }

  // Legend.
  const std::pair<const char *, ActionKind> legend[] = {
      {"F forward", ActionKind::Forward},
      {"B input gradient", ActionKind::BackwardInput},
      {"W weight gradient", ActionKind::BackwardWeight},
      {"BW full backward", ActionKind::FullBackward},
      {"STEP optimizer", ActionKind::OptimizerStep}};
  double x = left, y = plotBottom + 36;
  for (const auto &[label, kind] : legend) {
    os << "<rect x=\"" << num(x) << "\" y=\"" << num(y - 11)
       << "\" width=\"14\" height=\"14\" fill=\"" << colourOf(kind)
       << "\"/><text x=\"" << num(x + 20) << "\" y=\"" << num(y)
       << "\" font-size=\"12\">" << label << "</text>\n";
    x += 150;
  }
  os << "<text x=\"" << num(left) << "\" y=\"" << num(y + 22)
     << "\" font-size=\"11\" fill=\"#555555\">numbers are microbatches; "
        "lighter boxes are a rank's odd-numbered chunks; hover for "
        "details</text>\n";
  os << "</svg>\n";
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
