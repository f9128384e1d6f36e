//===- Attention.cpp - fused attention and its gradient on CUDA -----------===//
//
// attention and attention_grad (tessel/runtime/Attention.h) as the CPU
// kernels compute them (cpu/Attention.cpp): per batch entry and block of
// query rows, the scores by one cuBLAS GEMM into the shared scratch, the
// mask, softmax and lse by one row kernel (Attention.cu), then p v; the
// backward recomputes p from lse and issues dv += p^T grad, dp = grad v^T,
// dq = scale ds kt^T and dkt += scale q^T ds. The scratch holds at most
// kScratchFloats scores, so memory stays linear in the sequence. This is
// the blocked path.
//
// An attention with head dim 32, 64, 80, 96 or 128 (v's the same) runs
// FlashAttention-2's tiles instead, forward and backward, masked_score
// and keep too: a half one on tensor cores (FlashAttention.h), an f32 one
// on the CUDA cores (FlashAttentionSimt.h); TESSEL_FLASH_ATTENTION=0 turns
// them off. A half one of another shape widens its operands into the
// scratch, runs the blocked path there and rounds each result once, as the
// CPU does.
//
//===----------------------------------------------------------------------===//
#include "CudaKernelRegistry.h"
#include "CudaKernels.h"
#include "FlashAttentionSimt.h"
#include "RowMajorGemm.h"
#include "tessel/runtime/Attention.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

namespace tessel::runtime::cuda {

namespace {

/// The scores the scratch holds at once, in floats (16 MiB).
constexpr int64_t kScratchFloats = int64_t(1) << 22;

struct Args {
  AttentionDims d;
  int64_t rows = 1; // query rows per block
  const float *q, *kt, *v, *mask = nullptr, *fill = nullptr;
  bool replace = false; // has_masked_score
  float masked = 0.0f;
  const uint8_t *keep = nullptr; // has_keep
  // Per batch entry; shared, so that a step's copy of Args allocates nothing.
  std::shared_ptr<const std::vector<int64_t>> maskOffsets, keepOffsets;
};

Status attentionArgs(const KernelContext &ctx, Args &a) {
  const AttentionOperands at = attentionOperands(ctx.op);
  const bool hasMask = at.mask >= 0;
  const std::string bad =
      makeAttentionDims(ctx.in(0).shape, ctx.in(1).shape, ctx.in(2).shape,
                        hasMask ? &ctx.in(at.mask).shape : nullptr, a.d,
                        at.keep >= 0 ? &ctx.in(at.keep).shape : nullptr);
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
  a.replace = at.replaceMasked;
  a.masked = at.maskedScore;
  if (at.keep >= 0)
    a.keep = static_cast<const uint8_t *>(ctx.operand(at.keep));
  auto offsets = std::make_shared<std::vector<int64_t>>();
  auto keepOffsets = std::make_shared<std::vector<int64_t>>();
  for (int64_t b = 0; hasMask && b < a.d.batch; ++b)
    offsets->push_back(a.d.maskOffset(b));
  for (int64_t b = 0; a.keep && b < a.d.batch; ++b)
    keepOffsets->push_back(a.d.keepOffset(b));
  a.maskOffsets = std::move(offsets);
  a.keepOffsets = std::move(keepOffsets);
  return Status::ok();
}

/// The mask of the rows from (b, i0), none without one.
AttentionMask maskAt(const Args &a, int64_t b, int64_t i0) {
  AttentionMask m;
  if (!a.mask)
    return m;
  m.m = a.mask + (*a.maskOffsets)[b] + i0 * a.d.maskRowStride;
  m.rowStride = a.d.maskRowStride;
  m.colStride = a.d.maskColStride;
  m.replace = a.replace;
  m.masked = a.masked;
  if (a.keep) {
    m.keep = a.keep + (*a.keepOffsets)[b] + i0 * a.d.keepRowStride;
    m.keepRowStride = a.d.keepRowStride;
    m.keepColStride = a.d.keepColStride;
  }
  return m;
}

/// A half attention's f32 copies at the start of the scratch, each
/// 256-byte aligned: its half operands (q, kt, v[, result, grad]), then its
/// results (out, or dq, dkt, dv). Empty for an f32 attention.
struct HalfCopies {
  DType half = DType::F32;
  std::vector<const void *> src; // the half operands
  std::vector<void *> dst;       // the half results
  std::vector<int64_t> count;    // per slot: operands, then results
  std::vector<size_t> at;        // per slot: byte offset
  size_t bytes = 0;

  HalfCopies(const KernelContext &ctx, bool grad) {
    if (!isHalf(ctx.in(0).dtype))
      return;
    half = ctx.in(0).dtype;
    const int results = grad ? 3 : 1;
    for (int i : attentionTypedOperands(ctx.op.kind)) {
      src.push_back(ctx.operand(i));
      count.push_back(ctx.in(i).numel);
    }
    for (int i = 0; i < results; ++i) {
      dst.push_back(ctx.result(i));
      count.push_back(ctx.out(i).numel);
    }
    for (int64_t n : count) {
      at.push_back(bytes);
      bytes += (static_cast<size_t>(n) * sizeof(float) + 255) / 256 * 256;
    }
  }
  bool active() const { return half != DType::F32; }
  float *slot(char *base, size_t k) const {
    return reinterpret_cast<float *>(base + at[k]);
  }
  /// Widens the half operands into their slots and points x's q, kt and v
  /// at theirs.
  Status widen(char *base, cudaStream_t st, Args &x) const {
    for (size_t k = 0; k < src.size(); ++k)
      if (count[k])
        TSL_RETURN_IF_ERROR(launched(
            launchCast(half, src[k], DType::F32, slot(base, k), count[k], st),
            "half attention operand"));
    x.q = slot(base, 0);
    x.kt = slot(base, 1);
    x.v = slot(base, 2);
    return Status::ok();
  }
  /// Rounds the f32 results into the half results, once.
  Status narrow(char *base, cudaStream_t st) const {
    for (size_t k = 0; k < dst.size(); ++k) {
      const size_t j = src.size() + k;
      if (count[j])
        TSL_RETURN_IF_ERROR(launched(
            launchCast(DType::F32, slot(base, j), half, dst[k], count[j], st),
            "half attention result"));
    }
    return Status::ok();
  }
};

/// The most shared memory the tile kernels of `type` (a half, or f32) and
/// head dim d take per block, over the forward and the backward's passes.
int flashSharedBytes(DType type, int d) {
  if (isHalf(type))
    return std::max({flash::sharedBytes(d), flash::dkvSharedBytes(d),
                     flash::dqSharedBytes(d)});
  return std::max({flash::simt::sharedBytes(d), flash::simt::dkvSharedBytes(d),
                   flash::simt::dqSharedBytes(d)});
}

/// Whether an attention runs the tile kernels: head dims 32 to 128 (v's the
/// same) whose blocks fit the device's shared memory (the f32 backward's
/// 170 KB at head dim 128 fits Hopper's 227 KB, not an A100's 163), unless
/// TESSEL_FLASH_ATTENTION=0; with masked_score (the replace), a mask
/// (FlashAttention.h: its backward's stats pass).
bool useFlash(const KernelContext &ctx, const Args &a) {
  static const bool off = [] {
    const char *v = std::getenv("TESSEL_FLASH_ATTENTION");
    return v && std::strcmp(v, "0") == 0;
  }();
  const AttentionDims &d = a.d;
  if (off || (a.replace && !a.mask) || !flash::supportedHeadDim(d.d) ||
      d.dv != d.d)
    return false;
  int device = 0, optin = 0;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin,
                             device) != cudaSuccess)
    return false;
  return flashSharedBytes(ctx.in(0).dtype, static_cast<int>(d.d)) <= optin;
}

/// The tile kernel over the instruction's own operands (E: a half's bits
/// on tensor cores, or float on the CUDA cores), kNorm in the scratch.
template <class E>
Status makeFlashAttention(const KernelContext &ctx, const Args &a, Step &out) {
  flash::TileArgs<E> f;
  f.q = static_cast<const E *>(ctx.operand(0));
  f.kt = static_cast<const E *>(ctx.operand(1));
  f.v = static_cast<const E *>(ctx.operand(2));
  f.out = static_cast<E *>(ctx.result(0));
  f.lse = static_cast<float *>(ctx.result(1));
  f.mask = a.mask;
  f.replace = a.replace;
  f.masked = a.masked;
  f.keep = a.keep;
  f.dims = a.d;
  const LateAddress kNorm = ctx.resources.reserveScratch(
      static_cast<size_t>(a.d.batch) * sizeof(float));
  const DType type = ctx.in(0).dtype;
  const float *fill = a.fill;
  cudaStream_t st = ctx.stream;
  out = [=] {
    flash::TileArgs<E> run = f;
    if (run.mask && !run.replace) // the norms serve the skips
      run.kNorm = kNorm.get<float>();
    return launched(launchFlashAttention(type, run, fill, st), "attention");
  };
  return Status::ok();
}

Status makeAttention(const KernelContext &ctx, Step &out) {
  Args a;
  TSL_RETURN_IF_ERROR(attentionArgs(ctx, a));
  if (useFlash(ctx, a))
    return isHalf(ctx.in(0).dtype) ? makeFlashAttention<uint16_t>(ctx, a, out)
                                   : makeFlashAttention<float>(ctx, a, out);
  const HalfCopies h(ctx, false);
  float *ownO = static_cast<float *>(ctx.result(0));
  float *lse = static_cast<float *>(ctx.result(1));
  const LateAddress scratch = ctx.resources.reserveScratch(
      h.bytes + static_cast<size_t>(a.rows * std::max<int64_t>(a.d.t, 1)) *
                    sizeof(float));
  cudaStream_t st = ctx.stream;
  cublasHandle_t blas = ctx.blas;
  out = [=] {
    const AttentionDims &d = a.d;
    char *base = scratch.get<char>();
    Args x = a;
    float *o = ownO;
    if (h.active()) {
      TSL_RETURN_IF_ERROR(h.widen(base, st, x));
      o = h.slot(base, 3);
    }
    float *s = reinterpret_cast<float *>(base + h.bytes);
    for (int64_t b = 0; b < d.batch; ++b)
      for (int64_t i0 = 0; i0 < d.s; i0 += x.rows) {
        const int n = static_cast<int>(std::min(x.rows, d.s - i0));
        const int64_t r0 = b * d.s + i0;
        const float *vb = x.v + b * d.t * d.dv;
        TSL_RETURN_IF_ERROR(gemmRowMajor(
            blas, false, false, n, int(d.t), int(d.d), d.scale, x.q + r0 * d.d,
            int(d.d), x.kt + b * d.d * d.t, int(d.t), 0.0f, s));
        TSL_RETURN_IF_ERROR(launched(
            launchAttentionSoftmax(s, n, d.t, maskAt(x, b, i0), lse + r0, st),
            "attention"));
        TSL_RETURN_IF_ERROR(gemmRowMajor(blas, false, false, n, int(d.dv),
                                         int(d.t), 1.0f, s, int(d.t), vb,
                                         int(d.dv), 0.0f, o + r0 * d.dv));
        TSL_RETURN_IF_ERROR(
            launched(launchAttentionNanRows(lse + r0, n, vb, d.t, d.dv, x.fill,
                                            o + r0 * d.dv, st),
                     "attention"));
      }
    return h.active() ? h.narrow(base, st) : Status::ok();
  };
  return Status::ok();
}

/// The tile kernels' gradient over the instruction's own operands (E as
/// makeFlashAttention's); delta and the norms in the scratch.
template <class E>
Status makeFlashAttentionGrad(const KernelContext &ctx, const Args &a,
                              Step &out) {
  flash::TileGradArgs<E> f;
  f.q = static_cast<const E *>(ctx.operand(0));
  f.kt = static_cast<const E *>(ctx.operand(1));
  f.v = static_cast<const E *>(ctx.operand(2));
  const E *o = static_cast<const E *>(ctx.operand(3));
  f.lse = static_cast<const float *>(ctx.operand(4));
  f.grad = static_cast<const E *>(ctx.operand(5));
  f.mask = a.mask;
  f.fill = a.fill;
  f.replace = a.replace;
  f.masked = a.masked;
  f.keep = a.keep;
  f.dq = static_cast<E *>(ctx.result(0));
  f.dkt = static_cast<E *>(ctx.result(1));
  f.dv = static_cast<E *>(ctx.result(2));
  f.dims = a.d;
  // [delta: batch s floats | q and k norms: 2 batch floats | with
  // masked_score, the rows' max and log-sum: 2 batch s floats]
  const size_t rows = static_cast<size_t>(a.d.batch * a.d.s);
  const size_t statsAt = rows + 2 * static_cast<size_t>(a.d.batch);
  const LateAddress scratch = ctx.resources.reserveScratch(
      (statsAt + (a.replace ? 2 * rows : 0)) * sizeof(float));
  const DType type = ctx.in(0).dtype;
  cudaStream_t st = ctx.stream;
  const bool replace = a.replace;
  out = [=] {
    float *delta = scratch.get<float>();
    flash::TileGradArgs<E> run = f;
    if (replace) {
      run.rowMax = delta + statsAt;
      run.rowLogSum = delta + statsAt + rows;
    }
    return launched(
        launchFlashAttentionGrad(type, run, o, delta, delta + rows, st),
        "attention_grad");
  };
  return Status::ok();
}

Status makeAttentionGrad(const KernelContext &ctx, Step &out) {
  Args a;
  TSL_RETURN_IF_ERROR(attentionArgs(ctx, a));
  if (useFlash(ctx, a))
    return isHalf(ctx.in(0).dtype)
               ? makeFlashAttentionGrad<uint16_t>(ctx, a, out)
               : makeFlashAttentionGrad<float>(ctx, a, out);
  const HalfCopies h(ctx, true);
  const float *ownO = static_cast<const float *>(ctx.operand(3));
  const float *lse = static_cast<const float *>(ctx.operand(4));
  const float *ownG = static_cast<const float *>(ctx.operand(5));
  float *ownD[3] = {static_cast<float *>(ctx.result(0)),
                    static_cast<float *>(ctx.result(1)),
                    static_cast<float *>(ctx.result(2))};
  // f32 bytes of dq, dkt and dv.
  const size_t bytes[3] = {ctx.out(0).numel * sizeof(float),
                           ctx.out(1).numel * sizeof(float),
                           ctx.out(2).numel * sizeof(float)};
  const size_t block =
      static_cast<size_t>(a.rows * std::max<int64_t>(a.d.t, 1));
  // [half copies | p | dp | delta]
  const LateAddress scratch = ctx.resources.reserveScratch(
      h.bytes + (2 * block + static_cast<size_t>(a.rows)) * sizeof(float));
  cudaStream_t st = ctx.stream;
  cublasHandle_t blas = ctx.blas;
  out = [=] {
    const AttentionDims &d = a.d;
    char *base = scratch.get<char>();
    Args x = a;
    const float *o = ownO, *g = ownG;
    float *dq = ownD[0], *dkt = ownD[1], *dv = ownD[2];
    if (h.active()) {
      TSL_RETURN_IF_ERROR(h.widen(base, st, x));
      o = h.slot(base, 3);
      g = h.slot(base, 4);
      dq = h.slot(base, 5);
      dkt = h.slot(base, 6);
      dv = h.slot(base, 7);
    }
    TSL_CUDA(cudaMemsetAsync(dq, 0, bytes[0], st), "cudaMemsetAsync");
    TSL_CUDA(cudaMemsetAsync(dkt, 0, bytes[1], st), "cudaMemsetAsync");
    TSL_CUDA(cudaMemsetAsync(dv, 0, bytes[2], st), "cudaMemsetAsync");
    float *p = reinterpret_cast<float *>(base + h.bytes), *dp = p + block,
          *delta = dp + block;
    for (int64_t b = 0; b < d.batch && d.t > 0; ++b) {
      const float *ktb = x.kt + b * d.d * d.t, *vb = x.v + b * d.t * d.dv;
      float *dktb = dkt + b * d.d * d.t, *dvb = dv + b * d.t * d.dv;
      for (int64_t i0 = 0; i0 < d.s; i0 += x.rows) {
        const int n = static_cast<int>(std::min(x.rows, d.s - i0));
        const int64_t r0 = b * d.s + i0;
        const float *qb = x.q + r0 * d.d, *gb = g + r0 * d.dv;
        TSL_RETURN_IF_ERROR(gemmRowMajor(blas, false, false, n, int(d.t),
                                         int(d.d), d.scale, qb, int(d.d), ktb,
                                         int(d.t), 0.0f, p));
        TSL_RETURN_IF_ERROR(launched(
            launchAttentionProbabilities(p, n, d.t, maskAt(x, b, i0), lse + r0,
                                         gb, o + r0 * d.dv, d.dv, delta, st),
            "attention_grad"));
        TSL_RETURN_IF_ERROR(gemmRowMajor(blas, true, false, int(d.t),
                                         int(d.dv), n, 1.0f, p, int(d.t), gb,
                                         int(d.dv), 1.0f, dvb));
        TSL_RETURN_IF_ERROR(
            launched(launchAttentionNanRowsGrad(lse + r0, gb, n, d.t, d.dv,
                                                x.fill, dvb, st),
                     "attention_grad"));
        TSL_RETURN_IF_ERROR(gemmRowMajor(blas, false, true, n, int(d.t),
                                         int(d.dv), 1.0f, gb, int(d.dv), vb,
                                         int(d.dv), 0.0f, dp));
        TSL_RETURN_IF_ERROR(
            launched(launchAttentionDs(p, dp, delta, lse + r0, n, d.t,
                                       maskAt(x, b, i0), st),
                     "attention_grad"));
        TSL_RETURN_IF_ERROR(gemmRowMajor(blas, false, true, n, int(d.d),
                                         int(d.t), d.scale, p, int(d.t), ktb,
                                         int(d.t), 0.0f, dq + r0 * d.d));
        TSL_RETURN_IF_ERROR(gemmRowMajor(blas, true, false, int(d.d), int(d.t),
                                         n, d.scale, qb, int(d.d), p, int(d.t),
                                         1.0f, dktb));
      }
    }
    return h.active() ? h.narrow(base, st) : Status::ok();
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
