//===- PackedGemmTest.cpp - GEMMs on weights packed once ------------------===//
//
// PackedGemm (runtime/cpu/PackedGemm.h) against the product in double:
// shapes on and off its tile (6 x 16; a tail of 1-3 rows split with the
// last six), row block (256 deep), A block (144 rows) and column block
// (2048) edges, B plain and transposed, alpha and
// beta, row strides wider than the rows (the columns between are never
// written), and one and three threads (the same bits: each element's sums
// are in k order on any thread count).
//
//===----------------------------------------------------------------------===//
#include "PackedGemm.h"
#include "ThreadPool.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

using namespace tessel::runtime::cpu;

namespace {

struct Case {
  int64_t m, k, n;
  bool transB;
  float alpha = 1.0f, beta = 0.0f;
  int64_t padA = 0, padC = 0; // lda = k + padA, ldc = n + padC
};

std::vector<float> randomVector(size_t n, std::mt19937 &rng) {
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float &x : v)
    x = d(rng);
  return v;
}

void check(const Case &c) {
  SCOPED_TRACE(testing::Message() << "m=" << c.m << " k=" << c.k << " n=" << c.n
                                  << " transB=" << c.transB
                                  << " alpha=" << c.alpha << " beta=" << c.beta
                                  << " padA=" << c.padA << " padC=" << c.padC);
  std::mt19937 rng(static_cast<unsigned>(c.m * 131 + c.k * 7 + c.n));
  const int64_t lda = c.k + c.padA, ldc = c.n + c.padC;
  const std::vector<float> a = randomVector(c.m * lda, rng);
  const std::vector<float> b = randomVector(c.k * c.n, rng);
  const std::vector<float> c0 = randomVector(c.m * ldc, rng);
  auto bAt = [&](int64_t r, int64_t j) {
    return c.transB ? b[j * c.k + r] : b[r * c.n + j];
  };
  std::unique_ptr<PackedGemm> g =
      PackedGemm::create(b.data(), c.k, c.n, c.transB);
  ASSERT_TRUE(g);
  EXPECT_EQ(g->k(), c.k);
  EXPECT_EQ(g->n(), c.n);
  EXPECT_GE(g->bytes(), static_cast<size_t>(c.k * c.n) * sizeof(float));

  std::vector<float> one = c0, three = c0;
  ThreadPool pool1(1), pool3(3);
  ASSERT_TRUE(
      g->multiply(c.m, a.data(), lda, c.alpha, c.beta, one.data(), ldc, pool1));
  ASSERT_TRUE(g->multiply(c.m, a.data(), lda, c.alpha, c.beta, three.data(),
                          ldc, pool3));
  EXPECT_EQ(std::memcmp(one.data(), three.data(), one.size() * sizeof(float)),
            0)
      << "the thread count changed the result";

  for (int64_t i = 0; i < c.m; ++i) {
    for (int64_t j = 0; j < ldc; ++j) {
      const float got = one[i * ldc + j];
      if (j >= c.n) { // between rows: untouched
        ASSERT_EQ(got, c0[i * ldc + j]) << "wrote C[" << i << ", " << j << "]";
        continue;
      }
      double sum = 0, mag = 0;
      for (int64_t r = 0; r < c.k; ++r) {
        sum += double(a[i * lda + r]) * bAt(r, j);
        mag += std::fabs(double(a[i * lda + r]) * bAt(r, j));
      }
      double want = c.alpha * sum;
      if (c.beta != 0.0f)
        want += double(c.beta) * c0[i * ldc + j];
      // f32 sums of k products: within k ulps of their magnitude.
      const double tol = (c.k + 4) * 6e-8 *
                         (std::fabs(c.alpha) * mag +
                          std::fabs(c.beta * c0[i * ldc + j]) + 1e-30);
      ASSERT_NEAR(got, want, tol) << "C[" << i << ", " << j << "]";
    }
  }
}

bool haveAvx2Fma() {
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

TEST(PackedGemmTest, MatchesTheProductInDouble) {
  if (!haveAvx2Fma())
    GTEST_SKIP() << "this CPU has no AVX2 and FMA (PackedGemm's kernel)";
  const Case cases[] = {
      {1, 1, 1, false},
      {1, 7, 3, true},
      {5, 255, 15, false},
      {6, 256, 16, false},
      {7, 257, 17, true},
      {8, 96, 20, false},  // 4 + 4 rows
      {9, 96, 20, true},   // 5 + 4
      {10, 96, 20, false}, // 6 + 4
      {11, 96, 20, false}, // 6 + 5
      {13, 300, 33, false, 0.5f, 0.0f, 3, 5},
      {12, 513, 40, true, -1.25f, 1.0f},
      {150, 64, 48, false, 1.0f, 0.75f, 1, 2}, // two blocks of A rows
      {3, 40, 2050, false},                    // two column blocks
      {3, 40, 2050, true, 2.0f, -0.5f, 0, 7},
  };
  for (const Case &c : cases)
    check(c);
}

TEST(PackedGemmTest, ColumnsAreTheMatrixRows) {
  if (!haveAvx2Fma())
    GTEST_SKIP() << "this CPU has no AVX2 and FMA (PackedGemm's kernel)";
  // A table [n, k] packed transposed (a tied head): column j is row j,
  // across row blocks (k > 256) and the last, partial panel (n % 16).
  std::mt19937 rng(5);
  for (bool transB : {true, false}) {
    const int64_t n = 37, k = 600;
    const std::vector<float> b = randomVector(n * k, rng);
    auto g = PackedGemm::create(b.data(), k, n, transB);
    ASSERT_TRUE(g);
    std::vector<float> col(k);
    for (int64_t j : {int64_t(0), int64_t(15), int64_t(16), n - 1}) {
      g->column(j, col.data());
      for (int64_t r = 0; r < k; ++r)
        ASSERT_EQ(col[r], transB ? b[j * k + r] : b[r * n + j])
            << "transB=" << transB << " column " << j << " row " << r;
    }
  }
}

TEST(PackedGemmTest, RefusesWhatItCannotPack) {
  if (!haveAvx2Fma())
    GTEST_SKIP() << "this CPU has no AVX2 and FMA (PackedGemm's kernel)";
  const float b[4] = {1, 2, 3, 4};
  EXPECT_FALSE(PackedGemm::create(b, 0, 4, false));
  EXPECT_FALSE(PackedGemm::create(b, 4, 0, false));
  EXPECT_FALSE(PackedGemm::create(b, -1, 4, true));
  // Sizes whose packed copy would pass 2^40 floats are refused before any
  // allocation.
  EXPECT_FALSE(
      PackedGemm::create(b, int64_t(1) << 30, int64_t(1) << 20, false));
}

TEST(PackedGemmTest, EmptyRowsLeaveCAlone) {
  if (!haveAvx2Fma())
    GTEST_SKIP() << "this CPU has no AVX2 and FMA (PackedGemm's kernel)";
  const float b[6] = {1, 2, 3, 4, 5, 6};
  auto g = PackedGemm::create(b, 2, 3, false);
  ASSERT_TRUE(g);
  float c[3] = {7, 8, 9};
  ThreadPool pool(2);
  EXPECT_TRUE(g->multiply(0, nullptr, 2, 1.0f, 0.0f, c, 3, pool));
  EXPECT_EQ(c[0], 7);
  EXPECT_EQ(c[2], 9);
}

} // namespace
