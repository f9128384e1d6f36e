//===- NumericsTest.cpp - finding NaN and infinities in f32 buffers -------===//
#include "tessel/runtime/Numerics.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

using namespace tessel::runtime;

namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

TEST(Numerics, FiniteBuffersAreFinite) {
  std::vector<float> v(10000, 1.5f);
  v[17] = std::numeric_limits<float>::max();
  v[18] = -std::numeric_limits<float>::max();
  v[19] = std::numeric_limits<float>::denorm_min();
  int64_t first = -1;
  EXPECT_EQ(scanFinite(v.data(), v.size(), first), Finiteness::Finite);
  EXPECT_EQ(first, -1);
  EXPECT_EQ(scanFinite(v.data(), 0, first), Finiteness::Finite);
}

// A NaN anywhere wins over infinities, and the first NaN is named, across
// the scan's blocks.
TEST(Numerics, TheFirstNaNWinsOverInfinities) {
  std::vector<float> v(20000, 0.0f);
  v[3] = -kInf;
  v[9000] = kNaN;
  v[15000] = -kNaN;
  int64_t first = -1;
  EXPECT_EQ(scanFinite(v.data(), v.size(), first), Finiteness::NaN);
  EXPECT_EQ(first, 9000);
}

TEST(Numerics, InfinitiesWithoutNaN) {
  std::vector<float> v(5000, 2.0f);
  v[4097] = kInf;
  v[4999] = -kInf;
  int64_t first = -1;
  EXPECT_EQ(scanFinite(v.data(), v.size(), first), Finiteness::Inf);
  EXPECT_EQ(first, 4097);
}

TEST(Numerics, Texts) {
  EXPECT_EQ(floatText(kNaN), "NaN");
  EXPECT_EQ(floatText(kInf), "inf");
  EXPECT_EQ(floatText(-kInf), "-inf");
  EXPECT_EQ(floatText(0.5f), "0.5");
  EXPECT_EQ(multiIndex({2, 3, 4}, 23), "1, 2, 3");
  EXPECT_EQ(multiIndex({5}, 4), "4");
  EXPECT_EQ(multiIndex({}, 0), "");
}

} // namespace
