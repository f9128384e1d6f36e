//===- ReshapeFactorsTest.cpp - factorReshape -----------------------------===//

#include "dialects/tessel/ShardingRuleBuilder.h"

#include <gtest/gtest.h>

using namespace mlir::tessel;
using V = std::vector<int64_t>;

static std::vector<V> dimsOf(const llvm::SmallVector<llvm::SmallVector<int64_t>> &d) {
  std::vector<V> out;
  for (const auto &x : d)
    out.emplace_back(x.begin(), x.end());
  return out;
}

TEST(ReshapeFactors, HeadSplitIsCompound) {
  // [b, t, d] -> [b, t, h, d/h]: d is the product of the head factors.
  ReshapeFactors r = factorReshape({2, 32, 64}, {2, 32, 4, 16});
  EXPECT_EQ(V(r.sizes.begin(), r.sizes.end()), (V{2, 32, 4, 16}));
  EXPECT_EQ(dimsOf(r.inDims), (std::vector<V>{{0}, {1}, {2, 3}}));
  EXPECT_EQ(dimsOf(r.outDims), (std::vector<V>{{0}, {1}, {2}, {3}}));
  EXPECT_TRUE(llvm::all_of(r.shardable, [](bool b) { return b; }));
}

TEST(ReshapeFactors, MergeIsCompound) {
  ReshapeFactors r = factorReshape({4, 6}, {24});
  EXPECT_EQ(V(r.sizes.begin(), r.sizes.end()), (V{4, 6}));
  EXPECT_EQ(dimsOf(r.outDims), (std::vector<V>{{0, 1}}));
}

TEST(ReshapeFactors, StraddlingSplit) {
  // [2, 6] -> [4, 3]: out dim 0 = 2 x (major 2 of in dim 1).
  ReshapeFactors r = factorReshape({2, 6}, {4, 3});
  EXPECT_EQ(V(r.sizes.begin(), r.sizes.end()), (V{2, 2, 3}));
  EXPECT_EQ(dimsOf(r.inDims), (std::vector<V>{{0}, {1, 2}}));
  EXPECT_EQ(dimsOf(r.outDims), (std::vector<V>{{0, 1}, {2}}));
}

TEST(ReshapeFactors, NoCommonSplitIsUnshardable) {
  ReshapeFactors r = factorReshape({2, 3, 5}, {3, 2, 5});
  ASSERT_EQ(r.sizes.size(), 5u);
  // The [2, 3] <-> [3, 2] region cannot be sharded; the trailing 5 can.
  EXPECT_EQ(std::vector<bool>(r.shardable.begin(), r.shardable.end()),
            (std::vector<bool>{false, false, false, false, true}));
  EXPECT_EQ(dimsOf(r.inDims)[2], (V{4}));
  EXPECT_EQ(dimsOf(r.outDims)[2], (V{4}));
}

TEST(ReshapeFactors, UnitDimsHaveNoFactor) {
  ReshapeFactors r = factorReshape({1, 8}, {8, 1});
  EXPECT_EQ(dimsOf(r.inDims), (std::vector<V>{{}, {0}}));
  EXPECT_EQ(dimsOf(r.outDims), (std::vector<V>{{0}, {}}));
}

TEST(ReshapeFactors, ScalarToOnes) {
  ReshapeFactors r = factorReshape({}, {1, 1});
  EXPECT_TRUE(r.sizes.empty());
}
