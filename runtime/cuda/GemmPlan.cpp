//===- GemmPlan.cpp - matmul as column-major cuBLAS calls -----------------===//
#include "GemmPlan.h"

#include "tessel/ops/Broadcast.h"

#include <algorithm>
#include <climits>

namespace tessel::runtime::cuda {

namespace {
bool fitsInt(int64_t v) { return v >= 0 && v <= INT_MAX; }
} // namespace

Status planMatMul(const Shape &aShape, const Shape &bShape,
                  const Shape &yShape, MatMulPlan &plan) {
  plan = MatMulPlan();
  const MatMulDims md = matmulDims(aShape, bShape, yShape);
  const int64_t m = md.m, k = md.k, n = md.n, batches = md.batches;
  const Shape &outBatch = md.outBatch;
  if (batches == 0 || m == 0 || n == 0) {
    plan.nothing = true;
    return Status::ok();
  }
  if (k == 0) {
    plan.zeros = true;
    return Status::ok();
  }
  if (!fitsInt(m) || !fitsInt(n) || !fitsInt(k))
    return Status::error("a matrix dim exceeds cuBLAS's int range");

  if (md.bCount == 1 && md.aCount == batches && fitsInt(m * batches)) {
    // B shared by every batch: fold A's batch into M, one GEMM.
    GemmCall c;
    c.m = static_cast<int>(m * batches);
    c.n = static_cast<int>(n);
    c.k = static_cast<int>(k);
    plan.calls.push_back(c);
    return Status::ok();
  }
  // Batch dims broadcast: strides in matrices (0 where an operand is
  // shared), merged; each innermost row is one strided-batched call.
  std::vector<int64_t> aStr =
      broadcastStrides(md.aBatch, outBatch.size(), outBatch);
  std::vector<int64_t> bStr =
      broadcastStrides(md.bBatch, outBatch.size(), outBatch);
  StridedPlan sp = makeStridedPlan(outBatch, {aStr, bStr});
  const int64_t sa = sp.strides.back()[0], sb = sp.strides.back()[1];
  forEachRow(sp, 0, batches, [&](const int64_t *off, int64_t count) {
    for (int64_t done = 0; done < count;) {
      const int64_t chunk = std::min<int64_t>(count - done, INT_MAX);
      GemmCall c;
      c.m = static_cast<int>(m);
      c.n = static_cast<int>(n);
      c.k = static_cast<int>(k);
      c.count = static_cast<int>(chunk);
      c.aOff = (off[0] + done * sa) * m * k;
      c.bOff = (off[1] + done * sb) * k * n;
      c.cOff = (off[2] + done) * m * n;
      c.strideA = sa * m * k;
      c.strideB = sb * k * n;
      c.strideC = m * n;
      plan.calls.push_back(c);
      done += chunk;
    }
  });
  return Status::ok();
}

LtGemm ltGemm(bool transA, bool transB, int m, int n, int k, int lda,
              int ldb, int ldc, int count, long long strideA,
              long long strideB, long long strideC) {
  // op(A) is [m, k]: A is stored [k, m] when transposed; op(B) is [k, n].
  auto layout = [&](bool t, int rows, int cols, int ld, long long stride) {
    LtLayout l;
    l.rows = static_cast<uint64_t>(t ? cols : rows);
    l.cols = static_cast<uint64_t>(t ? rows : cols);
    l.ld = ld;
    l.count = count;
    l.stride = count > 1 ? stride : 0;
    return l;
  };
  LtGemm g;
  g.transA = transA;
  g.transB = transB;
  g.a = layout(transA, m, k, lda, strideA);
  g.b = layout(transB, k, n, ldb, strideB);
  g.c = layout(false, m, n, ldc, strideC);
  return g;
}

LtGemm ltGemm(const ColumnMajorCall &c) {
  return ltGemm(false, false, c.m, c.n, c.k, c.lda, c.ldb, c.ldc, c.count,
                c.strideA, c.strideB, c.strideC);
}

LtGemm ltRowMajorGemm(bool transA, bool transB, int m, int n, int k, int lda,
                      int ldb) {
  LtGemm g;
  // issueRowMajorGemm's mapping, recorded rather than called.
  (void)issueRowMajorGemm<float>(
      transA, transB, m, n, k, 1.0f, nullptr, lda, nullptr, ldb, 0.0f,
      nullptr,
      [&](bool tA, bool tB, int m2, int n2, int k2, float, const float *,
          int ldA, const float *, int ldB, float, float *, int ldC) {
        g = ltGemm(tA, tB, m2, n2, k2, ldA, ldB, ldC);
        return Status::ok();
      });
  return g;
}

int64_t ltExtent(const LtLayout &l) {
  if (l.rows == 0 || l.cols == 0 || l.count == 0)
    return 0;
  return static_cast<int64_t>(l.count - 1) * l.stride +
         static_cast<int64_t>(l.cols - 1) * l.ld +
         static_cast<int64_t>(l.rows);
}

} // namespace tessel::runtime::cuda
