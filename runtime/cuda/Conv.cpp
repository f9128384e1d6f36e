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
// With `bf16_operands` (tesselc --precision bf16) the two multiplied
// operands are converted to bf16 copies in the scratch at the start of each
// run (launchToBf16, exact on their bf16 values), the columns are im2col'd
// in bf16, and every GEMM is cublasGemmEx over bf16 with f32 accumulation
// and an f32 result (tensor cores); col2im and the bias stay f32.
//
//===----------------------------------------------------------------------===//
#include "CudaKernelRegistry.h"
#include "CudaKernels.h"
#include "CudaStatus.h"
#include "RowMajorGemm.h"

#include <type_traits>

namespace tessel::runtime::cuda {

namespace {

/// The geometry of a convolution from input `xs` [N, C, H, W] to output
/// `ys` [N, O, OH, OW] with weight `ws` [O, C/group, KH, KW], and the GEMM
/// dims of one image and group (all within cuBLAS's int range).
struct ConvDims {
  int64_t n, c, h, w, o, kh, kw, oh, ow, cg, og, kdim, spatial, group;
  bool pointwise; // 1x1, stride 1, unpadded: the input is its own columns
  bool bf16;      // bf16_operands: the GEMMs over bf16 copies
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
  d.bf16 = op.intAttr("bf16_operands", 0) != 0;
  d.pointwise = d.kh == 1 && d.kw == 1 && op.strides[0] == 1 &&
                op.strides[1] == 1 && op.pads[0] == 0 && op.pads[1] == 0 &&
                op.pads[2] == 0 && op.pads[3] == 0;
  if (!fitsInt(d.og) || !fitsInt(d.kdim) || !fitsInt(d.spatial))
    return Status::error("a GEMM dim of the convolution exceeds cuBLAS's int "
                         "range");
  d.g = conv2DGeom(op, xs, ws, ys);
  return Status::ok();
}

size_t roundUp256(size_t v) { return (v + 255) / 256 * 256; }

/// The scratch of one convolution instruction, [columns | a | b]: the
/// columns of one image and group (none for a pointwise convolution, whose
/// input is its own columns; f32, or bf16 where `col16` says so) and, with
/// bf16_operands, the bf16 copies of its two multiplied operands (aN and bN
/// elements), each part 256-byte aligned.
struct ConvScratch {
  LateAddress base;
  bool bf16 = false;
  int64_t aN = 0, bN = 0;
  size_t aOff = 0, bOff = 0;

  static ConvScratch reserve(const KernelContext &ctx, const ConvDims &d,
                             bool col16, int64_t aN, int64_t bN) {
    ConvScratch r;
    r.bf16 = d.bf16;
    const size_t cols =
        d.pointwise ? 0
                    : static_cast<size_t>(d.kdim * d.spatial) *
                          (col16 ? sizeof(uint16_t) : sizeof(float));
    size_t total = cols;
    if (d.bf16) {
      r.aN = aN;
      r.bN = bN;
      r.aOff = roundUp256(cols);
      r.bOff = r.aOff + roundUp256(static_cast<size_t>(aN) * 2);
      total = r.bOff + static_cast<size_t>(bN) * 2;
    }
    r.base = ctx.resources.reserveScratch(total);
    return r;
  }
  template <typename T> T *col() const { return base.get<T>(); }
  uint16_t *a() const {
    return reinterpret_cast<uint16_t *>(base.get<char>() + aOff);
  }
  uint16_t *b() const {
    return reinterpret_cast<uint16_t *>(base.get<char>() + bOff);
  }
  /// With bf16_operands: converts the operands `a` and `b` into the copies.
  Status convert(const float *a, const float *b, cudaStream_t s) const {
    if (!bf16)
      return Status::ok();
    TSL_RETURN_IF_ERROR(
        launched(launchToBf16(a, this->a(), aN, s), "bf16 operand"));
    return launched(launchToBf16(b, this->b(), bN, s), "bf16 operand");
  }
};

/// The columns [kdim, spatial] of image-and-group input `xg` (f32, or bf16
/// bits): im2col into `col` on `s`, or `xg` itself for a pointwise
/// convolution.
template <typename T>
Status columnsOf(const T *xg, const ConvDims &d, T *col, cudaStream_t s,
                 const T *&cols) {
  cols = xg;
  if (d.pointwise)
    return Status::ok();
  cols = col;
  if constexpr (std::is_same_v<T, float>)
    return launched(launchIm2Col(xg, d.g, col, s), "im2col");
  else
    return launched(launchIm2ColBf16(xg, d.g, col, s), "im2col (bf16)");
}

/// Row-major Y = alpha·op(A)·op(B) + beta·Y over f32 or bf16 A and B.
Status convGemm(cublasHandle_t blas, bool transA, bool transB, int64_t m,
                int64_t n, int64_t k, float alpha, const float *a, int64_t lda,
                const float *b, int64_t ldb, float beta, float *y) {
  return gemmRowMajor(blas, transA, transB, static_cast<int>(m),
                      static_cast<int>(n), static_cast<int>(k), alpha, a,
                      static_cast<int>(lda), b, static_cast<int>(ldb), beta, y);
}
Status convGemm(cublasHandle_t blas, bool transA, bool transB, int64_t m,
                int64_t n, int64_t k, float alpha, const uint16_t *a,
                int64_t lda, const uint16_t *b, int64_t ldb, float beta,
                float *y) {
  return gemmRowMajorBf16(blas, transA, transB, static_cast<int>(m),
                          static_cast<int>(n), static_cast<int>(k), alpha, a,
                          static_cast<int>(lda), b, static_cast<int>(ldb),
                          beta, y);
}

/// conv2d_backward_data's GEMMs over dy and w of type T (f32, or bf16
/// bits): per image and group, the columns W_g^T [kdim, og] · dY_g [og,
/// spatial] in f32, then col2im into dx (or the GEMM straight into dx for a
/// pointwise convolution).
template <typename T>
Status backwardData(const ConvDims &d, const T *dy, const T *w, float *col,
                    float *dx, cudaStream_t s, cublasHandle_t blas) {
  for (int64_t b = 0; b < d.n; ++b)
    for (int64_t gi = 0; gi < d.group; ++gi) {
      float *dxg = dx + (b * d.c + gi * d.cg) * d.h * d.w;
      TSL_RETURN_IF_ERROR(convGemm(blas, true, false, d.kdim, d.spatial, d.og,
                                   1.0f, w + gi * d.og * d.kdim, d.kdim,
                                   dy + (b * d.o + gi * d.og) * d.spatial,
                                   d.spatial, 0.0f,
                                   d.pointwise ? dxg : col));
      if (!d.pointwise)
        TSL_RETURN_IF_ERROR(launched(launchCol2Im(col, d.g, dxg, s), "col2im"));
    }
  return Status::ok();
}

/// dx = conv2d_backward_data(dy, w).
Status makeConv2DBackwardData(const KernelContext &ctx, Step &out) {
  ConvDims d;
  TSL_RETURN_IF_ERROR(convDims(ctx.op, ctx.out(0).shape, ctx.in(1).shape,
                               ctx.in(0).shape, d));
  const float *dy = static_cast<const float *>(ctx.operand(0));
  const float *w = static_cast<const float *>(ctx.operand(1));
  float *dx = static_cast<float *>(ctx.result(0));
  const size_t bytes = ctx.out(0).bytes;
  // The columns are the GEMM's f32 result here, bf16 or not.
  const ConvScratch scratch = ConvScratch::reserve(
      ctx, d, false, ctx.in(0).numel, ctx.in(1).numel);
  cudaStream_t s = ctx.stream;
  cublasHandle_t blas = ctx.blas;
  out = [=] {
    if (bytes == 0)
      return Status::ok();
    if (d.og == 0 || d.spatial == 0 || d.kdim == 0) { // empty sums
      TSL_CUDA(cudaMemsetAsync(dx, 0, bytes, s), "cudaMemsetAsync");
      return Status::ok();
    }
    if (!d.bf16)
      return backwardData(d, dy, w, scratch.col<float>(), dx, s, blas);
    TSL_RETURN_IF_ERROR(scratch.convert(dy, w, s));
    return backwardData<uint16_t>(d, scratch.a(), scratch.b(),
                                  scratch.col<float>(), dx, s, blas);
  };
  return Status::ok();
}

/// conv2d_backward_weight's GEMMs over x and dy of type T: per group,
/// dW_g [og, kdim] = the sum over images of dY_g [og, spatial] · cols^T
/// [spatial, kdim], accumulated in f32.
template <typename T>
Status backwardWeight(const ConvDims &d, const T *x, const T *dy, T *col,
                      float *dw, cudaStream_t s, cublasHandle_t blas) {
  for (int64_t b = 0; b < d.n; ++b)
    for (int64_t gi = 0; gi < d.group; ++gi) {
      const T *cols;
      TSL_RETURN_IF_ERROR(columnsOf(x + (b * d.c + gi * d.cg) * d.h * d.w, d,
                                    col, s, cols));
      TSL_RETURN_IF_ERROR(convGemm(
          blas, false, true, d.og, d.kdim, d.spatial, 1.0f,
          dy + (b * d.o + gi * d.og) * d.spatial, d.spatial, cols, d.spatial,
          b == 0 ? 0.0f : 1.0f, dw + gi * d.og * d.kdim));
    }
  return Status::ok();
}

/// dw = conv2d_backward_weight(x, dy).
Status makeConv2DBackwardWeight(const KernelContext &ctx, Step &out) {
  ConvDims d;
  TSL_RETURN_IF_ERROR(convDims(ctx.op, ctx.in(0).shape, ctx.out(0).shape,
                               ctx.in(1).shape, d));
  const float *x = static_cast<const float *>(ctx.operand(0));
  const float *dy = static_cast<const float *>(ctx.operand(1));
  float *dw = static_cast<float *>(ctx.result(0));
  const size_t bytes = ctx.out(0).bytes;
  const ConvScratch scratch = ConvScratch::reserve(
      ctx, d, d.bf16, ctx.in(0).numel, ctx.in(1).numel);
  cudaStream_t s = ctx.stream;
  cublasHandle_t blas = ctx.blas;
  out = [=] {
    if (bytes == 0)
      return Status::ok();
    if (d.n == 0 || d.spatial == 0) { // empty sums
      TSL_CUDA(cudaMemsetAsync(dw, 0, bytes, s), "cudaMemsetAsync");
      return Status::ok();
    }
    if (!d.bf16)
      return backwardWeight(d, x, dy, scratch.col<float>(), dw, s, blas);
    TSL_RETURN_IF_ERROR(scratch.convert(x, dy, s));
    return backwardWeight<uint16_t>(d, scratch.a(), scratch.b(),
                                    scratch.col<uint16_t>(), dw, s, blas);
  };
  return Status::ok();
}

/// conv2d's GEMMs over x and w of type T: per image and group,
/// Y_g [og, spatial] = W_g [og, kdim] · cols [kdim, spatial] in f32.
template <typename T>
Status forward(const ConvDims &d, const T *x, const T *w, T *col, float *y,
               cudaStream_t s, cublasHandle_t blas) {
  for (int64_t b = 0; b < d.n; ++b)
    for (int64_t gi = 0; gi < d.group; ++gi) {
      float *yg = y + (b * d.o + gi * d.og) * d.spatial;
      if (d.kdim == 0) {
        TSL_CUDA(cudaMemsetAsync(yg, 0, d.og * d.spatial * sizeof(float), s),
                 "cudaMemsetAsync");
        continue;
      }
      const T *cols;
      TSL_RETURN_IF_ERROR(columnsOf(x + (b * d.c + gi * d.cg) * d.h * d.w, d,
                                    col, s, cols));
      TSL_RETURN_IF_ERROR(convGemm(blas, false, false, d.og, d.spatial, d.kdim,
                                   1.0f, w + gi * d.og * d.kdim, d.kdim, cols,
                                   d.spatial, 0.0f, yg));
    }
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
  const ConvScratch scratch = ConvScratch::reserve(
      ctx, d, d.bf16, ctx.in(0).numel, ctx.in(1).numel);
  cudaStream_t s = ctx.stream;
  cublasHandle_t blas = ctx.blas;
  out = [=] {
    if (d.n * d.o * d.spatial == 0)
      return Status::ok();
    if (!d.bf16) {
      TSL_RETURN_IF_ERROR(forward(d, x, w, scratch.col<float>(), y, s, blas));
    } else {
      TSL_RETURN_IF_ERROR(scratch.convert(x, w, s));
      TSL_RETURN_IF_ERROR(forward<uint16_t>(d, scratch.a(), scratch.b(),
                                            scratch.col<uint16_t>(), y, s,
                                            blas));
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
