//===- Conv.cpp - conv2d on CUDA (im2col + cuBLAS) ------------------------===//
//
// Per image and group: im2col into the shared scratch, then
// Y_g [og, spatial] = W_g [og, kdim] · cols [kdim, spatial] as one row-major
// GEMM. 1×1 stride-1 unpadded convolutions read the input as the columns.
//
//===----------------------------------------------------------------------===//
#include "CudaKernelRegistry.h"
#include "CudaKernels.h"
#include "CudaStatus.h"
#include "RowMajorGemm.h"

namespace tessel::runtime::cuda {

namespace {

Status makeConv2D(const KernelContext &ctx, Step &out) {
  const Op &op = ctx.op;
  const Shape &xs = ctx.in(0).shape;
  const Shape &ws = ctx.in(1).shape;
  const Shape &ys = ctx.out(0).shape;
  const float *x = static_cast<const float *>(ctx.operand(0));
  const float *w = static_cast<const float *>(ctx.operand(1));
  const float *bias = op.operands.size() > 2
                          ? static_cast<const float *>(ctx.operand(2))
                          : nullptr;
  float *y = static_cast<float *>(ctx.result(0));
  const int64_t n = xs[0], c = xs[1], h = xs[2], wd = xs[3];
  const int64_t o = ws[0], kh = ws[2], kw = ws[3];
  const int64_t oh = ys[2], ow = ys[3];
  const int64_t cg = c / op.group, og = o / op.group;
  const int64_t kdim = cg * kh * kw, spatial = oh * ow;
  const int64_t group = op.group;
  const bool pointwise = kh == 1 && kw == 1 && op.strides[0] == 1 &&
                         op.strides[1] == 1 && op.pads[0] == 0 &&
                         op.pads[1] == 0 && op.pads[2] == 0 && op.pads[3] == 0;
  if (!fitsInt(og) || !fitsInt(kdim) || !fitsInt(spatial))
    return Status::error("a GEMM dim of the convolution exceeds cuBLAS's int "
                         "range");
  Conv2DGeom g;
  setWindow(g, op, xs, ys, kh, kw);
  g.channels = cg;
  g.dh = op.dilations[0];
  g.dw = op.dilations[1];
  // The columns of one image and group.
  const LateAddress scratch =
      ctx.resources.reserveScratch(kdim * spatial * sizeof(float));
  cudaStream_t s = ctx.stream;
  cublasHandle_t blas = ctx.blas;
  out = [=] {
    if (n * o * spatial == 0)
      return Status::ok();
    float *col = scratch.get<float>();
    const float one = 1.0f, zero = 0.0f;
    for (int64_t b = 0; b < n; ++b)
      for (int64_t gi = 0; gi < group; ++gi) {
        const float *xg = x + (b * c + gi * cg) * h * wd;
        const float *cols = xg;
        if (!pointwise) {
          TSL_RETURN_IF_ERROR(launched(launchIm2Col(xg, g, col, s), "im2col"));
          cols = col;
        }
        float *yg = y + (b * o + gi * og) * spatial;
        if (kdim == 0) {
          TSL_CUDA(cudaMemsetAsync(yg, 0, og * spatial * sizeof(float), s),
                   "cudaMemsetAsync");
          continue;
        }
        TSL_RETURN_IF_ERROR(gemmRowMajor(
            blas, false, false, static_cast<int>(og), static_cast<int>(spatial),
            static_cast<int>(kdim), one, w + gi * og * kdim,
            static_cast<int>(kdim), cols, static_cast<int>(spatial), zero, yg));
      }
    if (bias)
      TSL_RETURN_IF_ERROR(
          launched(launchAddBias(y, bias, n, o, spatial, s), "conv2d bias"));
    return Status::ok();
  };
  return Status::ok();
}

} // namespace

void registerConvKernels(KernelRegistry &registry) {
  registry.add(OpKind::Conv2D, makeConv2D);
}

} // namespace tessel::runtime::cuda
