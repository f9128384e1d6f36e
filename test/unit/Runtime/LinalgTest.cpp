//===- LinalgTest.cpp - matmul, gemm, conv2d, pooling ---------------------===//
#include "TestUtil.h"
#include "tessel/runtime/HalfFloat.h"

#include <cstdlib>

using namespace tessel::runtime;
using namespace tessel::runtime::test;

namespace {

/// numpy.matmul, double accumulation.
std::vector<double> refMatMul(const Tensor &a, const Tensor &b, Shape &outShape) {
  Shape as = a.shape(), bs = b.shape();
  bool va = as.size() == 1, vb = bs.size() == 1;
  if (va)
    as.insert(as.begin(), 1);
  if (vb)
    bs.push_back(1);
  int64_t m = as[as.size() - 2], k = as.back(), n = bs.back();
  Shape ab(as.begin(), as.end() - 2), bb(bs.begin(), bs.end() - 2);
  Shape batch = broadcastShape(ab, bb);
  outShape = batch;
  if (!va)
    outShape.push_back(m);
  if (!vb)
    outShape.push_back(n);
  std::vector<double> out;
  for (int64_t t = 0; t < numElements(batch); ++t) {
    auto idx = unravel(t, batch);
    int64_t ao = broadcastIndex(idx, ab) * m * k, bo = broadcastIndex(idx, bb) * k * n;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (int64_t p = 0; p < k; ++p)
          s += double(a.data<float>()[ao + i * k + p]) * b.data<float>()[bo + p * n + j];
        out.push_back(s);
      }
  }
  return out;
}

/// alpha op(a) op(b) + beta c (c broadcast from `cs`; none when null), f32
/// tensors, double accumulation.
std::vector<double> refGemm(const Tensor &a, const Tensor &b, const Tensor *c,
                            const Shape &cs, bool ta, bool tb, int64_t m,
                            int64_t k, int64_t n, double alpha, double beta) {
  std::vector<double> out;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (int64_t p = 0; p < k; ++p)
        s += double(a.data<float>()[ta ? p * m + i : i * k + p]) *
             b.data<float>()[tb ? j * k + p : p * n + j];
      s *= alpha;
      if (c)
        s += beta * c->data<float>()[broadcastIndex({i, j}, cs)];
      out.push_back(s);
    }
  return out;
}

TEST(MatMul, NumpyShapes) {
  std::mt19937 rng(21);
  const std::vector<std::pair<Shape, Shape>> cases = {
      {{3, 4}, {4, 5}},        {{4}, {4, 5}},          {{3, 4}, {4}},
      {{4}, {4}},              {{2, 3, 4}, {4, 5}},    {{2, 3, 4}, {2, 4, 5}},
      {{2, 1, 3, 4}, {5, 4, 6}}, {{3, 4}, {2, 4, 5}},  {{2, 3, 4}, {4}},
      {{5}, {2, 5, 3}},        {{1, 3, 4}, {2, 4, 5}}, {{2, 12, 16, 8}, {2, 12, 8, 16}},
      {{3, 0}, {0, 4}},        {{64, 128}, {128, 96}}, {{2, 33, 65}, {65, 17}}};
  // f64 too (dgemm, Gemm.h): products of f32 values are exact in f64, so
  // only the sums' order separates it from the reference: 1e-13, where f32
  // arithmetic is 1e-7 away.
  for (DType dt : {DType::F32, DType::F64})
    for (int threads : {1, 2})
      for (const auto &[as, bs] : cases) {
        Tensor a = randomF32(as, rng), b = randomF32(bs, rng);
        Shape rs;
        std::vector<double> want = refMatMul(a, b, rs);
        SCOPED_TRACE(std::string(dtypeName(dt)) + " " + shapeToString(as) +
                     " @ " + shapeToString(bs));
        const bool f64 = dt == DType::F64;
        auto out = runOp("matmul", {f64 ? toF64(a) : a, f64 ? toF64(b) : b},
                         {{dt, rs}}, {}, threads);
        ASSERT_EQ(out.size(), 1u);
        ASSERT_EQ(out[0].dtype(), dt);
        expectNear(out[0], want, f64 ? 1e-13 : 1e-4, f64 ? 1e-13 : 1e-5);
      }
}

TEST(Gemm, TransposesAlphaBetaAndC) {
  std::mt19937 rng(22);
  const int64_t m = 5, k = 7, n = 3;
  for (DType dt : {DType::F32, DType::F64}) // f64 as in NumpyShapes
    for (bool ta : {false, true})
      for (bool tb : {false, true})
        for (Shape cs : {Shape{}, Shape{n}, Shape{m, 1}, Shape{1, n},
                         Shape{m, n}, Shape{0}}) {
          bool hasC = !(cs.size() == 1 && cs[0] == 0);
          Tensor a = randomF32(ta ? Shape{k, m} : Shape{m, k}, rng);
          Tensor b = randomF32(tb ? Shape{n, k} : Shape{k, n}, rng);
          Tensor c = randomF32(hasC ? cs : Shape{1}, rng);
          float alpha = 0.5f, beta = hasC ? 2.0f : 1.0f;
          const bool f64 = dt == DType::F64;
          std::vector<Tensor> ins = {f64 ? toF64(a) : a, f64 ? toF64(b) : b};
          if (hasC)
            ins.push_back(f64 ? toF64(c) : c);
          auto out = runOp("gemm", ins, {{dt, {m, n}}},
                           Attrs()
                               .i("trans_a", ta)
                               .i("trans_b", tb)
                               .f("alpha", alpha)
                               .f("beta", beta));
          std::vector<double> want = refGemm(a, b, hasC ? &c : nullptr, cs, ta,
                                             tb, m, k, n, alpha, beta);
          SCOPED_TRACE(std::string(dtypeName(dt)) + " ta=" +
                       std::to_string(ta) + " tb=" + std::to_string(tb) +
                       " C=" + (hasC ? shapeToString(cs) : "none"));
          ASSERT_EQ(out[0].dtype(), dt);
          expectNear(out[0], want, f64 ? 1e-13 : 1e-5, f64 ? 1e-13 : 1e-5);
        }
}

/// A half GEMM's result against the double reference on the same values:
/// rounded once to the half (within one unit in its last place, as the f32
/// sums' order may move a value across a rounding boundary), plus the f32
/// sums' own error.
void expectHalfNear(const Tensor &got, const std::vector<double> &want,
                    DType half) {
  ASSERT_EQ(got.dtype(), half);
  ASSERT_EQ(static_cast<size_t>(got.numElements()), want.size());
  const double ulp = half == DType::BF16 ? 0x1p-7 : 0x1p-10;
  for (size_t i = 0; i < want.size(); ++i) {
    const double v = halfToF32(half, got.data<uint16_t>()[i]);
    EXPECT_NEAR(v, want[i], ulp * std::fabs(want[i]) + 1e-5) << "element " << i;
  }
}

// A half model's GEMMs (-tessel-float-normalization keeps them half): on
// oneDNN's bf16 matmul where the CPU has bf16 dot products, else (f16, or
// TESSEL_BF16=emulate) widened to the f32 GEMM; either rounds once.
TEST(MatMul, HalfOperandsAndResult) {
  std::mt19937 rng(23);
  const std::vector<std::pair<Shape, Shape>> cases = {
      {{3, 4}, {4, 5}},     {{4}, {4, 5}},         {{2, 3, 4}, {4, 5}},
      {{2, 3, 4}, {2, 4, 5}}, {{2, 1, 3, 4}, {5, 4, 6}}, {{2, 33, 65}, {65, 17}}};
  for (const char *mode : {"", "emulate"})
    for (DType half : {DType::BF16, DType::F16})
      for (const auto &[as, bs] : cases) {
        setenv("TESSEL_BF16", mode, 1);
        auto [af, ah] = halfPair(half, as, rng);
        auto [bf, bh] = halfPair(half, bs, rng);
        Shape rs;
        std::vector<double> want = refMatMul(af, bf, rs);
        SCOPED_TRACE(std::string(dtypeName(half)) + " " + mode + " " +
                     shapeToString(as) + " @ " + shapeToString(bs));
        auto out = runOp("matmul", {ah, bh}, {{half, rs}}, {}, 2);
        expectHalfNear(out[0], want, half);
      }
  unsetenv("TESSEL_BF16");
}

TEST(Gemm, HalfOperandsAndResult) {
  std::mt19937 rng(24);
  const int64_t m = 9, k = 33, n = 17;
  for (const char *mode : {"", "emulate"})
    for (DType half : {DType::BF16, DType::F16})
      for (bool ta : {false, true})
        for (bool tb : {false, true})
          for (Shape cs : {Shape{0}, Shape{n}, Shape{m, n}}) {
            setenv("TESSEL_BF16", mode, 1);
            const bool hasC = cs[0] != 0;
            auto [af, ah] = halfPair(half, ta ? Shape{k, m} : Shape{m, k}, rng);
            auto [bf, bh] = halfPair(half, tb ? Shape{n, k} : Shape{k, n}, rng);
            auto [cf, ch] = halfPair(half, hasC ? cs : Shape{1}, rng);
            const float alpha = 0.5f, beta = hasC ? 2.0f : 1.0f;
            std::vector<Tensor> ins = {ah, bh};
            if (hasC)
              ins.push_back(ch);
            auto out = runOp("gemm", ins, {{half, {m, n}}},
                             Attrs()
                                 .i("trans_a", ta)
                                 .i("trans_b", tb)
                                 .f("alpha", alpha)
                                 .f("beta", beta));
            std::vector<double> want = refGemm(af, bf, hasC ? &cf : nullptr, cs,
                                               ta, tb, m, k, n, alpha, beta);
            SCOPED_TRACE(std::string(dtypeName(half)) + " " + mode +
                         " ta=" + std::to_string(ta) + " tb=" +
                         std::to_string(tb) + " C=" + shapeToString(cs));
            expectHalfNear(out[0], want, half);
          }
  unsetenv("TESSEL_BF16");
}

TEST(Conv2D, MatchesDirectLoops) {
  std::mt19937 rng(23);
  const std::vector<ConvCase> cases = {
      {{1, 3, 8, 8}, {4, 3, 3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, 1, true},
      {{2, 4, 9, 7}, {6, 4, 3, 2}, {2, 1}, {0, 1, 2, 0}, {1, 1}, 1, false},
      {{1, 4, 10, 10}, {4, 2, 3, 3}, {1, 2}, {2, 2, 2, 2}, {2, 1}, 2, true},
      {{1, 6, 5, 5}, {6, 1, 3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, 6, true}, // depthwise
      {{2, 8, 6, 6}, {16, 8, 1, 1}, {1, 1}, {0, 0, 0, 0}, {1, 1}, 1, true}, // pointwise
      {{1, 3, 32, 32}, {16, 3, 7, 7}, {2, 2}, {3, 3, 3, 3}, {1, 1}, 1, true},
      // ResNet's shapes: 3x3 same, strided 1x1 downsample; a dilated 3x3.
      {{2, 16, 14, 14}, {32, 16, 3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, 1, true},
      {{2, 16, 8, 8}, {32, 16, 1, 1}, {2, 2}, {0, 0, 0, 0}, {1, 1}, 1, false},
      {{1, 4, 11, 10}, {8, 4, 3, 3}, {1, 1}, {2, 1, 0, 2}, {2, 2}, 1, true},
  };
  // Weights given at run time (trained weights) go through oneDNN's
  // convolution, the weight reordered each run, or im2col + GEMM with
  // TESSEL_CONV=im2col; constant weights (as in a compiled model) through
  // oneDNN's prepacked direct convolution where it has a kernel. All must
  // match the loops.
  for (int mode : {0, 1, 2})
  for (int threads : {1, 2})
    for (const ConvCase &c : cases) {
      const bool constWeights = mode == 2;
      if (mode == 1)
        setenv("TESSEL_CONV", "im2col", 1);
      Tensor x = randomF32(c.x, rng), w = randomF32(c.w, rng),
             b = randomF32({c.w[0]}, rng);
      const Shape ys = convResult(c);
      std::vector<Tensor> ins = {x, w};
      if (c.bias)
        ins.push_back(b);
      auto out = runOp("conv2d", ins, {{DType::F32, ys}}, convAttrs(c),
                       threads, constWeights ? 1 : SIZE_MAX);
      unsetenv("TESSEL_CONV");
      std::vector<double> want(numElements(ys), 0.0);
      if (c.bias)
        for (size_t k = 0; k < want.size(); ++k)
          want[k] = b.data<float>()[(k / (ys[2] * ys[3])) % ys[1]];
      forEachConvTerm(c, [&](int64_t xi, int64_t wi, int64_t yi) {
        want[yi] += double(x.data<float>()[xi]) * w.data<float>()[wi];
      });
      SCOPED_TRACE("x " + shapeToString(c.x) + " w " + shapeToString(c.w) +
                   (constWeights ? " constant weights"
                    : mode == 1  ? " weights as input, im2col"
                                 : " weights as input") +
                   " threads " + std::to_string(threads));
      expectNear(out[0], want, 1e-4, 1e-5);
    }
}

TEST(Pool, MaxAndAvg) {
  std::mt19937 rng(24);
  forEachPoolCase([&](const PoolCase &c, const char *op, int cip, Attrs attrs,
                      const Shape &ys) {
    Tensor x = randomF32(c.x, rng);
    const int64_t oh[2] = {ys[2], ys[3]};
    auto out = runOp(op, {x}, {{DType::F32, ys}}, std::move(attrs));
    bool isMax = std::string(op) == "max_pool";
    std::vector<double> want;
    for (int64_t pl = 0; pl < c.x[0] * c.x[1]; ++pl)
      for (int64_t r = 0; r < oh[0]; ++r)
        for (int64_t s = 0; s < oh[1]; ++s) {
          double m = -INFINITY, sum = 0;
          int64_t cnt = 0, padded = 0;
          for (int64_t i = 0; i < c.k[0]; ++i)
            for (int64_t j = 0; j < c.k[1]; ++j) {
              int64_t ih = r * c.s[0] - c.p[0] + i,
                      iw = s * c.s[1] - c.p[1] + j;
              if (ih < c.x[2] + c.p[2] && iw < c.x[3] + c.p[3])
                ++padded; // inside input + pads
              if (ih < 0 || iw < 0 || ih >= c.x[2] || iw >= c.x[3])
                continue;
              double v = x.data<float>()[(pl * c.x[2] + ih) * c.x[3] + iw];
              m = std::max(m, v);
              sum += v;
              ++cnt;
            }
          want.push_back(isMax ? m : sum / (cip ? padded : cnt));
        }
    SCOPED_TRACE(std::string(op) + " " + shapeToString(c.x) +
                 " cip=" + std::to_string(cip));
    expectNear(out[0], want, 1e-6, 1e-6);
  });
}

TEST(Pool, GlobalAvg) {
  std::mt19937 rng(25);
  Tensor x = randomF32({2, 3, 5, 7}, rng);
  auto out = runOp("global_avg_pool", {x}, {{DType::F32, {2, 3, 1, 1}}});
  std::vector<double> want;
  for (int p = 0; p < 6; ++p) {
    double s = 0;
    for (int i = 0; i < 35; ++i)
      s += x.data<float>()[p * 35 + i];
    want.push_back(s / 35);
  }
  expectNear(out[0], want, 1e-6, 1e-6);
}

} // namespace
