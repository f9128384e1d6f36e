//===- NumericsTest.cpp - finding NaN and infinities in f32 buffers -------===//
#include "tessel/runtime/Numerics.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <utility>
#include <vector>

using namespace tessel::runtime;

namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

/// `n` copies of `fill` with `specials` (position, value) placed in them:
/// scanFinite says `want`, and names `wantFirst` (-1: none).
void expectScan(size_t n, float fill,
                const std::vector<std::pair<size_t, float>> &specials,
                Finiteness want, int64_t wantFirst) {
  std::vector<float> v(n, fill);
  for (const auto &[at, value] : specials)
    v[at] = value;
  int64_t first = -1;
  EXPECT_EQ(scanFinite(v.data(), v.size(), first), want);
  EXPECT_EQ(first, wantFirst);
}

TEST(Numerics, FiniteBuffersAreFinite) {
  constexpr float kMax = std::numeric_limits<float>::max();
  expectScan(10000, 1.5f,
             {{17, kMax}, {18, -kMax},
              {19, std::numeric_limits<float>::denorm_min()}},
             Finiteness::Finite, -1);
  const float none = kNaN;
  int64_t first = -1;
  EXPECT_EQ(scanFinite(&none, 0, first), Finiteness::Finite);
}

// A NaN anywhere wins over infinities, and the first NaN is named, across
// the scan's blocks.
TEST(Numerics, TheFirstNaNWinsOverInfinities) {
  expectScan(20000, 0.0f, {{3, -kInf}, {9000, kNaN}, {15000, -kNaN}},
             Finiteness::NaN, 9000);
}

TEST(Numerics, InfinitiesWithoutNaN) {
  expectScan(5000, 2.0f, {{4097, kInf}, {4999, -kInf}}, Finiteness::Inf,
             4097);
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
