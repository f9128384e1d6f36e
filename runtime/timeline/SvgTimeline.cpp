//===- SvgTimeline.cpp - Staircase pictures of pipeline runs --------------===//
#include "tessel/timeline/SvgTimeline.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace tessel::timeline {

namespace {

const char *colourOf(BoxKind k) {
  switch (k) {
  case BoxKind::Forward:
    return "#4e79a7";
  case BoxKind::BackwardInput:
    return "#2ca58d";
  case BoxKind::BackwardWeight:
    return "#9467bd";
  case BoxKind::FullBackward:
    return "#59a14f";
  default:
    return "#9c9c9c";
  }
}

void escape(std::ostream &os, const std::string &text) {
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

} // namespace

bool boxKindOf(const std::string &phase, BoxKind &kind) {
  if (phase == "F")
    kind = BoxKind::Forward;
  else if (phase == "B")
    kind = BoxKind::BackwardInput;
  else if (phase == "W")
    kind = BoxKind::BackwardWeight;
  else if (phase == "BW")
    kind = BoxKind::FullBackward;
  else if (phase == "STEP")
    kind = BoxKind::OptimizerStep;
  else
    return false;
  return true;
}

std::string formatNumber(double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.2f", v);
  std::string s = buf;
  // Drop trailing zeros: "12.50" -> "12.5", "3.00" -> "3".
  while (!s.empty() && s.back() == '0')
    s.pop_back();
  if (!s.empty() && s.back() == '.')
    s.pop_back();
  return s;
}

void writeSvg(std::ostream &os, const Picture &p) {
  auto num = formatNumber;
  const double left = 78, top = 52, rowHeight = 26, rowGap = 6, right = 24;
  const int numRanks = p.rows;
  const double stepTime = p.span > 0 ? p.span : 1.0;
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
  escape(os, p.heading);
  os << "</text>\n";

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

  for (int r = 0; r < numRanks; ++r) {
    double y = top + r * (rowHeight + rowGap);
    os << "<text x=\"" << num(left - 10) << "\" y=\""
       << num(y + rowHeight / 2 + 4)
       << "\" font-size=\"12\" text-anchor=\"end\">rank " << r << "</text>\n";
    os << "<rect x=\"" << num(left) << "\" y=\"" << num(y) << "\" width=\""
       << num(plotWidth) << "\" height=\"" << num(rowHeight)
       << "\" fill=\"#f4f4f4\"/>\n";
    for (const Box &b : p.boxes) {
      if (b.row != r || b.end <= b.start)
        continue;
      double x = left + b.start * scale, w = (b.end - b.start) * scale;
      os << "<g><title>";
      escape(os, b.title);
      os << "</title><rect x=\"" << num(x) << "\" y=\"" << num(y)
         << "\" width=\"" << num(w) << "\" height=\"" << num(rowHeight)
         << "\" fill=\"" << colourOf(b.kind) << '"';
      if (b.lighter)
        os << " fill-opacity=\"0.6\"";
      if (w >= 3)
        os << " stroke=\"white\" stroke-width=\"1\"";
      os << "/>";
      if (w >= 14 && b.kind != BoxKind::OptimizerStep)
        os << "<text x=\"" << num(x + w / 2) << "\" y=\""
           << num(y + rowHeight / 2 + 4)
           << "\" font-size=\"11\" fill=\"white\" text-anchor=\"middle\">"
           << b.microbatch << "</text>";
      os << "</g>\n";
    }
  }

  // Legend.
  const std::pair<const char *, BoxKind> legend[] = {
      {"F forward", BoxKind::Forward},
      {"B input gradient", BoxKind::BackwardInput},
      {"W weight gradient", BoxKind::BackwardWeight},
      {"BW full backward", BoxKind::FullBackward},
      {"STEP optimizer", BoxKind::OptimizerStep}};
  double x = left, y = plotBottom + 36;
  for (const auto &[label, kind] : legend) {
    os << "<rect x=\"" << num(x) << "\" y=\"" << num(y - 11)
       << "\" width=\"14\" height=\"14\" fill=\"" << colourOf(kind)
       << "\"/><text x=\"" << num(x + 20) << "\" y=\"" << num(y)
       << "\" font-size=\"12\">" << label << "</text>\n";
    x += 150;
  }
  os << "<text x=\"" << num(left) << "\" y=\"" << num(y + 22)
     << "\" font-size=\"11\" fill=\"#555555\">";
  escape(os, p.note);
  os << "</text>\n";
  os << "</svg>\n";
}

} // namespace tessel::timeline
