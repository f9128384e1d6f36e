//===- CudaIndexMathTest.cpp - The CUDA kernels' index math on the host ---===//
//
// The strided CUDA kernels divide flat indices by a plan's dims with a
// multiply-high and a shift (FastDivide.h); the same functions run here on
// the host against the `/` operator, over divisors and dividends where such
// methods go wrong: 1, powers of two and their neighbours, the largest
// divisor and dividend (2^31 - 1), and the multiples of each divisor and
// their neighbours. And the host's decisions of Indexer32.h: which plans go
// to 32-bit arithmetic (narrow: none whose offsets reach 2^31, where they
// would wrap into wrong elements) and which to the four-per-thread kernels
// (fourWide). No device needed.
//
//===----------------------------------------------------------------------===//
#include "FastDivide.h"
#include "Indexer32.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

using namespace tessel::runtime::cuda;

namespace {

/// Every dividend in `is` (below 2^31) by d, against i / d.
void expectDivides(uint32_t d, const std::vector<uint32_t> &is) {
  uint32_t magic, shift;
  setDivisor(d, magic, shift);
  for (uint32_t i : is) {
    ASSERT_EQ(divide(i, magic, shift), i / d)
        << i << " / " << d << " (magic " << magic << ", shift " << shift << ")";
  }
}

std::vector<uint32_t> dividendsFor(uint32_t d, std::mt19937 &rng) {
  const uint32_t kMax = 0x7fffffffu;
  std::vector<uint32_t> is = {0, 1, 2, kMax, kMax - 1, d - 1, d, d + 1};
  // Multiples of d and their neighbours, near 0 and near 2^31.
  for (uint32_t k : {2u, 3u, 7u, 1000u})
    if (uint64_t(k) * d + 1 <= kMax)
      for (uint32_t j : {k * d - 1, k * d, k * d + 1})
        is.push_back(j);
  const uint32_t top = (kMax / d) * d;
  is.push_back(top);
  is.push_back(top - 1);
  if (top > d)
    is.push_back(top - d);
  std::uniform_int_distribution<uint32_t> any(0, kMax);
  for (int k = 0; k < 64; ++k)
    is.push_back(any(rng));
  return is;
}

TEST(CudaFastDivide, SmallDivisors) {
  std::mt19937 rng(1);
  for (uint32_t d = 1; d <= 5000; ++d)
    expectDivides(d, dividendsFor(d, rng));
}

TEST(CudaFastDivide, PowersOfTwoAndNeighbours) {
  std::mt19937 rng(2);
  for (int s = 0; s <= 30; ++s)
    for (int64_t delta : {-1, 0, 1}) {
      const int64_t d = (int64_t(1) << s) + delta;
      if (d >= 1 && d < (int64_t(1) << 31))
        expectDivides(static_cast<uint32_t>(d),
                      dividendsFor(static_cast<uint32_t>(d), rng));
    }
  expectDivides(0x7fffffffu, dividendsFor(0x7fffffffu, rng));
}

TEST(CudaFastDivide, RandomDivisorsAndEveryDividendOfOne) {
  std::mt19937 rng(3);
  std::uniform_int_distribution<uint32_t> any(1, 0x7fffffffu);
  for (int k = 0; k < 2000; ++k) {
    const uint32_t d = any(rng);
    expectDivides(d, dividendsFor(d, rng));
  }
  // One divisor of the benchmark's shapes (1024 x 1024) over a dense range.
  uint32_t magic, shift;
  setDivisor(1048576u + 3u, magic, shift);
  for (uint32_t i = 0; i < (1u << 24); i += 7)
    ASSERT_EQ(divide(i, magic, shift), i / (1048576u + 3u)) << i;
}

/// An Indexer over `dims` with per-operand strides (strides[d][k]).
Indexer makeIndexer(const std::vector<int64_t> &dims,
                    const std::vector<std::vector<int64_t>> &strides) {
  Indexer ix;
  ix.rank = static_cast<int>(dims.size());
  ix.numOperands = strides.empty() ? 0 : static_cast<int>(strides[0].size());
  ix.total = 1;
  for (size_t d = 0; d < dims.size(); ++d) {
    ix.dims[d] = dims[d];
    ix.total *= dims[d];
    for (size_t k = 0; k < strides[d].size(); ++k)
      ix.strides[d][k] = strides[d][k];
  }
  return ix;
}

/// The offsets of operand k at flat index i, from the 32-bit plan's own
/// divisions, as the kernels compute them (DeviceUtil.cuh's offsetsAt).
int64_t offsetOf(const Indexer32 &n, uint32_t i, int k) {
  int64_t off = 0;
  for (int d = n.rank - 1; d >= 0; --d) {
    const uint32_t q = divide(i, n.magic[d], n.shift[d]);
    off += int64_t(i - q * n.dims[d]) * n.strides[d][k];
    i = q;
  }
  return off;
}

TEST(CudaIndexer32, NarrowsPlansBelowTwoToThe31AndKeepsTheirOffsets) {
  // A broadcast over attention's scores: [64, 1024 * 1024] with the mask
  // read [0, 1] and the scores [2^20, 1].
  const Indexer ix = makeIndexer({64, 1 << 20}, {{1 << 20, 0, 0}, {1, 1, 0}});
  Indexer32 n;
  ASSERT_TRUE(narrow(ix, n));
  EXPECT_EQ(n.rank, 2);
  EXPECT_EQ(n.numOperands, 3);
  EXPECT_EQ(n.total, uint32_t(64) << 20);
  for (uint32_t i : {0u, 1u, (1u << 20) - 1, 1u << 20, (64u << 20) - 1}) {
    EXPECT_EQ(offsetOf(n, i, 0), int64_t(i)) << i;
    EXPECT_EQ(offsetOf(n, i, 1), int64_t(i % (1u << 20))) << i;
    EXPECT_EQ(offsetOf(n, i, 2), 0) << i;
  }
  // A transpose's source offsets, [3, 70, 45] read as [3150, 1, 70].
  const Indexer t = makeIndexer({3, 70, 45}, {{3150}, {1}, {70}});
  ASSERT_TRUE(narrow(t, n));
  for (uint32_t i = 0; i < 3 * 70 * 45; ++i) {
    const uint32_t c = i % 45, r = (i / 45) % 70, b = i / (45 * 70);
    ASSERT_EQ(offsetOf(n, i, 0), int64_t(b) * 3150 + r + int64_t(c) * 70) << i;
  }
  // The largest offset just below 2^31: narrowed.
  // [2, 2^30 - 1] read as [2^30, 1]: the last element at 2^31 - 2.
  const Indexer edge = makeIndexer({2, (1 << 30) - 1}, {{1 << 30}, {1}});
  ASSERT_TRUE(narrow(edge, n));
  EXPECT_EQ(offsetOf(n, (2u << 30) - 3, 0), (int64_t(1) << 31) - 2);
  EXPECT_EQ(offsetOf(n, (1u << 30) - 1, 0), int64_t(1) << 30);
}

TEST(CudaIndexer32, KeepsTheSixtyFourBitPlanAtTwoToThe31) {
  Indexer32 n;
  // A total of 2^31 elements.
  EXPECT_FALSE(narrow(makeIndexer({2, 1 << 30}, {{1 << 30}, {1}}), n));
  // A total below 2^31 whose operand reaches offset 2^31 (a broadcast
  // operand laid out with a large stride).
  EXPECT_FALSE(narrow(makeIndexer({3, 4}, {{int64_t(1) << 30, 0}, {1, 1}}), n));
  // One stride of 2^31 on a dim of 1 (offset 0, but the stride itself does
  // not fit an int32).
  EXPECT_FALSE(narrow(makeIndexer({1, 4}, {{int64_t(1) << 31}, {1}}), n));
  // Negative strides (not made by today's plans) stay 64-bit.
  EXPECT_FALSE(narrow(makeIndexer({4}, {{-1}}), n));
  // A rank outside [1, kMaxDims], a dim of 0.
  Indexer bad = makeIndexer({4}, {{1}});
  bad.rank = 0;
  EXPECT_FALSE(narrow(bad, n));
  bad.rank = kMaxDims + 1;
  EXPECT_FALSE(narrow(bad, n));
  Indexer empty = makeIndexer({4, 5}, {{5}, {1}});
  empty.dims[0] = 0;
  empty.total = 0;
  EXPECT_FALSE(narrow(empty, n));
  // Huge dims and strides whose products would overflow 64 bits if summed
  // unchecked: refused, not wrapped.
  Indexer big;
  big.rank = kMaxDims;
  big.numOperands = 1;
  big.total = 1;
  for (int d = 0; d < kMaxDims; ++d) {
    big.dims[d] = (int64_t(1) << 31) - 1;
    big.strides[d][0] = (int64_t(1) << 31) - 1;
  }
  EXPECT_FALSE(narrow(big, n));
}

TEST(CudaIndexer32, FourWideWantsAMultipleOfFourReadWithStrideZeroOrOne) {
  Indexer32 n;
  // Same shapes, a scalar, a row broadcast: innermost strides 1 or 0.
  ASSERT_TRUE(narrow(makeIndexer({24}, {{1, 1}}), n));
  EXPECT_TRUE(fourWide(n));
  ASSERT_TRUE(narrow(makeIndexer({6, 4}, {{4, 0}, {1, 1}}), n));
  EXPECT_TRUE(fourWide(n));
  ASSERT_TRUE(narrow(makeIndexer({8, 12}, {{12, 1}, {1, 0}}), n));
  EXPECT_TRUE(fourWide(n));
  // Innermost 6: no. A transposed operand (stride 7): no.
  ASSERT_TRUE(narrow(makeIndexer({4, 6}, {{6, 6}, {1, 1}}), n));
  EXPECT_FALSE(fourWide(n));
  ASSERT_TRUE(narrow(makeIndexer({7, 8}, {{1, 8}, {7, 1}}), n));
  EXPECT_FALSE(fourWide(n));
}

} // namespace
