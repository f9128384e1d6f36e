//===- MatMul.cpp - matmul and gemm -------------------------------------===//
#include "tessel/ops/Broadcast.h"
#include "Gemm.h"
#include "KernelRegistry.h"
#include "KernelResources.h"
#include "Kernels.h"
#include "ThreadPool.h"

#include <cstring>

namespace tessel::runtime::cpu {

namespace {

/// out[m, n] = c broadcast to [m, n].
void fillBroadcast(const float *c, const Shape &cShape, float *out, int64_t m,
                   int64_t n) {
  Shape outShape = {m, n};
  std::vector<int64_t> st = broadcastStrides(cShape, 2, outShape);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j)
      out[i * n + j] = c[i * st[0] + j * st[1]];
}

} // namespace

void matmulKernel(const float *a, const Shape &aShape, const float *b,
                  const Shape &bShape, float *out, const Shape &outShape) {
  const MatMulDims md = matmulDims(aShape, bShape, outShape);
  const int64_t m = md.m, k = md.k, n = md.n, batches = md.batches;
  const Shape &outBatch = md.outBatch;
  if (batches == 0 || m == 0 || n == 0)
    return;

  // B shared by every batch: fold A's batch into M, one GEMM.
  if (md.bCount == 1 && md.aCount == batches) {
    sgemm(false, false, m * batches, n, k, 1.0f, a, k, b, n, 0.0f, out, n);
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
      sgemm(false, false, m, n, k, 1.0f, a + (off[0] + i * sa) * m * k, k,
            b + (off[1] + i * sb) * k * n, n, 0.0f,
            out + (off[2] + i) * m * n, n);
  });
}

void gemmKernel(const float *a, const Shape &aShape, const float *b,
                const Shape &bShape, const float *c, const Shape *cShape,
                float *out, bool transA, bool transB, float alpha, float beta) {
  const int64_t m = transA ? aShape[1] : aShape[0];
  const int64_t k = transA ? aShape[0] : aShape[1];
  const int64_t n = transB ? bShape[0] : bShape[1];
  float effBeta = 0.0f;
  if (c && beta != 0.0f) {
    // out = C broadcast to [m, n], then out = alpha*A*B + beta*out.
    fillBroadcast(c, *cShape, out, m, n);
    effBeta = beta;
  }
  sgemm(transA, transB, m, n, k, alpha, a, aShape[1], b, bShape[1], effBeta,
        out, n);
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

Step matmulStep(const KernelContext &c) {
  KernelResources &res = c.resources;
  if (Bf16MatMul *mm = res.bf16MatMuls[c.index].get())
    return bf16Step(c, mm);
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
  if (Bf16MatMul *mm = c.resources.bf16MatMuls[c.index].get())
    return bf16Step(c, mm);
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
