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

TEST(BufferPlanner, BestFitTakesTheSmallestHoleThatFits) {
  // At t=2 two holes are free, 1024 bytes (a's) and 256 bytes (b's), kept
  // apart by k; d (1024) takes a's exactly and c (256) b's.
  std::vector<BufferLifetime> b = {{1024, 0, 1}, {256, 0, 1}, {4096, 0, 9},
                                   {512, 0, 9},  {256, 2, 3}, {1024, 2, 3}};
  BufferPlan p = planBuffers(b);
  EXPECT_TRUE(isValidPlan(b, p));
  EXPECT_EQ(p.offsets[2], 0u); // the largest of the first instruction: lowest
  EXPECT_EQ(p.offsets[4], p.offsets[1]);
  EXPECT_EQ(p.offsets[5], p.offsets[0]);
  EXPECT_EQ(p.arenaSize, 4096u + 1024 + 512 + 256);
}

TEST(BufferPlanner, GrowsFromAFreeRangeAtTheTop) {
  // b dies, leaving 64 free bytes at the top; c (128) extends them rather
  // than starting above them.
  std::vector<BufferLifetime> b = {{64, 0, 5}, {64, 0, 0}, {128, 1, 2}};
  BufferPlan p = planBuffers(b);
  EXPECT_TRUE(isValidPlan(b, p));
  EXPECT_EQ(p.arenaSize, 192u);
}

TEST(BufferPlanner, OddLifetimesAndSizes) {
  // A last use before the first use counts as the first; zero-byte buffers
  // still get an aligned slot of their own.
  std::vector<BufferLifetime> b = {{100, 3, 1}, {0, 3, 3}, {10, 2, 4}};
  BufferPlan p = planBuffers(b, 32);
  EXPECT_TRUE(isValidPlan(b, p));
  for (uint64_t off : p.offsets)
    EXPECT_EQ(off % 32, 0u);
  EXPECT_EQ(p.arenaSize, 128u + 32 + 32);
  EXPECT_EQ(planBuffers({}).arenaSize, 0u);
}

TEST(BufferPlanner, LongChainsPackIntoTwoSlots) {
  // The compile-time benchmark's shape (bench/run-compile-scaling): a chain
  // of 100k buffers, each live for two instructions.
  std::vector<BufferLifetime> b;
  for (int64_t i = 0; i < 100000; ++i)
    b.push_back({1024, i, i + 1});
  BufferPlan p = planBuffers(b);
  EXPECT_EQ(p.arenaSize, 2048u);
  for (size_t i = 1; i < b.size(); ++i)
    ASSERT_NE(p.offsets[i], p.offsets[i - 1]);
}

TEST(BufferPlanner, NeverWorseThanTheAllPairsPlanner) {
  std::mt19937 rng(18);
  for (int trial = 0; trial < 300; ++trial) {
    int n = 1 + rng() % 200;
    std::vector<BufferLifetime> b;
    for (int i = 0; i < n; ++i) {
      int64_t f = rng() % 100;
      // Mostly short lives, some long (saved activations, inputs).
      int64_t len = rng() % 8 ? rng() % 6 : rng() % 100;
      b.push_back({static_cast<uint64_t>(1 + rng() % 100000), f, f + len});
    }
    BufferPlan p = planBuffers(b, 64);
    ASSERT_TRUE(isValidPlan(b, p));
    EXPECT_LE(p.arenaSize, planBuffersAllPairs(b, 64).arenaSize)
        << "trial " << trial;
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

// Sizes come from the model: buffers whose aligned sizes sum past 2^64
// get no plan (kNoArena) rather than offsets that wrapped.
TEST(BufferPlanner, SizesSummingPast64BitsGetNoPlan) {
  const uint64_t big = uint64_t(1) << 62;
  std::vector<BufferLifetime> b(5, BufferLifetime{big, 0, 1});
  BufferPlan plan = planBuffers(b);
  EXPECT_EQ(plan.arenaSize, kNoArena);
  ASSERT_EQ(plan.offsets.size(), b.size());
  b.pop_back();
  b.pop_back();
  // Three of 2^62 fit: a real plan of 3 * 2^62 bytes.
  plan = planBuffers(b);
  EXPECT_EQ(plan.arenaSize, 3 * big);
  EXPECT_TRUE(isValidPlan(b, plan));
  // A size near 2^64 that rounding up to the alignment would wrap.
  plan = planBuffers({BufferLifetime{UINT64_MAX - 3, 0, 0}});
  EXPECT_EQ(plan.arenaSize, kNoArena);
}
