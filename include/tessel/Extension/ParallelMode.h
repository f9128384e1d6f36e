//===- ParallelMode.h - A named kind of mesh axis ---------------*- C++ -*-===//
//
// Colossal-AI's ProcessGroupInitializer: a parallel mode names how the ranks
// of one mesh axis form their communication groups. Tessel's built-in axes
// group the ranks that differ only in that axis's coordinate; a parallel
// mode may form other groups (the 2D tensor-parallel row and column groups
// of a `tp2d=4` axis: two sub-axes of size 2).
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_EXTENSION_PARALLELMODE_H
#define TESSEL_EXTENSION_PARALLELMODE_H

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace tessel::ext {

/// The sub-axes an axis of this mode stands for: `--mesh tp2d=4` with a mode
/// whose split gives {{"row", 2}, {"col", 2}} is the mesh row=2,col=2 (row
/// major), so that plans shard over "tp2d.row" and "tp2d.col".
struct ParallelModeDef {
  std::string name;
  std::string description;
  /// Fills `subAxes` for an axis of this mode of `size`; returns "" or why
  /// the size does not fit (e.g. not a square).
  std::function<std::string(int64_t size,
                            std::vector<std::pair<std::string, int64_t>> &subAxes)>
      split;
};

} // namespace tessel::ext

#endif // TESSEL_EXTENSION_PARALLELMODE_H
