//===- Gemm.cpp - sgemm over oneDNN ---------------------------------------===//
#include "Gemm.h"

#include <oneapi/dnnl/dnnl.h>
#include <omp.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

namespace tessel::runtime::cpu {

void sgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha,
           const float *a, int64_t lda, const float *b, int64_t ldb, float beta,
           float *c, int64_t ldc) {
  if (m == 0 || n == 0)
    return;
  if (k == 0) {
    // A BLAS leaves C untouched for k = 0; be explicit.
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j)
        c[i * ldc + j] = beta == 0.0f ? 0.0f : beta * c[i * ldc + j];
    return;
  }
  dnnl_status_t s = dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k, alpha,
                               a, lda, b, ldb, beta, c, ldc);
  if (s != dnnl_success) {
    // Shapes were validated when the program was loaded; a failure here is
    // a bug in Tessel, not bad input.
    std::fprintf(stderr,
                 "tessel: internal error: dnnl_sgemm(%c, %c, m=%lld, n=%lld, "
                 "k=%lld, lda=%lld, ldb=%lld, ldc=%lld) failed with status %d\n",
                 ta ? 'T' : 'N', tb ? 'T' : 'N', static_cast<long long>(m),
                 static_cast<long long>(n), static_cast<long long>(k),
                 static_cast<long long>(lda), static_cast<long long>(ldb),
                 static_cast<long long>(ldc), static_cast<int>(s));
    std::abort();
  }
}

void dgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha,
           const double *a, int64_t lda, const double *b, int64_t ldb,
           double beta, double *c, int64_t ldc) {
  if (m == 0 || n == 0)
    return;
  // B^T's rows are its columns: copy it once so the inner loop is unit
  // stride (k x n, row-major).
  std::vector<double> bt;
  if (tb && k > 0) {
    bt.resize(static_cast<size_t>(k) * n);
    for (int64_t j = 0; j < n; ++j)
      for (int64_t p = 0; p < k; ++p)
        bt[p * n + j] = b[j * ldb + p];
    b = bt.data();
    ldb = n;
  }
  const bool parallel = m > 1 && m * n * k >= (int64_t(1) << 16);
#pragma omp parallel for schedule(static) if (parallel)
  for (int64_t i = 0; i < m; ++i) {
    double *ci = c + i * ldc;
    for (int64_t j = 0; j < n; ++j)
      ci[j] = beta == 0.0 ? 0.0 : beta * ci[j];
    if (alpha == 0.0)
      continue;
    std::vector<double> acc(static_cast<size_t>(n), 0.0);
    for (int64_t p = 0; p < k; ++p) {
      const double aip = ta ? a[p * lda + i] : a[i * lda + p];
      const double *bp = b + p * ldb;
      for (int64_t j = 0; j < n; ++j)
        acc[j] += aip * bp[j];
    }
    for (int64_t j = 0; j < n; ++j)
      ci[j] += alpha * acc[j];
  }
}

void setGemmThreads(int threads) { omp_set_num_threads(threads < 1 ? 1 : threads); }

} // namespace tessel::runtime::cpu
