//===- BufferPlannerTest.cpp - Liveness-based arena planning --------------===//
#include "tessel/runtime/BufferPlanner.h"

#include <gtest/gtest.h>

#include <random>

using namespace tessel::runtime;

namespace {

TEST(BufferPlanner, ReusesMemoryOfDeadBuffers) {
  // A chain a -> b -> c -> d: at most two buffers live at once.
  std::vector<BufferLifetime> b = {{1000, 0, 1}, {1000, 1, 2}, {1000, 2, 3}, {1000, 3, 4}};
  BufferPlan p = planBuffers(b);
  EXPECT_TRUE(isValidPlan(b, p));
  EXPECT_EQ(p.arenaSize, 2 * 1024u);
  for (uint64_t off : p.offsets)
    EXPECT_EQ(off % 64, 0u);
}

TEST(BufferPlanner, DisjointLifetimesShareOffsetZero) {
  std::vector<BufferLifetime> b = {{100, 0, 0}, {200, 1, 1}, {50, 2, 2}};
  BufferPlan p = planBuffers(b);
  EXPECT_TRUE(isValidPlan(b, p));
  EXPECT_EQ(p.arenaSize, 256u);
  EXPECT_EQ(p.offsets, (std::vector<uint64_t>{0, 0, 0}));
}

TEST(BufferPlanner, RandomProgramsAreValidAndNotWorseThanNoReuse) {
  std::mt19937 rng(61);
  for (int trial = 0; trial < 200; ++trial) {
    int n = 1 + rng() % 60;
    std::vector<BufferLifetime> b;
    uint64_t total = 0;
    for (int i = 0; i < n; ++i) {
      int64_t f = rng() % 50;
      b.push_back({static_cast<uint64_t>(rng() % 5000), f, f + static_cast<int64_t>(rng() % 10)});
      total += (b.back().size + 63) / 64 * 64;
    }
    BufferPlan p = planBuffers(b, 64);
    ASSERT_TRUE(isValidPlan(b, p));
    EXPECT_LE(p.arenaSize, std::max<uint64_t>(total, 64 * n));
    // Lower bound: the largest set of simultaneously live bytes.
    uint64_t peak = 0;
    for (int64_t t = 0; t < 60; ++t) {
      uint64_t live = 0;
      for (auto &l : b)
        if (l.firstUse <= t && t <= l.lastUse)
          live += l.size;
      peak = std::max(peak, live);
    }
    EXPECT_GE(p.arenaSize, peak);
  }
}

TEST(BufferPlanner, DetectsInvalidPlans) {
  std::vector<BufferLifetime> b = {{100, 0, 2}, {100, 1, 3}};
  BufferPlan p;
  p.offsets = {0, 64};
  p.arenaSize = 256;
  EXPECT_FALSE(isValidPlan(b, p));
  p.offsets = {0, 128};
  EXPECT_TRUE(isValidPlan(b, p));
}

} // namespace
