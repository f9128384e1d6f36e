//===- RowMajorGemm.h - Row-major cublasSgemm -------------------*- C++ -*-===//
//
// Row-major Y[m, n] = alpha·op(A)·op(B) + beta·Y through column-major
// cublasSgemm, or cublasGemmEx over bf16 operands (GemmPlan.h's
// issueRowMajorGemm): used by gemm (MatMul.cpp) and conv2d (Conv.cpp).
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_RUNTIME_CUDA_ROWMAJORGEMM_H
#define TESSEL_RUNTIME_CUDA_ROWMAJORGEMM_H

#include "tessel/runtime/Status.h"

#include <climits>
#include <cstdint>
#include <cublas_v2.h>

namespace tessel::runtime::cuda {

/// Whether `v` is a valid cuBLAS dim (an int).
inline bool fitsInt(int64_t v) { return v >= 0 && v <= INT_MAX; }

/// A is [k, m] when transA, else [m, k]; B is [n, k] when transB, else
/// [k, n]; lda and ldb are their row lengths; Y's row length is n.
Status gemmRowMajor(cublasHandle_t blas, bool transA, bool transB, int m, int n,
                    int k, float alpha, const float *a, int lda, const float *b,
                    int ldb, float beta, float *c);
/// The same over bf16 A and B (their bits) into f32 Y: cublasGemmEx with
/// CUDA_R_16BF operands and CUBLAS_COMPUTE_32F (tensor cores; the products
/// exact in f32), for the convolutions with `bf16_operands` (Conv.cpp).
Status gemmRowMajorBf16(cublasHandle_t blas, bool transA, bool transB, int m,
                        int n, int k, float alpha, const uint16_t *a, int lda,
                        const uint16_t *b, int ldb, float beta, float *c);

} // namespace tessel::runtime::cuda

#endif // TESSEL_RUNTIME_CUDA_ROWMAJORGEMM_H
