//===- ReduceNormTest.cpp - Reductions, softmax and normalisations --------===//
#include "TestUtil.h"

#include <algorithm>
#include <limits>

using namespace tessel::runtime;
using namespace tessel::runtime::test;

namespace {

TEST(Reduce, SumMeanMaxOverDims) {
  std::mt19937 rng(31);
  struct Case {
    Shape x;
    std::vector<int64_t> dims;
  };
  const std::vector<Case> cases = {
      {{5}, {0}},          {{4, 6}, {1}},        {{4, 6}, {0}},
      {{4, 6}, {}},        {{2, 3, 4}, {0, 2}},  {{2, 3, 4}, {1}},
      {{2, 3, 4, 5}, {-1, 1}}, {{3, 1, 4}, {1}}, {{128, 300}, {1}},
      {{300, 128}, {0}},   {{64, 32, 16}, {2, 0}}};
  for (int threads : {1, 2})
    for (const Case &c : cases)
      for (const char *op : {"reduce_sum", "reduce_mean", "reduce_max"})
        for (int keep : {0, 1}) {
          Tensor x = randomF32(c.x, rng);
          std::vector<bool> red(c.x.size(), c.dims.empty());
          for (int64_t d : c.dims)
            red[d < 0 ? d + c.x.size() : d] = true;
          Shape rs, keepShape;
          for (size_t d = 0; d < c.x.size(); ++d) {
            keepShape.push_back(red[d] ? 1 : c.x[d]);
            if (!red[d] || keep)
              rs.push_back(red[d] ? 1 : c.x[d]);
          }
          int64_t n = numElements(keepShape);
          std::vector<double> sum(n, 0), mx(n, -INFINITY);
          std::vector<int64_t> cnt(n, 0);
          for (int64_t i = 0; i < x.numElements(); ++i) {
            auto idx = unravel(i, c.x);
            for (size_t d = 0; d < idx.size(); ++d)
              if (red[d])
                idx[d] = 0;
            int64_t o = 0;
            for (size_t d = 0; d < idx.size(); ++d)
              o = o * keepShape[d] + idx[d];
            double v = x.data<float>()[i];
            sum[o] += v;
            mx[o] = std::max(mx[o], v);
            ++cnt[o];
          }
          std::vector<double> want(n);
          for (int64_t o = 0; o < n; ++o)
            want[o] = std::string(op) == "reduce_sum"    ? sum[o]
                      : std::string(op) == "reduce_mean" ? sum[o] / cnt[o]
                                                         : mx[o];
          auto out = runOp(op, {x}, {{DType::F32, rs}},
                           Attrs().is("dims", c.dims).i("keep_dims", keep), threads);
          SCOPED_TRACE(std::string(op) + " " + shapeToString(c.x) + " keep=" +
                       std::to_string(keep));
          expectNear(out[0], want, 1e-4, 1e-5);
        }
}

TEST(Reduce, IntegerSumAndMax) {
  Tensor x = Tensor::fromVector<int64_t>(DType::I64, {2, 3}, {1, -2, 3, 4, 5, -6});
  expectEqual<int64_t>(
      runOp("reduce_sum", {x}, {{DType::I64, {2}}}, Attrs().is("dims", {1}).i("keep_dims", 0))[0],
      {2, 3});
  expectEqual<int64_t>(
      runOp("reduce_max", {x}, {{DType::I64, {1, 3}}}, Attrs().is("dims", {0}))[0], {4, 5, 3});
}

// A row of -inf has max -inf (not -FLT_MAX): attention's guard for rows
// that attend nothing tests it.
TEST(Reduce, MaxOfMinusInfinities) {
  const float inf = std::numeric_limits<float>::infinity();
  Tensor x = Tensor::fromVector<float>(DType::F32, {2, 3},
                                       {-inf, -inf, -inf, 1, -inf, 2});
  expectEqual<float>(runOp("reduce_max", {x}, {{DType::F32, {2}}},
                           Attrs().is("dims", {1}).i("keep_dims", 0))[0],
                     {-inf, 2});
}

std::vector<double> refSoftmax(const Tensor &x, int64_t axis, bool log) {
  const Shape &s = x.shape();
  if (axis < 0)
    axis += s.size();
  int64_t outer = 1, inner = 1, len = s[axis];
  for (int64_t d = 0; d < axis; ++d)
    outer *= s[d];
  for (size_t d = axis + 1; d < s.size(); ++d)
    inner *= s[d];
  std::vector<double> y(x.numElements());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      double m = -INFINITY, sum = 0;
      for (int64_t l = 0; l < len; ++l)
        m = std::max(m, double(x.data<float>()[(o * len + l) * inner + i]));
      for (int64_t l = 0; l < len; ++l)
        sum += std::exp(x.data<float>()[(o * len + l) * inner + i] - m);
      for (int64_t l = 0; l < len; ++l) {
        int64_t k = (o * len + l) * inner + i;
        y[k] = log ? x.data<float>()[k] - m - std::log(sum)
                   : std::exp(x.data<float>()[k] - m) / sum;
      }
    }
  return y;
}

TEST(Softmax, AnyAxis) {
  std::mt19937 rng(32);
  for (int threads : {1, 2})
    for (auto [shape, axis] : std::vector<std::pair<Shape, int64_t>>{
             {{7}, 0}, {{3, 5}, -1}, {{3, 5}, 0}, {{2, 3, 4}, 1},
             {{2, 12, 64, 64}, -1}, {{1, 1000}, 1}})
      for (const char *op : {"softmax", "log_softmax"}) {
        Tensor x = randomF32(shape, rng, -10, 10);
        auto out = runOp(op, {x}, {{DType::F32, shape}}, Attrs().i("axis", axis), threads);
        SCOPED_TRACE(std::string(op) + " " + shapeToString(shape) + " axis " +
                     std::to_string(axis));
        expectNear(out[0], refSoftmax(x, axis, std::string(op) == "log_softmax"), 1e-6,
                   1e-5);
      }
}

// f64 (docs/precision.md): the double reference on the same values within
// 1e-13, where f32's kernels are 1e-7 away.
TEST(Softmax, F64) {
  std::mt19937 rng(36);
  for (auto [shape, axis] : std::vector<std::pair<Shape, int64_t>>{
           {{3, 5}, -1}, {{2, 3, 4}, 1}, {{4, 300}, -1}})
    for (const char *op : {"softmax", "log_softmax"}) {
      Tensor x = randomF32(shape, rng, -10, 10);
      auto out = runOp(op, {toF64(x)}, {{DType::F64, shape}},
                       Attrs().i("axis", axis), 2);
      SCOPED_TRACE(std::string(op) + " " + shapeToString(shape));
      expectNear(out[0], refSoftmax(x, axis, std::string(op) == "log_softmax"),
                 1e-13, 1e-13);
    }
}

TEST(LayerNorm, F64) {
  std::mt19937 rng(37);
  const Shape shape = {5, 96};
  for (bool rms : {false, true}) {
    Tensor x = randomF32(shape, rng, -3, 3), sc = randomF32({96}, rng),
           bi = randomF32({96}, rng);
    std::vector<Tensor> ins = {toF64(x), toF64(sc)};
    if (!rms)
      ins.push_back(toF64(bi));
    auto out =
        runOp(rms ? "rms_norm" : "layer_norm", ins, {{DType::F64, shape}},
              Attrs().i("axis", -1).f("epsilon", 1e-5f));
    // epsilon is an f32 attribute (ONNX's is a float): 1e-5f, widened.
    const double eps = 1e-5f;
    std::vector<double> want;
    for (int64_t r = 0; r < 5; ++r) {
      double mean = 0, var = 0;
      for (int64_t i = 0; i < 96; ++i)
        mean += x.data<float>()[r * 96 + i];
      mean /= 96;
      for (int64_t i = 0; i < 96; ++i) {
        double v = x.data<float>()[r * 96 + i];
        var += rms ? v * v : (v - mean) * (v - mean);
      }
      var /= 96;
      for (int64_t i = 0; i < 96; ++i) {
        double v = x.data<float>()[r * 96 + i];
        double y =
            (rms ? v : v - mean) / std::sqrt(var + eps) * sc.data<float>()[i];
        want.push_back(rms ? y : y + bi.data<float>()[i]);
      }
    }
    SCOPED_TRACE(rms ? "rms_norm" : "layer_norm");
    expectNear(out[0], want, 1e-13, 1e-13);
  }
}

TEST(Reduce, F64SumMeanMaxAndCumsum) {
  // 1 -/+ 2^-40 (row 1: 3 2^-40) alternating: f64 holds each and sums them
  // exactly; f32 holds none of them.
  Tensor x(DType::F64, {2, 4096});
  for (int64_t i = 0; i < x.numElements(); ++i)
    x.data<double>()[i] = 1.0 + 0x1p-40 * (i % 2 ? 1 : -1) * (i < 4096 ? 1 : 3);
  auto sum = runOp("reduce_sum", {x}, {{DType::F64, {2}}},
                   Attrs().is("dims", {1}).i("keep_dims", 0));
  EXPECT_EQ(sum[0].data<double>()[0], 4096.0);
  auto mean = runOp("reduce_mean", {x}, {{DType::F64, {2}}},
                    Attrs().is("dims", {1}).i("keep_dims", 0));
  EXPECT_EQ(mean[0].data<double>()[1], 1.0);
  auto mx = runOp("reduce_max", {x}, {{DType::F64, {2}}},
                  Attrs().is("dims", {1}).i("keep_dims", 0));
  EXPECT_EQ(mx[0].data<double>()[0], 1.0 + 0x1p-40);
  EXPECT_EQ(mx[0].data<double>()[1], 1.0 + 3 * 0x1p-40);
  auto cs =
      runOp("cumsum", {x}, {{DType::F64, {2, 4096}}}, Attrs().i("axis", 1));
  EXPECT_EQ(cs[0].data<double>()[0], 1.0 - 0x1p-40);
  EXPECT_EQ(cs[0].data<double>()[1], 2.0);
}

TEST(Softmax, MaskedRow) {
  // -inf entries (causal masks) give exact zeros.
  Tensor x = Tensor::fromVector<float>(DType::F32, {1, 4}, {1.0f, -INFINITY, 2.0f, -INFINITY});
  auto out = runOp("softmax", {x}, {{DType::F32, {1, 4}}});
  double e = std::exp(-1.0);
  expectNear(out[0], {e / (1 + e), 0, 1 / (1 + e), 0}, 1e-7, 1e-6);
}

TEST(LayerNorm, WithAndWithoutBiasAndBroadcastScale) {
  std::mt19937 rng(33);
  for (int threads : {1, 2})
    for (auto [shape, axis] : std::vector<std::pair<Shape, int64_t>>{
             {{4, 16}, -1}, {{2, 3, 8}, 1}, {{128, 768}, -1}, {{3, 1}, 1}})
      for (bool rms : {false, true})
        for (int biasMode : {0, 1}) {
          if (rms && biasMode)
            continue;
          int64_t ax = axis < 0 ? axis + shape.size() : axis;
          Shape norm(shape.begin() + ax, shape.end());
          // Scale broadcast along its first dim where possible ([1, ...]).
          Shape scaleShape = norm;
          if (norm.size() > 1)
            scaleShape[0] = 1;
          Tensor x = randomF32(shape, rng, -3, 3), sc = randomF32(scaleShape, rng),
                 bi = randomF32(norm, rng);
          std::vector<Tensor> ins = {x, sc};
          if (biasMode)
            ins.push_back(bi);
          auto out = runOp(rms ? "rms_norm" : "layer_norm", ins, {{DType::F32, shape}},
                           Attrs().i("axis", axis).f("epsilon", 1e-5f), threads);
          int64_t d = numElements(norm), rows = x.numElements() / d;
          std::vector<double> want;
          for (int64_t r = 0; r < rows; ++r) {
            double mean = 0, var = 0;
            for (int64_t i = 0; i < d; ++i)
              mean += x.data<float>()[r * d + i];
            mean /= d;
            for (int64_t i = 0; i < d; ++i) {
              double v = x.data<float>()[r * d + i];
              var += rms ? v * v : (v - mean) * (v - mean);
            }
            var /= d;
            for (int64_t i = 0; i < d; ++i) {
              double v = x.data<float>()[r * d + i];
              double s = sc.data<float>()[broadcastIndex(unravel(i, norm), scaleShape)];
              double y = (rms ? v : v - mean) / std::sqrt(var + 1e-5) * s;
              if (biasMode)
                y += bi.data<float>()[i];
              want.push_back(y);
            }
          }
          SCOPED_TRACE(std::string(rms ? "rms" : "layer") + " " + shapeToString(shape));
          expectNear(out[0], want, 1e-5, 1e-5);
        }
}

TEST(BatchNorm, Inference) {
  std::mt19937 rng(34);
  Tensor x = randomF32({2, 3, 4, 5}, rng);
  Tensor sc = randomF32({3}, rng), bi = randomF32({3}, rng), mean = randomF32({3}, rng),
         var = randomF32({3}, rng, 0.1f, 2.0f);
  auto out = runOp("batch_norm", {x, sc, bi, mean, var}, {{DType::F32, {2, 3, 4, 5}}},
                   Attrs().f("epsilon", 1e-3f));
  std::vector<double> want;
  for (int64_t i = 0; i < x.numElements(); ++i) {
    int64_t c = (i / 20) % 3;
    want.push_back((x.data<float>()[i] - mean.data<float>()[c]) /
                       std::sqrt(var.data<float>()[c] + 1e-3) * sc.data<float>()[c] +
                   bi.data<float>()[c]);
  }
  expectNear(out[0], want, 1e-5, 1e-5);
}

// BatchNorm's training pieces (batch_norm_variance, batch_norm_grad_sums,
// batch_norm_grad_input) against double references, on [N, C], [N, C, L] and [N, C, H, W] inputs
// and 1 and 2 threads; the sums are the same on any thread count.
TEST(BatchNorm, TrainingBackward) {
  std::mt19937 rng(35);
  for (const Shape &shape : std::vector<Shape>{{7, 3}, {2, 5, 9}, {3, 4, 6, 5}, {2, 64, 3, 3}})
    for (int threads : {1, 2}) {
      SCOPED_TRACE(shapeToString(shape) + " threads=" + std::to_string(threads));
      const int64_t c = shape[1], n = numElements(shape) / c,
                    spatial = numElements(shape) / (shape[0] * c);
      Tensor g = randomF32(shape, rng), x = randomF32(shape, rng, -1.0f, 3.0f);
      Tensor mean = randomF32({c}, rng, 0.5f, 1.5f), gm = randomF32({c}, rng),
             proj = randomF32({c}, rng), coef = randomF32({c}, rng);
      auto channel = [&](int64_t i) { return (i / spatial) % c; };
      std::vector<double> sumG(c, 0.0), sumGC(c, 0.0), sq(c, 0.0), dx;
      for (int64_t i = 0; i < x.numElements(); ++i) {
        int64_t ch = channel(i);
        double gi = g.data<float>()[i], xi = x.data<float>()[i];
        sumG[ch] += gi;
        sumGC[ch] += gi * (xi - mean.data<float>()[ch]);
        sq[ch] += (xi - mean.data<float>()[ch]) * (xi - mean.data<float>()[ch]) / n;
        dx.push_back((gi - gm.data<float>()[ch] -
                      (xi - mean.data<float>()[ch]) * proj.data<float>()[ch]) *
                     coef.data<float>()[ch]);
      }
      auto sums = runOp("batch_norm_grad_sums", {g, x, mean},
                        {{DType::F32, {c}}, {DType::F32, {c}}}, {}, threads);
      expectNear(sums[0], sumG, 1e-5 * n, 1e-5);
      expectNear(sums[1], sumGC, 1e-5 * n, 1e-5);
      auto var = runOp("batch_norm_variance", {x, mean}, {{DType::F32, {c}}}, {},
                       threads);
      expectNear(var[0], sq, 1e-5, 1e-5);
      auto in = runOp("batch_norm_grad_input", {g, x, mean, gm, proj, coef},
                      {{DType::F32, shape}}, {}, threads);
      expectNear(in[0], dx, 1e-5, 1e-5);
      if (threads == 2) {
        auto one = runOp("batch_norm_grad_sums", {g, x, mean},
                         {{DType::F32, {c}}, {DType::F32, {c}}}, {}, 1);
        for (size_t r = 0; r < 2; ++r)
          for (int64_t ch = 0; ch < c; ++ch)
            EXPECT_EQ(sums[r].data<float>()[ch], one[r].data<float>()[ch]);
      }
    }
}

// The load-time checks name what is wrong.
TEST(BatchNorm, TrainingBackwardShapesAreChecked) {
  std::shared_ptr<const Program> prog;
  Status s = buildOneOp("batch_norm_grad_sums",
                        {Tensor(DType::F32, {2, 3, 4}), Tensor(DType::F32, {2, 3, 4}),
                         Tensor(DType::F32, {4})},
                        {{DType::F32, {3}}, {DType::F32, {3}}}, {}, prog);
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("per-channel operand has shape [4], expected [3]"),
            std::string::npos)
      << s.message();
  s = buildOneOp("batch_norm_grad_input",
                 {Tensor(DType::F32, {2, 3}), Tensor(DType::F32, {2, 3}),
                  Tensor(DType::F32, {3})},
                 {{DType::F32, {2, 3}}}, {}, prog);
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("expects 6 operands, got 3"), std::string::npos)
      << s.message();
}

TEST(ReluGrad, PassesGradWhereOutputIsPositive) {
  std::mt19937 rng(36);
  Tensor y = randomF32({1000}, rng), g = randomF32({1000}, rng);
  y.data<float>()[0] = 0.0f;
  y.data<float>()[1] = -0.0f;
  y.data<float>()[2] = 1e-30f;
  std::vector<double> want;
  for (int64_t i = 0; i < 1000; ++i)
    want.push_back(y.data<float>()[i] > 0 ? g.data<float>()[i] : 0.0);
  for (int threads : {1, 2})
    expectNear(runOp("relu_grad", {y, g}, {{DType::F32, {1000}}}, {}, threads)[0],
               want, 0, 0);
}

} // namespace
