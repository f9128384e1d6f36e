//===- SvgTimeline.h - Staircase pictures of pipeline runs ------*- C++ -*-===//
//
// A standalone SVG: one row per rank, time to the right, one box per
// compute action coloured by kind (F blue, B teal, W purple, BW green, STEP
// grey), microbatch numbers inside the boxes when they fit, a hover title
// on each box; boxes marked `lighter` (a rank's odd-numbered chunks) are
// drawn lighter. Plain C++, no dependencies: the schedule library draws
// simulated runs with it, tessel-run measured ones.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_TIMELINE_SVGTIMELINE_H
#define TESSEL_TIMELINE_SVGTIMELINE_H

#include <ostream>
#include <string>
#include <vector>

namespace tessel::timeline {

enum class BoxKind {
  Forward,        // F
  BackwardInput,  // B
  BackwardWeight, // W
  FullBackward,   // BW
  OptimizerStep,  // STEP
};

struct Box {
  int row = 0;
  BoxKind kind = BoxKind::Forward;
  int microbatch = 0;
  double start = 0, end = 0;
  bool lighter = false;
  std::string title; // the hover text
};

struct Picture {
  std::string heading;           // the line above the rows
  int rows = 0;                  // labelled "rank 0", "rank 1", ...
  double span = 0;               // the time axis runs from 0 to span
  std::vector<Box> boxes;
  std::string note;              // the small print under the legend
};

/// The kind of phase "F", "B", "W", "BW" or "STEP"; false for others.
bool boxKindOf(const std::string &phase, BoxKind &kind);

/// A short decimal for coordinates and labels: "12.5", "3".
std::string formatNumber(double v);

void writeSvg(std::ostream &os, const Picture &picture);

} // namespace tessel::timeline

#endif // TESSEL_TIMELINE_SVGTIMELINE_H
