//===- Conv.cpp - conv2d and its gradients on CUDA (im2col + cuBLAS) ------===//
//
// Per image and group: im2col into the shared scratch, then
// Y_g [og, spatial] = W_g [og, kdim] · cols [kdim, spatial] as one row-major
// GEMM. 1×1 stride-1 unpadded convolutions read the input as the columns.
// The gradients are the same GEMMs transposed:
//   conv2d_backward_data (dy, w) -> dx: cols = W_g^T · dY_g, then col2im
//     (a gather: every dx element sums the column entries that read it);
//   conv2d_backward_weight (x, dy) -> dw: dW_g = sum over images of
//     dY_g · cols^T (cuBLAS accumulating with beta = 1 after the first).
// The CPU runs both on oneDNN (cpu/ConvTraining.cpp): the same sums in
// another order.
//
//===----------------------------------------------------------------------===//
#include "CudaKernelRegistry.h"
#include "CudaKernels.h"
#include "CudaStatus.h"
#include "RowMajorGemm.h"

namespace tessel::runtime::cuda {

namespace {

/// The geometry of a convolution from input `xs` [N, C, H, W] to output
/// `ys` [N, O, OH, OW] with weight `ws` [O, C/group, KH, KW], and the GEMM
/// dims of one image and group (all within cuBLAS's int range).
struct ConvDims {
  int64_t n, c, h, w, o, kh, kw, oh, ow, cg, og, kdim, spatial, group;
  bool pointwise; // 1x1, stride 1, unpadded: the input is its own columns
  Conv2DGeom g;
};

Status convDims(const Op &op, const Shape &xs, const Shape &ws,
                const Shape &ys, ConvDims &d) {
  d.n = xs[0];
  d.c = xs[1];
  d.h = xs[2];
  d.w = xs[3];
  d.o = ws[0];
  d.kh = ws[2];
  d.kw = ws[3];
  d.oh = ys[2];
  d.ow = ys[3];
  d.group = op.group;
  d.cg = d.c / op.group;
  d.og = d.o / op.group;
  d.kdim = d.cg * d.kh * d.kw;
  d.spatial = d.oh * d.ow;
  d.pointwise = d.kh == 1 && d.kw == 1 && op.strides[0] == 1 &&
                op.strides[1] == 1 && op.pads[0] == 0 && op.pads[1] == 0 &&
                op.pads[2] == 0 && op.pads[3] == 0;
  if (!fitsInt(d.og) || !fitsInt(d.kdim) || !fitsInt(d.spatial))
    return Status::error("a GEMM dim of the convolution exceeds cuBLAS's int "
                         "range");
  d.g = conv2DGeom(op, xs, ws, ys);
  return Status::ok();
}

/// The scratch for the columns of one image and group (none for a
/// pointwise convolution, whose input is its own columns).
LateAddress reserveColumns(const KernelContext &ctx, const ConvDims &d) {
  return ctx.resources.reserveScratch(
      d.pointwise ? 0 : d.kdim * d.spatial * sizeof(float));
}

/// The columns [kdim, spatial] of image-and-group input `xg`: im2col into
/// `col` on `s`, or `xg` itself for a pointwise convolution.
Status columnsOf(const float *xg, const ConvDims &d, float *col,
                 cudaStream_t s, const float *&cols) {
  cols = xg;
  if (d.pointwise)
    return Status::ok();
  cols = col;
  return launched(launchIm2Col(xg, d.g, col, s), "im2col");
}

/// dx = conv2d_backward_data(dy, w): per image and group, the columns
/// W_g^T [kdim, og] · dY_g [og, spatial], then col2im into dx (or the GEMM
/// straight into dx for a pointwise convolution).
Status makeConv2DBackwardData(const KernelContext &ctx, Step &out) {
  ConvDims d;
  TSL_RETURN_IF_ERROR(convDims(ctx.op, ctx.out(0).shape, ctx.in(1).shape,
                               ctx.in(0).shape, d));
  const float *dy = static_cast<const float *>(ctx.operand(0));
  const float *w = static_cast<const float *>(ctx.operand(1));
  float *dx = static_cast<float *>(ctx.result(0));
  const size_t bytes = ctx.out(0).bytes;
  const LateAddress scratch = reserveColumns(ctx, d);
  cudaStream_t s = ctx.stream;
  cublasHandle_t blas = ctx.blas;
  out = [=] {
    if (bytes == 0)
      return Status::ok();
    if (d.og == 0 || d.spatial == 0 || d.kdim == 0) { // empty sums
      TSL_CUDA(cudaMemsetAsync(dx, 0, bytes, s), "cudaMemsetAsync");
      return Status::ok();
    }
    float *col = scratch.get<float>();
    for (int64_t b = 0; b < d.n; ++b)
      for (int64_t gi = 0; gi < d.group; ++gi) {
        float *dxg = dx + (b * d.c + gi * d.cg) * d.h * d.w;
        const float *dyg = dy + (b * d.o + gi * d.og) * d.spatial;
        TSL_RETURN_IF_ERROR(gemmRowMajor(
            blas, true, false, static_cast<int>(d.kdim),
            static_cast<int>(d.spatial), static_cast<int>(d.og), 1.0f,
            w + gi * d.og * d.kdim, static_cast<int>(d.kdim), dyg,
            static_cast<int>(d.spatial), 0.0f, d.pointwise ? dxg : col));
        if (!d.pointwise)
          TSL_RETURN_IF_ERROR(
              launched(launchCol2Im(col, d.g, dxg, s), "col2im"));
      }
    return Status::ok();
  };
  return Status::ok();
}

/// dw = conv2d_backward_weight(x, dy): per group, dW_g [og, kdim] = the sum
/// over images of dY_g [og, spatial] · cols^T [spatial, kdim].
Status makeConv2DBackwardWeight(const KernelContext &ctx, Step &out) {
  ConvDims d;
  TSL_RETURN_IF_ERROR(convDims(ctx.op, ctx.in(0).shape, ctx.out(0).shape,
                               ctx.in(1).shape, d));
  const float *x = static_cast<const float *>(ctx.operand(0));
  const float *dy = static_cast<const float *>(ctx.operand(1));
  float *dw = static_cast<float *>(ctx.result(0));
  const size_t bytes = ctx.out(0).bytes;
  const LateAddress scratch = reserveColumns(ctx, d);
  cudaStream_t s = ctx.stream;
  cublasHandle_t blas = ctx.blas;
  out = [=] {
    if (bytes == 0)
      return Status::ok();
    if (d.n == 0 || d.spatial == 0) { // empty sums
      TSL_CUDA(cudaMemsetAsync(dw, 0, bytes, s), "cudaMemsetAsync");
      return Status::ok();
    }
    float *col = scratch.get<float>();
    for (int64_t b = 0; b < d.n; ++b)
      for (int64_t gi = 0; gi < d.group; ++gi) {
        const float *cols;
        TSL_RETURN_IF_ERROR(columnsOf(x + (b * d.c + gi * d.cg) * d.h * d.w,
                                      d, col, s, cols));
        TSL_RETURN_IF_ERROR(gemmRowMajor(
            blas, false, true, static_cast<int>(d.og),
            static_cast<int>(d.kdim), static_cast<int>(d.spatial), 1.0f,
            dy + (b * d.o + gi * d.og) * d.spatial,
            static_cast<int>(d.spatial), cols, static_cast<int>(d.spatial),
            b == 0 ? 0.0f : 1.0f, dw + gi * d.og * d.kdim));
      }
    return Status::ok();
  };
  return Status::ok();
}

Status makeConv2D(const KernelContext &ctx, Step &out) {
  const Op &op = ctx.op;
  ConvDims d;
  TSL_RETURN_IF_ERROR(convDims(op, ctx.in(0).shape, ctx.in(1).shape,
                               ctx.out(0).shape, d));
  const float *x = static_cast<const float *>(ctx.operand(0));
  const float *w = static_cast<const float *>(ctx.operand(1));
  const float *bias = op.operands.size() > 2
                          ? static_cast<const float *>(ctx.operand(2))
                          : nullptr;
  float *y = static_cast<float *>(ctx.result(0));
  const LateAddress scratch = reserveColumns(ctx, d);
  cudaStream_t s = ctx.stream;
  cublasHandle_t blas = ctx.blas;
  out = [=] {
    if (d.n * d.o * d.spatial == 0)
      return Status::ok();
    float *col = scratch.get<float>();
    const float one = 1.0f, zero = 0.0f;
    for (int64_t b = 0; b < d.n; ++b)
      for (int64_t gi = 0; gi < d.group; ++gi) {
        const float *cols;
        TSL_RETURN_IF_ERROR(columnsOf(x + (b * d.c + gi * d.cg) * d.h * d.w,
                                      d, col, s, cols));
        float *yg = y + (b * d.o + gi * d.og) * d.spatial;
        if (d.kdim == 0) {
          TSL_CUDA(cudaMemsetAsync(yg, 0, d.og * d.spatial * sizeof(float), s),
                   "cudaMemsetAsync");
          continue;
        }
        TSL_RETURN_IF_ERROR(gemmRowMajor(
            blas, false, false, static_cast<int>(d.og),
            static_cast<int>(d.spatial), static_cast<int>(d.kdim), one,
            w + gi * d.og * d.kdim, static_cast<int>(d.kdim), cols,
            static_cast<int>(d.spatial), zero, yg));
      }
    if (bias)
      TSL_RETURN_IF_ERROR(launched(
          launchAddBias(y, bias, d.n, d.o, d.spatial, s), "conv2d bias"));
    return Status::ok();
  };
  return Status::ok();
}

} // namespace

void registerConvKernels(KernelRegistry &registry) {
  registerFamily(registry, kConvKinds, [](OpKind k) -> KernelFactory {
    switch (k) {
    case OpKind::Conv2D:
      return makeConv2D;
    case OpKind::Conv2DBackwardData:
      return makeConv2DBackwardData;
    case OpKind::Conv2DBackwardWeight:
      return makeConv2DBackwardWeight;
    default:
      return nullptr;
    }
  });
}

} // namespace tessel::runtime::cuda
