//===- Gemm.h - Single-precision GEMM for the CPU kernels -------*- C++ -*-===//
//
// One entry point for every GEMM the CPU backend runs (matmul, gemm, conv2d
// after im2col), so the library behind it is chosen in one place: oneDNN's
// row-major sgemm (libdnnl, OpenMP threads). Measured on this project's
// machines (AMD EPYC, AVX-512, 1 thread, GPT-2 and ResNet GEMM shapes) it is
// 15-50% faster than OpenBLAS 0.3.21 (runtime/README.md, "GEMM and conv
// library").
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_RUNTIME_CPU_GEMM_H
#define TESSEL_RUNTIME_CPU_GEMM_H

#include <cstdint>

namespace tessel::runtime::cpu {

/// C[m, n] = alpha * op(A)[m, k] * op(B)[k, n] + beta * C, row-major, with
/// op(X) = X^T where `ta` / `tb` is set. k = 0 gives C = beta * C (0 when
/// beta is 0, whatever C held). Runs on the calling thread's OpenMP thread
/// count (setGemmThreads).
void sgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha,
           const float *a, int64_t lda, const float *b, int64_t ldb, float beta,
           float *c, int64_t ldc);

/// sgemm's contract in f64 (f64 models, docs/precision.md). oneDNN has no
/// f64 GEMM and no other library here has one, so this is Tessel's own: rows
/// of C split over the OpenMP threads, each summed over k in order (B^T
/// copied once so the inner loop is unit stride). Correct rather than fast:
/// f64 models are for checking, not for speed.
void dgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha,
           const double *a, int64_t lda, const double *b, int64_t ldb,
           double beta, double *c, int64_t ldc);

/// Threads of the calling thread's GEMMs (and OpenMP regions).
void setGemmThreads(int threads);

} // namespace tessel::runtime::cpu

#endif // TESSEL_RUNTIME_CPU_GEMM_H
