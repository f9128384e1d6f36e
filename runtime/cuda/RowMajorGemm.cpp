//===- RowMajorGemm.cpp - Row-major cuBLAS GEMMs ---------------------------===//
#include "RowMajorGemm.h"

#include "CudaStatus.h"
#include "GemmPlan.h"

namespace tessel::runtime::cuda {

Status gemmRowMajor(cublasHandle_t blas, bool transA, bool transB, int m, int n,
                    int k, float alpha, const float *a, int lda, const float *b,
                    int ldb, float beta, float *c) {
  cublasHandle_t h = blas;
  return issueRowMajorGemm(
      transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c,
      [h](bool tA, bool tB, int m2, int n2, int k2, float al, const float *A,
          int ldA, const float *B, int ldB, float be, float *C, int ldC) {
        TSL_CUBLAS(cublasSgemm(h, tA ? CUBLAS_OP_T : CUBLAS_OP_N,
                               tB ? CUBLAS_OP_T : CUBLAS_OP_N, m2, n2, k2, &al,
                               A, ldA, B, ldB, &be, C, ldC),
                   "cublasSgemm");
        return Status::ok();
      });
}

Status gemmRowMajorBf16(cublasHandle_t blas, bool transA, bool transB, int m,
                        int n, int k, float alpha, const uint16_t *a, int lda,
                        const uint16_t *b, int ldb, float beta, float *c) {
  cublasHandle_t h = blas;
  return issueRowMajorGemm(
      transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c,
      [h](bool tA, bool tB, int m2, int n2, int k2, float al, const uint16_t *A,
          int ldA, const uint16_t *B, int ldB, float be, float *C, int ldC) {
        TSL_CUBLAS(cublasGemmEx(h, tA ? CUBLAS_OP_T : CUBLAS_OP_N,
                                tB ? CUBLAS_OP_T : CUBLAS_OP_N, m2, n2, k2,
                                &al, A, CUDA_R_16BF, ldA, B, CUDA_R_16BF, ldB,
                                &be, C, CUDA_R_32F, ldC, CUBLAS_COMPUTE_32F,
                                CUBLAS_GEMM_DEFAULT),
                   "cublasGemmEx (bf16)");
        return Status::ok();
      });
}

} // namespace tessel::runtime::cuda
