//===- CudaFastDivideTest.cpp - runtime/cuda/FastDivide.h on the host -----===//
//
// The strided CUDA kernels divide flat indices by a plan's dims with a
// multiply-high and a shift; the same functions run here on the host
// against the `/` operator, over divisors and dividends where such methods
// go wrong: 1, powers of two and their neighbours, the largest divisor and
// dividend (2^31 - 1), and the multiples of each divisor and their
// neighbours. No device needed.
//
//===----------------------------------------------------------------------===//
#include "FastDivide.h"

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
        << i << " / " << d << " (magic " << magic << ", shift " << shift
        << ")";
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

} // namespace
