//===- GemmPlan.cpp - matmul as column-major cuBLAS calls -----------------===//
#include "GemmPlan.h"

#include "Broadcast.h"

#include <algorithm>
#include <climits>

namespace tessel::runtime::cuda {

namespace {
bool fitsInt(int64_t v) { return v >= 0 && v <= INT_MAX; }
} // namespace

Status planMatMul(const Shape &aShape, const Shape &bShape,
                  const Shape &yShape, MatMulPlan &plan) {
  plan = MatMulPlan();
  const cpu::MatMulDims md = cpu::matmulDims(aShape, bShape, yShape);
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
      cpu::broadcastStrides(md.aBatch, outBatch.size(), outBatch);
  std::vector<int64_t> bStr =
      cpu::broadcastStrides(md.bBatch, outBatch.size(), outBatch);
  cpu::StridedPlan sp = cpu::makeStridedPlan(outBatch, {aStr, bStr});
  const int64_t sa = sp.strides.back()[0], sb = sp.strides.back()[1];
  cpu::forEachRow(sp, 0, batches, [&](const int64_t *off, int64_t count) {
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

} // namespace tessel::runtime::cuda
