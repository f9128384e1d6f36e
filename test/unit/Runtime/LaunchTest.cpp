//===- LaunchTest.cpp - where tessel-run -n N puts its ranks --------------===//
//
// placementSlot: with fewer cores than ranks, neighbouring slots share a
// core. The expected slots are worked out by hand from the mesh's
// coordinates (the compiler numbers ranks row-major, the last axis
// fastest); bind-cores.test checks the binding the launcher makes of them.
//
//===----------------------------------------------------------------------===//
#include "tessel/tooling/Launch.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

using tessel::tooling::MeshAxes;
using tessel::tooling::placementSlot;

namespace {

std::vector<int> slots(const MeshAxes &mesh, int n) {
  std::vector<int> out;
  for (int r = 0; r < n; ++r)
    out.push_back(placementSlot(r, n, mesh));
  return out;
}

TEST(PlacementSlot, TensorParallelGroupsSpreadOverTheCores) {
  // dp=2 x tp=2: rank (dp, tp) = 2 dp + tp; slot 2 tp + dp. On 2 cores
  // (slot * 2 / 4): tp 0 on core 0, tp 1 on core 1; each core holds one
  // rank of each dp replica.
  EXPECT_EQ(slots({{"dp", 2}, {"tp", 2}}, 4), (std::vector<int>{0, 2, 1, 3}));
  // pp=2 x tp=2: rank 2 pp + tp; slot 2 tp + pp: each core holds one rank
  // of each stage, whichever order the mesh names them in.
  EXPECT_EQ(slots({{"pp", 2}, {"tp", 2}}, 4), (std::vector<int>{0, 2, 1, 3}));
  EXPECT_EQ(slots({{"tp", 2}, {"pp", 2}}, 4), (std::vector<int>{0, 1, 2, 3}));
}

TEST(PlacementSlot, PipelineBeforeDataAxis) {
  // The hybrid plugin's order dp, tp, pp: rank 4 dp + 2 tp + pp; slot
  // 4 tp + 2 pp + dp.
  EXPECT_EQ(slots({{"dp", 2}, {"tp", 2}, {"pp", 2}}, 8),
            (std::vector<int>{0, 2, 4, 6, 1, 3, 5, 7}));
  // dp=2 x pp=2: rank 2 dp + pp; slot 2 pp + dp.
  EXPECT_EQ(slots({{"dp", 2}, {"pp", 2}}, 4), (std::vector<int>{0, 2, 1, 3}));
}

TEST(PlacementSlot, OneAxisKeepsRankOrder) {
  for (const char *axis : {"dp", "tp", "pp", "sp"})
    EXPECT_EQ(slots({{axis, 4}}, 4), (std::vector<int>{0, 1, 2, 3})) << axis;
}

TEST(PlacementSlot, AnyOtherAxisCountsAsAModelAxis) {
  // "sp" (sequence) ranks with tp, ahead of dp: rank 2 dp + sp; slot
  // 2 sp + dp.
  EXPECT_EQ(slots({{"dp", 2}, {"sp", 2}}, 4), (std::vector<int>{0, 2, 1, 3}));
}

TEST(PlacementSlot, AMeshThatIsNotTheWorldKeepsRankOrder) {
  std::vector<int> identity(6);
  std::iota(identity.begin(), identity.end(), 0);
  EXPECT_EQ(slots({}, 6), identity);
  EXPECT_EQ(slots({{"dp", 2}, {"tp", 2}}, 6), identity);
  EXPECT_EQ(slots({{"dp", 0}, {"tp", 6}}, 6), identity);
  EXPECT_EQ(slots({{"dp", -2}, {"tp", -3}}, 6), identity);
}

TEST(PlacementSlot, SlotsArePermutations) {
  const std::vector<MeshAxes> meshes = {
      {{"dp", 3}, {"tp", 2}, {"pp", 2}},
      {{"pp", 2}, {"dp", 2}, {"tp", 3}},
      {{"tp", 2}, {"sp", 3}, {"dp", 2}},
      {{"dp", 1}, {"tp", 4}, {"pp", 3}}};
  for (const MeshAxes &mesh : meshes) {
    int n = 1;
    for (const auto &axis : mesh)
      n *= static_cast<int>(axis.second);
    std::vector<int> s = slots(mesh, n);
    std::sort(s.begin(), s.end());
    std::vector<int> identity(n);
    std::iota(identity.begin(), identity.end(), 0);
    EXPECT_EQ(s, identity);
  }
}

} // namespace
