//===- Attention.cpp - fused attention and its gradient on CUDA -----------===//
//
// attention and attention_grad (tessel/runtime/Attention.h) as the CPU
// kernels compute them (cpu/Attention.cpp): per batch entry and block of
// query rows, the scores by one cuBLAS GEMM into the shared scratch, the
// mask, softmax and lse by one row kernel (Attention.cu), then p v; the
// backward recomputes p from lse and issues dv += p^T grad, dp = grad v^T,
// dq = scale ds kt^T and dkt += scale q^T ds. The scratch holds at most
// kScratchFloats scores, so memory stays linear in the sequence. This is
// the f32 SIMT path; FlashAttention-2's tensor-core kernel (tiles in shared
// memory, bf16 mma) is docs/fusion.md's next step.
//
//===----------------------------------------------------------------------===//
#include "CudaKernelRegistry.h"
#include "CudaKernels.h"
#include "RowMajorGemm.h"
#include "tessel/runtime/Attention.h"

#include <algorithm>
#include <vector>

namespace tessel::runtime::cuda {

namespace {

/// The scores the scratch holds at once, in floats (16 MiB).
constexpr int64_t kScratchFloats = int64_t(1) << 22;

struct Args {
  AttentionDims d;
  int64_t rows = 1; // query rows per block
  const float *q, *kt, *v, *mask = nullptr, *fill = nullptr;
  std::vector<int64_t> maskOffsets; // per batch entry
};

Status attentionArgs(const KernelContext &ctx, Args &a) {
  const AttentionOperands at = attentionOperands(ctx.op);
  const bool hasMask = at.mask >= 0;
  const std::string bad =
      makeAttentionDims(ctx.in(0).shape, ctx.in(1).shape, ctx.in(2).shape,
                        hasMask ? &ctx.in(at.mask).shape : nullptr, a.d);
  if (!bad.empty())
    return Status::error(bad);
  a.d.scale = ctx.op.floatAttr("scale", 1.0f);
  if (!fitsInt(a.d.s) || !fitsInt(a.d.t) || !fitsInt(a.d.d) ||
      !fitsInt(a.d.dv))
    return Status::error("an attention dim exceeds cuBLAS's int range");
  a.rows = std::max<int64_t>(
      1, std::min(a.d.s, kScratchFloats / std::max<int64_t>(a.d.t, 1)));
  a.q = static_cast<const float *>(ctx.operand(0));
  a.kt = static_cast<const float *>(ctx.operand(1));
  a.v = static_cast<const float *>(ctx.operand(2));
  if (hasMask)
    a.mask = static_cast<const float *>(ctx.operand(at.mask));
  if (at.fill >= 0)
    a.fill = static_cast<const float *>(ctx.operand(at.fill));
  for (int64_t b = 0; hasMask && b < a.d.batch; ++b)
    a.maskOffsets.push_back(a.d.maskOffset(b));
  return Status::ok();
}

/// The mask's element of (b, i0, 0), or null without one.
const float *maskAt(const Args &a, int64_t b, int64_t i0) {
  return a.mask ? a.mask + a.maskOffsets[b] + i0 * a.d.maskRowStride : nullptr;
}

Status makeAttention(const KernelContext &ctx, Step &out) {
  Args a;
  TSL_RETURN_IF_ERROR(attentionArgs(ctx, a));
  float *o = static_cast<float *>(ctx.result(0));
  float *lse = static_cast<float *>(ctx.result(1));
  const LateAddress scratch = ctx.resources.reserveScratch(
      static_cast<size_t>(a.rows * std::max<int64_t>(a.d.t, 1)) * sizeof(float));
  cudaStream_t st = ctx.stream;
  cublasHandle_t blas = ctx.blas;
  out = [=] {
    const AttentionDims &d = a.d;
    float *s = scratch.get<float>();
    for (int64_t b = 0; b < d.batch; ++b)
      for (int64_t i0 = 0; i0 < d.s; i0 += a.rows) {
        const int n = static_cast<int>(std::min(a.rows, d.s - i0));
        const int64_t r0 = b * d.s + i0;
        const float *vb = a.v + b * d.t * d.dv;
        TSL_RETURN_IF_ERROR(gemmRowMajor(
            blas, false, false, n, int(d.t), int(d.d), d.scale,
            a.q + r0 * d.d, int(d.d), a.kt + b * d.d * d.t, int(d.t), 0.0f, s));
        TSL_RETURN_IF_ERROR(launched(
            launchAttentionSoftmax(s, n, d.t, maskAt(a, b, i0),
                                   d.maskRowStride, d.maskColStride, lse + r0,
                                   st),
            "attention"));
        TSL_RETURN_IF_ERROR(gemmRowMajor(blas, false, false, n, int(d.dv),
                                         int(d.t), 1.0f, s, int(d.t), vb,
                                         int(d.dv), 0.0f, o + r0 * d.dv));
        TSL_RETURN_IF_ERROR(launched(
            launchAttentionNanRows(lse + r0, n, vb, d.t, d.dv, a.fill,
                                   o + r0 * d.dv, st),
            "attention"));
      }
    return Status::ok();
  };
  return Status::ok();
}

Status makeAttentionGrad(const KernelContext &ctx, Step &out) {
  Args a;
  TSL_RETURN_IF_ERROR(attentionArgs(ctx, a));
  const float *o = static_cast<const float *>(ctx.operand(3));
  const float *lse = static_cast<const float *>(ctx.operand(4));
  const float *g = static_cast<const float *>(ctx.operand(5));
  float *dq = static_cast<float *>(ctx.result(0));
  float *dkt = static_cast<float *>(ctx.result(1));
  float *dv = static_cast<float *>(ctx.result(2));
  const size_t bytes[3] = {ctx.out(0).bytes, ctx.out(1).bytes,
                           ctx.out(2).bytes};
  const size_t block =
      static_cast<size_t>(a.rows * std::max<int64_t>(a.d.t, 1));
  // [p | dp | delta]
  const LateAddress scratch = ctx.resources.reserveScratch(
      (2 * block + static_cast<size_t>(a.rows)) * sizeof(float));
  cudaStream_t st = ctx.stream;
  cublasHandle_t blas = ctx.blas;
  out = [=] {
    const AttentionDims &d = a.d;
    TSL_CUDA(cudaMemsetAsync(dq, 0, bytes[0], st), "cudaMemsetAsync");
    TSL_CUDA(cudaMemsetAsync(dkt, 0, bytes[1], st), "cudaMemsetAsync");
    TSL_CUDA(cudaMemsetAsync(dv, 0, bytes[2], st), "cudaMemsetAsync");
    float *p = scratch.get<float>(), *dp = p + block, *delta = dp + block;
    for (int64_t b = 0; b < d.batch && d.t > 0; ++b) {
      const float *ktb = a.kt + b * d.d * d.t, *vb = a.v + b * d.t * d.dv;
      float *dktb = dkt + b * d.d * d.t, *dvb = dv + b * d.t * d.dv;
      for (int64_t i0 = 0; i0 < d.s; i0 += a.rows) {
        const int n = static_cast<int>(std::min(a.rows, d.s - i0));
        const int64_t r0 = b * d.s + i0;
        const float *qb = a.q + r0 * d.d, *gb = g + r0 * d.dv;
        TSL_RETURN_IF_ERROR(gemmRowMajor(blas, false, false, n, int(d.t),
                                         int(d.d), d.scale, qb, int(d.d), ktb,
                                         int(d.t), 0.0f, p));
        TSL_RETURN_IF_ERROR(launched(
            launchAttentionProbabilities(
                p, n, d.t, maskAt(a, b, i0), d.maskRowStride, d.maskColStride,
                lse + r0, gb, o + r0 * d.dv, d.dv, delta, st),
            "attention_grad"));
        TSL_RETURN_IF_ERROR(gemmRowMajor(blas, true, false, int(d.t),
                                         int(d.dv), n, 1.0f, p, int(d.t), gb,
                                         int(d.dv), 1.0f, dvb));
        TSL_RETURN_IF_ERROR(launched(
            launchAttentionNanRowsGrad(lse + r0, gb, n, d.t, d.dv, a.fill, dvb,
                                       st),
            "attention_grad"));
        TSL_RETURN_IF_ERROR(gemmRowMajor(blas, false, true, n, int(d.t),
                                         int(d.dv), 1.0f, gb, int(d.dv), vb,
                                         int(d.dv), 0.0f, dp));
        TSL_RETURN_IF_ERROR(launched(
            launchAttentionDs(p, dp, delta, lse + r0, n, d.t, st),
            "attention_grad"));
        TSL_RETURN_IF_ERROR(gemmRowMajor(blas, false, true, n, int(d.d),
                                         int(d.t), d.scale, p, int(d.t), ktb,
                                         int(d.t), 0.0f, dq + r0 * d.d));
        TSL_RETURN_IF_ERROR(gemmRowMajor(blas, true, false, int(d.d), int(d.t),
                                         n, d.scale, qb, int(d.d), p, int(d.t),
                                         1.0f, dktb));
      }
    }
    return Status::ok();
  };
  return Status::ok();
}

} // namespace

void registerAttentionKernels(KernelRegistry &registry) {
  registerFamily(registry, kAttentionKinds, [](OpKind k) -> KernelFactory {
    switch (k) {
    case OpKind::Attention:
      return makeAttention;
    case OpKind::AttentionGrad:
      return makeAttentionGrad;
    default:
      return nullptr;
    }
  });
}

} // namespace tessel::runtime::cuda
