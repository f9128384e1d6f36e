//===- GemmPlan.h - matmul as column-major cuBLAS calls ---------*- C++ -*-===//
//
// numpy.matmul over row-major tensors, planned as a list of column-major
// GEMM calls (cublasSgemm / cublasSgemmStridedBatched). Host code only, so
// the plan and its argument mapping are tested without a device
// (CudaTest.cpp replays them with a reference column-major GEMM).
//
// Row-major C[m, n] = A[m, k]·B[k, n] is column-major C^T[n, m] =
// B^T[n, k]·A^T[k, m], and a row-major [r, c] buffer is the column-major
// [c, r] matrix with leading dimension c: so every call is
// gemm(N, N, n, m, k, B, ld n, A, ld k, C, ld n).
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_RUNTIME_CUDA_GEMMPLAN_H
#define TESSEL_RUNTIME_CUDA_GEMMPLAN_H

#include "tessel/runtime/DType.h"
#include "tessel/runtime/Status.h"

#include <cstdint>
#include <vector>

namespace tessel::runtime::cuda {

/// `count` row-major products [m, k]·[k, n] at element offsets aOff, bOff,
/// cOff, the i-th one strideA/B/C elements further (0: shared operand).
struct GemmCall {
  int m = 0, n = 0, k = 0, count = 1;
  int64_t aOff = 0, bOff = 0, cOff = 0;
  long long strideA = 0, strideB = 0, strideC = 0;
};

struct MatMulPlan {
  bool nothing = false; // an empty result
  bool zeros = false;   // k = 0: the result is all zeros
  std::vector<GemmCall> calls;
};

/// Plans y = matmul(a, b) for shapes already checked by Program::create.
/// Fails only where a dim exceeds cuBLAS's int range.
Status planMatMul(const Shape &aShape, const Shape &bShape,
                  const Shape &yShape, MatMulPlan &plan);

/// A plan's call as a column-major GEMM without transposes, alpha 1 and
/// beta 0: for i < count, C_i[m, n] = A_i[m, k]·B_i[k, n] (X_i = X +
/// i·strideX), where A is the matmul's `b` from element aOff, B its `a` from
/// element bOff and C its result from element cOff (the transpose trick).
struct ColumnMajorCall {
  int m, n, k, lda, ldb, ldc, count;
  int64_t aOff, bOff, cOff;
  long long strideA, strideB, strideC;
};
inline ColumnMajorCall columnMajor(const GemmCall &c) {
  return {c.n,    c.m,    c.k,    c.n,       c.k,       c.n,      c.count,
          c.bOff, c.aOff, c.cOff, c.strideB, c.strideA, c.strideC};
}

/// Issues the calls of `plan` through `gemm`, a column-major GEMM without
/// transposes, alpha 1 and beta 0:
///   gemm(m, n, k, A, lda, strideA, B, ldb, strideB, C, ldc, strideC, count)
/// computes, for i < count, C_i[m, n] = A_i[m, k]·B_i[k, n] (column-major,
/// X_i = X + i·strideX). Returns the first failure of `gemm`.
template <typename Gemm>
Status issueMatMul(const MatMulPlan &plan, const float *a, const float *b,
                   float *y, Gemm &&gemm) {
  for (const GemmCall &g : plan.calls) {
    const ColumnMajorCall c = columnMajor(g);
    TSL_RETURN_IF_ERROR(gemm(c.m, c.n, c.k, b + c.aOff, c.lda, c.strideA,
                             a + c.bOff, c.ldb, c.strideB, y + c.cOff, c.ldc,
                             c.strideC, c.count));
  }
  return Status::ok();
}

/// Issues row-major Y[m, n] = alpha·op(A)·op(B) + beta·Y (A is [k, m] when
/// transA, else [m, k]; B is [n, k] when transB, else [k, n]; lda and ldb
/// their row lengths) through `gemm`, a column-major GEMM with transposes:
///   gemm(transA', transB', m', n', k', alpha, A', lda', B', ldb', beta, C',
///        ldc')
/// as cublasSgemm. Used by gemm and conv2d (whose GEMMs are untransposed);
/// T is the operands' element type (float, or uint16_t: bf16 bits).
template <typename T, typename Gemm>
Status issueRowMajorGemm(bool transA, bool transB, int m, int n, int k,
                         float alpha, const T *a, int lda, const T *b,
                         int ldb, float beta, float *y, Gemm &&gemm) {
  // Y^T[n, m] = op(B)^T·op(A)^T; a row-major buffer is its transpose in
  // column-major order, so op(B)^T needs B transposed exactly when transB.
  return gemm(transB, transA, n, m, k, alpha, b, ldb, a, lda, beta, y, n);
}

/// One matrix as a cuBLASLt layout (cublasLtMatrixLayout_t) describes it:
/// column-major, `rows` x `cols` as stored, leading dimension `ld`, `count`
/// matrices `stride` elements apart (0: one matrix shared by the batch).
struct LtLayout {
  uint64_t rows = 0, cols = 0;
  int64_t ld = 0;
  int count = 1;
  long long stride = 0;
};

/// The column-major GEMM C[m, n] = op(A)·op(B) (cublasSgemm's arguments,
/// batched as cublasSgemmStridedBatched's) as cuBLASLt sees it: the two
/// transposes and the layouts of A, B and C (also D: C is written in place).
struct LtGemm {
  bool transA = false, transB = false;
  LtLayout a, b, c;
};
LtGemm ltGemm(bool transA, bool transB, int m, int n, int k, int lda,
              int ldb, int ldc, int count = 1, long long strideA = 0,
              long long strideB = 0, long long strideC = 0);
/// A plan's call (columnMajor) as an LtGemm.
LtGemm ltGemm(const ColumnMajorCall &c);
/// Row-major Y[m, n] = op(A)·op(B) as issueRowMajorGemm maps it: the
/// LtGemm's A is `b` (row length ldb) and its B is `a` (row length lda).
LtGemm ltRowMajorGemm(bool transA, bool transB, int m, int n, int k, int lda,
                      int ldb);
/// The elements a layout spans from its first: the last element's index + 1.
int64_t ltExtent(const LtLayout &l);

} // namespace tessel::runtime::cuda

#endif // TESSEL_RUNTIME_CUDA_GEMMPLAN_H
