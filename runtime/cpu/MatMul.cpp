//===- MatMul.cpp - matmul and gemm -------------------------------------===//
#include "Gemm.h"
#include "HalfConvert.h"
#include "KernelRegistry.h"
#include "KernelResources.h"
#include "Kernels.h"
#include "PackedGemm.h"
#include "ThreadPool.h"
#include "tessel/ops/Broadcast.h"

#include <cstring>

namespace tessel::runtime::cpu {

namespace {

/// out[m, n] = c broadcast to [m, n] (T: f32, f64, or a half's bits).
template <typename T>
void fillBroadcast(const T *c, const Shape &cShape, T *out, int64_t m,
                   int64_t n) {
  Shape outShape = {m, n};
  std::vector<int64_t> st = broadcastStrides(cShape, 2, outShape);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j)
      out[i * n + j] = c[i * st[0] + j * st[1]];
}

/// sgemm for f32, dgemm for f64 (Gemm.h).
inline void gemmOf(bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                   float alpha, const float *a, int64_t lda, const float *b,
                   int64_t ldb, float beta, float *c, int64_t ldc) {
  sgemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}
inline void gemmOf(bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                   double alpha, const double *a, int64_t lda, const double *b,
                   int64_t ldb, double beta, double *c, int64_t ldc) {
  dgemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

template <typename T>
void matmulTyped(const T *a, const Shape &aShape, const T *b,
                 const Shape &bShape, T *out, const Shape &outShape) {
  const MatMulDims md = matmulDims(aShape, bShape, outShape);
  const int64_t m = md.m, k = md.k, n = md.n, batches = md.batches;
  const Shape &outBatch = md.outBatch;
  if (batches == 0 || m == 0 || n == 0)
    return;

  // B shared by every batch: fold A's batch into M, one GEMM.
  if (md.bCount == 1 && md.aCount == batches) {
    gemmOf(false, false, m * batches, n, k, T(1), a, k, b, n, T(0), out, n);
    return;
  }
  std::vector<int64_t> aStr =
      broadcastStrides(md.aBatch, outBatch.size(), outBatch);
  std::vector<int64_t> bStr =
      broadcastStrides(md.bBatch, outBatch.size(), outBatch);
  StridedPlan plan = makeStridedPlan(outBatch, {aStr, bStr});
  forEachRow(plan, 0, batches, [&](const int64_t *off, int64_t count) {
    const int64_t sa = plan.strides.back()[0], sb = plan.strides.back()[1];
    for (int64_t i = 0; i < count; ++i)
      gemmOf(false, false, m, n, k, T(1), a + (off[0] + i * sa) * m * k, k,
             b + (off[1] + i * sb) * k * n, n, T(0), out + (off[2] + i) * m * n,
             n);
  });
}

template <typename T>
void gemmTyped(const T *a, const Shape &aShape, const T *b, const Shape &bShape,
               const T *c, const Shape *cShape, T *out, bool transA,
               bool transB, T alpha, T beta) {
  const int64_t m = transA ? aShape[1] : aShape[0];
  const int64_t k = transA ? aShape[0] : aShape[1];
  const int64_t n = transB ? bShape[0] : bShape[1];
  T effBeta = 0;
  if (c && beta != T(0)) {
    // out = C broadcast to [m, n], then out = alpha*A*B + beta*out.
    fillBroadcast(c, *cShape, out, m, n);
    effBeta = beta;
  }
  gemmOf(transA, transB, m, n, k, alpha, a, aShape[1], b, bShape[1], effBeta,
         out, n);
}

} // namespace

void matmulKernel(const float *a, const Shape &aShape, const float *b,
                  const Shape &bShape, float *out, const Shape &outShape) {
  matmulTyped(a, aShape, b, bShape, out, outShape);
}

void gemmKernel(const float *a, const Shape &aShape, const float *b,
                const Shape &bShape, const float *c, const Shape *cShape,
                float *out, bool transA, bool transB, float alpha, float beta) {
  gemmTyped(a, aShape, b, bShape, c, cShape, out, transA, transB, alpha, beta);
}

namespace {

/// A matmul or gemm marked bf16_operands on oneDNN's bf16 matmul
/// (Bf16MatMul.h): its operands converted to bf16 (or their copy of this
/// step reused), then the product in f32.
Step bf16Step(const KernelContext &c, Bf16MatMul *mm) {
  KernelResources &res = c.resources;
  const KernelResources::Bf16Operands ops = res.bf16Operands[c.index];
  KernelResources::Scratch *scratch = res.bf16Scratch;
  const float *x[2] = {static_cast<const float *>(c.operand(0)),
                       static_cast<const float *>(c.operand(1))};
  const int64_t n[2] = {c.in(0).numel, c.in(1).numel};
  const float *bias = mm->addsC() ? static_cast<const float *>(c.operand(2))
                                  : nullptr;
  const Shape *biasShape = bias ? &c.in(2).shape : nullptr;
  const Shape &y = c.out(0).shape;
  const int64_t rows = y.size() == 2 ? y[0] : 0, cols = y.back();
  float *out = static_cast<float *>(c.result(0));
  ThreadPool *pool = &c.pool;
  return [=] {
    uint16_t *p[2];
    for (int k = 0; k < 2; ++k) {
      p[k] = ops.copy[k] ? ops.copy[k]
                         : reinterpret_cast<uint16_t *>(scratch[k].data.get());
      if (ops.convert[k])
        toBf16(x[k], p[k], n[k], *pool);
    }
    if (bias)
      fillBroadcast(bias, *biasShape, out, rows, cols);
    return mm->run(p[0], p[1], out);
  };
}

/// A half GEMM (bf16 or f16 operands and result: a half model's matmul or
/// gemm, which -tessel-float-normalization keeps half): oneDNN's matmul on
/// the halves where it has a kernel for them (bf16 on CPUs with bf16 dot
/// products), f32 sums rounded once into the result; elsewhere the
/// operands widened to f32 (exact), the f32 GEMM, the result rounded once.
/// Either is PyTorch's half GEMM up to the order of the f32 sums.
Step halfStep(const KernelContext &c) {
  KernelResources &res = c.resources;
  const Op *o = &c.op;
  const DType half = c.out(0).dtype;
  const bool hasC = o->kind == OpKind::Gemm && o->operands.size() > 2;
  const Shape &y = c.out(0).shape;
  const int64_t rows = y.size() == 2 ? y[0] : 0, cols = y.empty() ? 0 : y.back();
  std::shared_ptr<Bf16MatMul> mm;
  // Without bf16 dot products (or TESSEL_BF16=emulate) a bf16 GEMM says so
  // once per process, as the marked ones do, and widens.
  if (half == DType::F16 || bf16KernelsUsable()) {
    if (!res.dnnl)
      res.dnnl = createDnnlContext();
    mm = Bf16MatMul::create(res.dnnl, c.program, *o);
  }
  const int n = static_cast<int>(o->operands.size());
  const void *x[3] = {c.operand(0), c.operand(1),
                      hasC ? c.operand(2) : nullptr};
  void *out = c.result(0);
  const BufferInfo *in[3] = {&c.in(0), &c.in(1), hasC ? &c.in(2) : nullptr};
  const BufferInfo *r = &c.out(0);
  if (mm) {
    const bool addsC = mm->addsC();
    return [=] {
      if (addsC)
        fillBroadcast(static_cast<const uint16_t *>(x[2]), in[2]->shape,
                      static_cast<uint16_t *>(out), rows, cols);
      return mm->run(static_cast<const uint16_t *>(x[0]),
                     static_cast<const uint16_t *>(x[1]), out);
    };
  }
  KernelResources::Scratch *s = res.halfGemm;
  for (int k = 0; k < 4; ++k) {
    const BufferInfo *b = k == 3 ? r : k < n ? in[k] : nullptr;
    if (b && !s[k].reserve(b->numel * sizeof(float))) {
      const Status st = Status::error(
          "cannot allocate " + std::to_string(b->numel * sizeof(float)) +
          " bytes to widen half GEMM instruction " + std::to_string(c.index));
      if (res.stepError.isOk())
        res.stepError = st;
      return [st] { return st; };
    }
  }
  ThreadPool *pool = &c.pool;
  auto convert = [pool](int64_t count, auto f) {
    pool->parallelFor(count, 1 << 14,
                      [&](int64_t b, int64_t e) { f(b, e - b); });
  };
  return [=] {
    float *f[4];
    for (int k = 0; k < 4; ++k)
      f[k] = reinterpret_cast<float *>(s[k].data.get());
    for (int k = 0; k < n; ++k) {
      const uint16_t *h = static_cast<const uint16_t *>(x[k]);
      float *w = f[k];
      convert(in[k]->numel, [=](int64_t b, int64_t count) {
        widenHalfArray(half, h + b, w + b, count);
      });
    }
    if (o->kind == OpKind::MatMul)
      matmulKernel(f[0], in[0]->shape, f[1], in[1]->shape, f[3], r->shape);
    else
      gemmKernel(f[0], in[0]->shape, f[1], in[1]->shape, hasC ? f[2] : nullptr,
                 hasC ? &in[2]->shape : nullptr, f[3], o->transA, o->transB,
                 o->alpha, o->beta);
    uint16_t *h = static_cast<uint16_t *>(out);
    const float *w = f[3];
    convert(r->numel, [=](int64_t b, int64_t count) {
      narrowHalfArray(half, w + b, h + b, count);
    });
    return Status::ok();
  };
}

/// A matmul or gemm on a B packed once (KernelResources::packedGemms):
/// out = alpha * A op(B), plus beta times gemm's C broadcast.
Step packedStep(const KernelContext &c, const PackedGemm *g) {
  const Op *o = &c.op;
  const bool gemm = o->kind == OpKind::Gemm;
  const bool addsC = gemm && o->operands.size() > 2 && o->beta != 0.0f;
  const float alpha = gemm ? o->alpha : 1.0f, beta = addsC ? o->beta : 0.0f;
  const BufferInfo *cb = addsC ? &c.in(2) : nullptr;
  const int64_t k = g->k(), n = g->n(), m = c.in(0).numel / k;
  const float *a = static_cast<const float *>(c.operand(0));
  const float *bias =
      addsC ? static_cast<const float *>(c.operand(2)) : nullptr;
  float *out = static_cast<float *>(c.result(0));
  ThreadPool *pool = &c.pool;
  const size_t index = c.index;
  return [=] {
    if (cb)
      fillBroadcast(bias, cb->shape, out, m, n);
    if (!g->multiply(m, a, k, alpha, beta, out, n, *pool))
      return Status::error("cannot allocate the packed GEMM's block of A for "
                           "instruction " +
                           std::to_string(index));
    return Status::ok();
  };
}

/// An f64 matmul or gemm (docs/precision.md): dgemm, f64 sums.
Step f64Step(const KernelContext &c) {
  const Op *o = &c.op;
  const BufferInfo *a = &c.in(0), *b = &c.in(1), *r = &c.out(0);
  const BufferInfo *cb =
      o->kind == OpKind::Gemm && o->operands.size() > 2 ? &c.in(2) : nullptr;
  const double *x0 = static_cast<const double *>(c.operand(0));
  const double *x1 = static_cast<const double *>(c.operand(1));
  const double *x2 = cb ? static_cast<const double *>(c.operand(2)) : nullptr;
  double *y0 = static_cast<double *>(c.result(0));
  if (o->kind == OpKind::MatMul)
    return [=] {
      matmulTyped(x0, a->shape, x1, b->shape, y0, r->shape);
      return Status::ok();
    };
  return [=] {
    gemmTyped(x0, a->shape, x1, b->shape, x2, cb ? &cb->shape : nullptr, y0,
              o->transA, o->transB, double(o->alpha), double(o->beta));
    return Status::ok();
  };
}

Step matmulStep(const KernelContext &c) {
  KernelResources &res = c.resources;
  if (isHalf(c.out(0).dtype))
    return halfStep(c);
  if (c.out(0).dtype == DType::F64)
    return f64Step(c);
  if (Bf16MatMul *mm = res.bf16MatMuls[c.index].get())
    return bf16Step(c, mm);
  if (const PackedGemm *g = res.packedGemms[c.index].get())
    return packedStep(c, g);
  void *x0 = c.operand(0);
  if (DnnlMatMul *mm = res.dnnlMatMuls[c.index].get()) {
    void *dst = c.ptrs[res.matmulWrites[c.index]];
    return [=] {
      return mm->run(static_cast<const float *>(x0), static_cast<float *>(dst));
    };
  }
  const BufferInfo *a = &c.in(0), *b = &c.in(1), *r = &c.out(0);
  void *x1 = c.operand(1), *y0 = c.result(0);
  return [=] {
    matmulKernel(static_cast<const float *>(x0), a->shape,
                 static_cast<const float *>(x1), b->shape,
                 static_cast<float *>(y0), r->shape);
    return Status::ok();
  };
}

Step gemmStep(const KernelContext &c) {
  if (isHalf(c.out(0).dtype))
    return halfStep(c);
  if (c.out(0).dtype == DType::F64)
    return f64Step(c);
  if (Bf16MatMul *mm = c.resources.bf16MatMuls[c.index].get())
    return bf16Step(c, mm);
  if (const PackedGemm *g = c.resources.packedGemms[c.index].get())
    return packedStep(c, g);
  const Op *o = &c.op;
  const BufferInfo *a = &c.in(0), *b = &c.in(1);
  const BufferInfo *cb = o->operands.size() > 2 ? &c.in(2) : nullptr;
  void *x0 = c.operand(0), *x1 = c.operand(1), *y0 = c.result(0);
  void *x2 = cb ? c.operand(2) : nullptr;
  return [=] {
    gemmKernel(static_cast<const float *>(x0), a->shape,
               static_cast<const float *>(x1), b->shape,
               static_cast<const float *>(x2), cb ? &cb->shape : nullptr,
               static_cast<float *>(y0), o->transA, o->transB, o->alpha,
               o->beta);
    return Status::ok();
  };
}

} // namespace

void registerMatMulKernels(KernelRegistry &r) {
  addKernels(r, {{OpKind::MatMul, matmulStep}, {OpKind::Gemm, gemmStep}});
}

} // namespace tessel::runtime::cpu
