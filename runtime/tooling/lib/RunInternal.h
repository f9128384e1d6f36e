//===- RunInternal.h - What Run.cpp and RankRun.cpp share --------*- C++ -*-===//
#ifndef TESSEL_TOOLING_LIB_RUNINTERNAL_H
#define TESSEL_TOOLING_LIB_RUNINTERNAL_H

#include "tessel/tooling/Run.h"
#include "tessel/runtime/Runtime.h"

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace tessel::tooling {

/// The artifact must be compiled for as many ranks as were started (a
/// single process may still run one rank's program with --rank): 0, or the
/// error reported through `out` and 1. `how` says who started them.
int checkRanks(const RunOptions &o, const RunReporter &out,
               const runtime::Artifact &artifact, int started,
               const std::string &how);

/// Names a group of world ranks by the mesh axes along which its members
/// differ ("dp", "dp,tp"), the mesh's first axis major; "" when the group
/// is no such line or plane.
std::function<std::string(const std::vector<int> &)>
meshGroupNamer(std::vector<std::pair<std::string, int64_t>> mesh);

} // namespace tessel::tooling

#endif // TESSEL_TOOLING_LIB_RUNINTERNAL_H
