//===- CudaWindowMathTest.cpp - The CUDA gradients' index math, on host ---===//
//
// The pools' gradients and col2im run on CUDA one element per thread
// through the functions of runtime/cuda/WindowMath.h. These tests run the
// same functions on the host, over the CPU backend's test cases, against
// the CPU backend's results, so that their index math is checked without a
// device (the kernels around them are a grid-stride loop each). The GEMM
// of conv2d_backward_data, a cuBLAS call on the device, is a reference
// loop here.
//
//===----------------------------------------------------------------------===//
#include "TestUtil.h"
#include "WindowMath.h"

#include <algorithm>

namespace tessel::runtime::test {
namespace {

TEST(CudaWindowMath, PoolBackwardMatchesCpu) {
  std::mt19937 rng(51);
  int checked = 0;
  forEachPoolCase([&](const PoolCase &c, const char *op, int cip, Attrs attrs,
                      const Shape &ys) {
    const bool isMax = std::string(op) == "max_pool";
    if (isMax && cip)
      return;
    // Distinct values: one maximum per window, as oneDNN's workspace.
    Tensor x = distinctF32(c.x, rng);
    Tensor dy = randomF32(ys, rng);
    std::vector<Tensor> ins = {dy};
    if (isMax)
      ins.insert(ins.begin(), x);
    const std::string name = std::string(op) + "_backward";
    SCOPED_TRACE(name + " " + shapeToString(c.x) +
                 " cip=" + std::to_string(cip) + (c.ceil ? " ceil" : ""));
    std::shared_ptr<const Program> prog;
    ASSERT_TRUE(
        buildOneOp(name, ins, {{DType::F32, c.x}}, attrs, prog).isOk());
    auto want = runOp(name, ins, {{DType::F32, c.x}}, std::move(attrs));
    const cuda::PoolGeom g = cuda::poolGeom(prog->ops[0], c.x, ys);
    std::vector<double> got(numElements(c.x));
    for (int64_t e = 0; e < numElements(c.x); ++e)
      got[e] = isMax ? cuda::poolBackwardAt<true>(x.data<float>(),
                                                  dy.data<float>(), g, e)
                     : cuda::poolBackwardAt<false>(nullptr, dy.data<float>(),
                                                   g, e);
    expectNear(want[0], got, 1e-6, 1e-6);
    ++checked;
  });
  EXPECT_GT(checked, 8);
}

TEST(CudaWindowMath, Col2ImMatchesCpuBackwardData) {
  std::mt19937 rng(52);
  const std::vector<ConvCase> cases = convBackwardCases();
  for (const ConvCase &c : cases) {
    SCOPED_TRACE("x " + shapeToString(c.x) + " w " + shapeToString(c.w));
    const Shape ys = convResult(c);
    Tensor dy = randomF32(ys, rng), w = randomF32(c.w, rng);
    std::shared_ptr<const Program> prog;
    ASSERT_TRUE(buildOneOp("conv2d_backward_data", {dy, w},
                           {{DType::F32, c.x}}, convAttrs(c), prog)
                    .isOk());
    auto want = runOp("conv2d_backward_data", {dy, w}, {{DType::F32, c.x}},
                      convAttrs(c));
    // Conv.cpp's step: per image and group, cols = W_g^T dY_g, then col2im.
    const cuda::Conv2DGeom g = cuda::conv2DGeom(prog->ops[0], c.x, c.w, ys);
    const int64_t cg = c.x[1] / c.group, og = c.w[0] / c.group;
    const int64_t kdim = cg * c.w[2] * c.w[3], spatial = ys[2] * ys[3];
    std::vector<float> col(kdim * spatial);
    std::vector<double> got(numElements(c.x));
    for (int64_t b = 0; b < c.x[0]; ++b)
      for (int64_t gi = 0; gi < c.group; ++gi) {
        const float *wg = w.data<float>() + gi * og * kdim;
        const float *dyg = dy.data<float>() + (b * c.w[0] + gi * og) * spatial;
        for (int64_t k = 0; k < kdim; ++k)
          for (int64_t q = 0; q < spatial; ++q) {
            double s = 0;
            for (int64_t o = 0; o < og; ++o)
              s += double(wg[o * kdim + k]) * dyg[o * spatial + q];
            col[k * spatial + q] = static_cast<float>(s);
          }
        const int64_t plane = cg * c.x[2] * c.x[3];
        for (int64_t e = 0; e < plane; ++e)
          got[(b * c.x[1] + gi * cg) * c.x[2] * c.x[3] + e] =
              cuda::col2imAt(col.data(), g, e);
      }
    expectNear(want[0], got, 1e-4, 1e-5);
  }
}

} // namespace
} // namespace tessel::runtime::test
