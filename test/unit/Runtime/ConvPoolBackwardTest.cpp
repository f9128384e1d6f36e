//===- ConvPoolBackwardTest.cpp - conv2d's and the pools' backward ops ----===//
//
// conv2d_backward_data, conv2d_backward_weight, max_pool_backward and
// avg_pool_backward (oneDNN's backward primitives) against direct loops in
// double, over strides, pads, dilations, groups and ceil mode; and the
// load-time check of a grad whose shape no forward op gives.
//
//===----------------------------------------------------------------------===//
#include "DnnlConv.h"
#include "TestUtil.h"

#include <cstdlib>
#include <cstring>

using namespace tessel::runtime;
using namespace tessel::runtime::test;

namespace {

/// conv2d's input and weight gradients for `dy`, by direct loops in double.
void loopGradients(const ConvCase &c, const Tensor &x, const Tensor &w,
                   const Tensor &dy, std::vector<double> &dx,
                   std::vector<double> &dw) {
  dx.assign(numElements(c.x), 0.0);
  dw.assign(numElements(c.w), 0.0);
  forEachConvTerm(c, [&](int64_t xi, int64_t wi, int64_t yi) {
    dx[xi] += double(dy.data<float>()[yi]) * w.data<float>()[wi];
    dw[wi] += double(dy.data<float>()[yi]) * x.data<float>()[xi];
  });
}

TEST(ConvBackward, DataAndWeightMatchLoops) {
  std::mt19937 rng(31);
  const std::vector<ConvCase> cases = convBackwardCases();
  for (int threads : {1, 2})
    for (const ConvCase &c : cases) {
      const Shape ys = convResult(c);
      Tensor x = randomF32(c.x, rng), w = randomF32(c.w, rng),
             dy = randomF32(ys, rng);
      std::vector<double> dx, dw;
      loopGradients(c, x, w, dy, dx, dw);
      SCOPED_TRACE("x " + shapeToString(c.x) + " w " + shapeToString(c.w) +
                   " threads " + std::to_string(threads));
      auto gx = runOp("conv2d_backward_data", {dy, w}, {{DType::F32, c.x}},
                      convAttrs(c), threads);
      expectNear(gx[0], dx, 1e-4, 1e-5);
      auto gw = runOp("conv2d_backward_weight", {x, dy}, {{DType::F32, c.w}},
                      convAttrs(c), threads);
      expectNear(gw[0], dw, 1e-4, 1e-5);
    }
}

// TESSEL_WINOGRAD=1: 3x3 stride-1 convs on maps of at least 14x14 run
// oneDNN's Winograd F(4x4, 3x3) backward kernels (ConvTraining.cpp); they
// round differently from the direct ones, but stay within 1e-4 of the loops.
TEST(ConvBackward, WinogradMatchesLoops) {
  std::mt19937 rng(33);
  ::setenv("TESSEL_WINOGRAD", "1", 1);
  const ConvCase c{{2, 16, 16, 16}, {32, 16, 3, 3}, {1, 1}, {1, 1, 1, 1},
                   {1, 1}, 1};
  const Shape ys = convResult(c);
  Tensor x = randomF32(c.x, rng), w = randomF32(c.w, rng),
         dy = randomF32(ys, rng);
  std::vector<double> dx, dw;
  loopGradients(c, x, w, dy, dx, dw);
  auto gx = runOp("conv2d_backward_data", {dy, w}, {{DType::F32, c.x}},
                  convAttrs(c), 1);
  auto gw = runOp("conv2d_backward_weight", {x, dy}, {{DType::F32, c.w}},
                  convAttrs(c), 1);
  ::unsetenv("TESSEL_WINOGRAD");
  expectNear(gx[0], dx, 1e-4, 1e-4);
  expectNear(gw[0], dw, 1e-4, 1e-4);
  // And not the direct kernel's rounding: Winograd really ran, where oneDNN
  // has it (AVX-512); elsewhere the numbers above came from the fallback.
  if (!tessel::runtime::cpu::dnnlHasWinograd())
    GTEST_SKIP() << "oneDNN has no Winograd kernel on this CPU (AVX2 or "
                    "ONEDNN_MAX_CPU_ISA below AVX-512): the direct fallback "
                    "was checked, Winograd itself was not";
  auto directX = runOp("conv2d_backward_data", {dy, w}, {{DType::F32, c.x}},
                       convAttrs(c), 1);
  EXPECT_NE(0, std::memcmp(gx[0].data<float>(), directX[0].data<float>(),
                           numElements(c.x) * sizeof(float)));
}

TEST(PoolBackward, MaxAndAvgMatchLoops) {
  std::mt19937 rng(32);
  forEachPoolCase([&](const PoolCase &c, const char *op, int cip, Attrs attrs,
                      const Shape &ys) {
    const bool isMax = std::string(op) == "max_pool";
    if (isMax && cip)
      return; // count_include_pad means nothing to max pooling
    // Distinct values: one maximum per window.
    Tensor x = distinctF32(c.x, rng);
    Tensor dy = randomF32(ys, rng);
    std::vector<double> dx(numElements(c.x), 0.0);
    for (int64_t pl = 0; pl < c.x[0] * c.x[1]; ++pl)
      for (int64_t r = 0; r < ys[2]; ++r)
        for (int64_t s = 0; s < ys[3]; ++s) {
          const double g = dy.data<float>()[(pl * ys[2] + r) * ys[3] + s];
          std::vector<int64_t> in;
          int64_t padded = 0, best = -1;
          for (int64_t i = 0; i < c.k[0]; ++i)
            for (int64_t j = 0; j < c.k[1]; ++j) {
              int64_t ih = r * c.s[0] - c.p[0] + i, iw = s * c.s[1] - c.p[1] + j;
              if (ih < c.x[2] + c.p[2] && iw < c.x[3] + c.p[3])
                ++padded;
              if (ih < 0 || iw < 0 || ih >= c.x[2] || iw >= c.x[3])
                continue;
              int64_t k = (pl * c.x[2] + ih) * c.x[3] + iw;
              in.push_back(k);
              if (best < 0 || x.data<float>()[k] > x.data<float>()[best])
                best = k;
            }
          if (isMax)
            dx[best] += g;
          else
            for (int64_t k : in)
              dx[k] += g / double(cip ? padded : in.size());
        }
    SCOPED_TRACE(std::string(op) + "_backward " + shapeToString(c.x) +
                 " cip=" + std::to_string(cip) + (c.ceil ? " ceil" : ""));
    std::vector<Tensor> ins = {dy};
    if (isMax)
      ins.insert(ins.begin(), x);
    auto out = runOp(std::string(op) + "_backward", ins, {{DType::F32, c.x}},
                     std::move(attrs));
    expectNear(out[0], dx, 1e-6, 1e-6);
  });
}

TEST(ConvBackward, GradOfNoConvIsALoadError) {
  std::mt19937 rng(33);
  // A 3x3 conv of [1, 2, 6, 6] gives [1, 4, 4, 4], not [1, 4, 5, 5].
  std::shared_ptr<const Program> prog;
  Status s = buildOneOp("conv2d_backward_data",
                        {randomF32({1, 4, 5, 5}, rng), randomF32({4, 2, 3, 3}, rng)},
                        {{DType::F32, {1, 2, 6, 6}}},
                        Attrs().is("strides", {1, 1}).is("pads", {0, 0, 0, 0}),
                        prog);
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("operand 0 (grad) has shape [1, 4, 5, 5]"),
            std::string::npos)
      << s.message();
  s = buildOneOp("max_pool_backward",
                 {randomF32({1, 2, 6, 6}, rng), randomF32({1, 2, 2, 2}, rng)},
                 {{DType::F32, {1, 2, 6, 6}}},
                 Attrs().is("kernel", {2, 2}).is("strides", {2, 2}), prog);
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("grad has shape [1, 2, 2, 2]"), std::string::npos)
      << s.message();
}

} // namespace
