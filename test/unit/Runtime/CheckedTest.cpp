//===- CheckedTest.cpp - tessel/support: checked sizes, JSON nesting ------===//
#include "tessel/support/Checked.h"
#include "tessel/support/JsonNesting.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

using namespace tessel;

TEST(Checked, ArithmeticRefusesWhatDoesNotFit) {
  EXPECT_EQ(checkedMul<int64_t>(int64_t(1) << 32, int64_t(1) << 30),
            int64_t(1) << 62);
  EXPECT_FALSE(checkedMul<int64_t>(int64_t(1) << 32, int64_t(1) << 32));
  EXPECT_FALSE(checkedMul<uint64_t>(uint64_t(1) << 32, uint64_t(1) << 32));
  EXPECT_FALSE(checkedAdd<int64_t>(INT64_MAX, 1));
  EXPECT_FALSE(checkedAdd<uint64_t>(UINT64_MAX - 15, 256));
  EXPECT_FALSE(checkedSub<uint64_t>(0, 1));
  EXPECT_EQ(checkedSub<int64_t>(0, 1), -1);
}

TEST(Checked, ProductOfShapesAndMeshes) {
  EXPECT_EQ(checkedProduct(std::vector<int64_t>{}), 1);
  EXPECT_EQ(checkedProduct(std::vector<int64_t>{2, 3, 4}), 24);
  // Two mesh axes of 2^32: the product 2^64 wrapped to 0 (then SIGFPE).
  EXPECT_FALSE(checkedProduct(std::vector<int64_t>{1LL << 32, 1LL << 32}));
  // A 0 dim gives 0 elements even after a prefix that overflowed.
  EXPECT_EQ(checkedProduct(std::vector<int64_t>{1LL << 40, 1LL << 40, 0}), 0);
  EXPECT_FALSE(checkedProduct(std::vector<int64_t>{2, -1}));
  EXPECT_FALSE(checkedProduct(std::vector<int64_t>{-1, 0}));
  // A limit: the product of mesh sizes at most 2^31.
  EXPECT_EQ(checkedProduct(std::vector<int64_t>{1LL << 16, 1LL << 15},
                           int64_t(1) << 31),
            int64_t(1) << 31);
  EXPECT_FALSE(checkedProduct(std::vector<int64_t>{1LL << 16, 1LL << 16},
                              int64_t(1) << 31));
}

TEST(Checked, BytesAndRanges) {
  EXPECT_EQ(checkedBytes(int64_t(1) << 60, 4), uint64_t(1) << 62);
  EXPECT_FALSE(checkedBytes(int64_t(1) << 61, 8)); // 2^64
  EXPECT_FALSE(checkedBytes(int64_t(1) << 60, 8)); // 2^63 > INT64_MAX
  EXPECT_FALSE(checkedBytes(int64_t(1) << 60, 8, uint64_t(1) << 62));
  EXPECT_FALSE(checkedBytes(-1, 4));
  EXPECT_TRUE(rangeInside(0, 256, 256));
  EXPECT_TRUE(rangeInside(256, 0, 256));
  EXPECT_FALSE(rangeInside(1, 256, 256));
  // offset + length wraps to 240, inside a 256-byte file: refused.
  EXPECT_FALSE(rangeInside(UINT64_MAX - 15, 256, 256));
  EXPECT_FALSE(rangeInside(257, 0, 256));
}

TEST(JsonNesting, CountsBracketsOutsideStrings) {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  JsonNesting n = jsonNesting(deep, 32);
  EXPECT_EQ(n.depth, 100000u);
  EXPECT_TRUE(n.exceeds());
  EXPECT_EQ(n.at, 32u); // the 33rd '['
  EXPECT_EQ(n.describe(32), "nested 100000 deep at byte 32 (the limit is 32)");
  // Brackets inside strings, escaped quotes included, do not count.
  n = jsonNesting(R"({"a": "[[[[\"[[[[", "b": [1, {"c": 2}]})", 2);
  EXPECT_EQ(n.depth, 3u);
  EXPECT_TRUE(n.exceeds());
  EXPECT_EQ(n.at, 29u);
  n = jsonNesting(R"({"a": [[1]]})", 3);
  EXPECT_EQ(n.depth, 3u);
  EXPECT_FALSE(n.exceeds());
  // Stray closers do not go below 0.
  EXPECT_EQ(jsonNesting("]]]][[", 8).depth, 2u);
}
