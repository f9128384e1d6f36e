//===- Attention.cu - fused attention's row kernels on CUDA ---------------===//
//
// The device code of the Attention family (Attention.cpp builds the steps
// and issues the GEMMs with cuBLAS): per block of query rows, the scores'
// mask, softmax and lse in place (one block per row), the rows whose
// softmax is NaN, and the backward's probabilities and ds. The formulas
// are the CPU kernel's (cpu/Attention.cpp).
//
//===----------------------------------------------------------------------===//
#include "CudaKernels.h"
#include "DeviceUtil.cuh"

#include <cmath>
#include <cstdint>

namespace tessel::runtime::cuda {

namespace {

using namespace device;

/// max that keeps NaN (a NaN score makes its row NaN, as softmax does).
struct MaxNanF {
  __device__ float operator()(float a, float b) const {
    return (isnan(a) || a > b) ? a : b;
  }
};

/// Whether score (i, j) is the masked score plus the mask (keep false).
__device__ inline bool keepHides(const AttentionMask &mask, int64_t i,
                                 int64_t j) {
  return mask.keep &&
         !mask.keep[i * mask.keepRowStride + j * mask.keepColStride];
}

/// Score x of (i, j) with the mask: x + mask, or the masked score where
/// the mask replaces it, or the masked score plus the mask where keep hides
/// it.
__device__ inline float withMask(float x, const AttentionMask &mask, int64_t i,
                                 int64_t j) {
  if (!mask.m)
    return x;
  const float m = mask.m[i * mask.rowStride + j * mask.colStride];
  if (mask.keep)
    return (keepHides(mask, i, j) ? mask.masked : x) + m;
  return mask.replace && m == -INFINITY ? mask.masked : x + m;
}

/// Row i of the scores in place with the mask, then its softmax (one
/// block); returns the row's lse, NaN (and zeros) where its max is not
/// finite.
__device__ float softmaxRow(float *row, int64_t i, int64_t t,
                            const AttentionMask &mask, float *shm) {
  float m = -INFINITY;
  for (int64_t j = threadIdx.x; j < t; j += blockDim.x) {
    const float x = withMask(row[j], mask, i, j);
    row[j] = x;
    m = MaxNanF()(x, m);
  }
  m = blockReduce(m, -INFINITY, MaxNanF(), shm);
  if (!isfinite(m)) {
    for (int64_t j = threadIdx.x; j < t; j += blockDim.x)
      row[j] = 0.0f;
    return NAN;
  }
  float sum = 0.0f;
  for (int64_t j = threadIdx.x; j < t; j += blockDim.x) {
    const float e = expf(row[j] - m);
    row[j] = e;
    sum += e;
  }
  sum = blockReduce(sum, 0.0f, SumF(), shm);
  const float inv = 1.0f / sum;
  for (int64_t j = threadIdx.x; j < t; j += blockDim.x)
    row[j] *= inv;
  return m + logf(sum);
}

/// Scores [rows, t] in place: with the mask, softmax per row, lse[i]; a
/// row whose max is not finite gets zeros and lse NaN.
__global__ void softmaxScoresKernel(float *s, int64_t rows, int64_t t,
                                    AttentionMask mask, float *lse) {
  __shared__ float shm[32];
  for (int64_t i = blockIdx.x; i < rows; i += gridDim.x) {
    const float l = softmaxRow(s + i * t, i, t, mask, shm);
    if (threadIdx.x == 0)
      lse[i] = l;
  }
}

/// Rows of out [rows, dv] whose lse is NaN: fill * sum of v's rows, or NaN
/// without a fill.
__global__ void nanRowsKernel(const float *lse, int64_t rows, const float *v,
                              int64_t t, int64_t dv, const float *fill,
                              float *out) {
  TSL_GRID_LOOP(e, rows * dv) {
    const int64_t i = e / dv, k = e % dv;
    if (!isnan(lse[i]))
      continue;
    if (!fill) {
      out[e] = NAN;
      continue;
    }
    float sum = 0.0f;
    for (int64_t j = 0; j < t; ++j)
      sum += v[j * dv + k];
    out[e] = *fill * sum;
  }
}

/// p [rows, t] = exp(masked scores - lse) in place (0 in NaN rows), and
/// delta[i] = sum_k grad[i, k] out[i, k]. Where the mask replaces, the
/// softmax again instead (as cpu/Attention.cpp): a row the constant leads
/// has |lse| near |c|, whose f32 rounding exp(s - lse) would carry.
__global__ void probabilitiesKernel(float *p, int64_t rows, int64_t t,
                                    AttentionMask mask, const float *lse,
                                    const float *grad, const float *out,
                                    int64_t dv, float *delta) {
  __shared__ float shm[32];
  for (int64_t i = blockIdx.x; i < rows; i += gridDim.x) {
    float *row = p + i * t;
    const float l = lse[i];
    const bool ok = isfinite(l);
    if (ok && mask.replace) { // block-uniform: every thread reduces
      softmaxRow(row, i, t, mask, shm);
    } else {
      for (int64_t j = threadIdx.x; j < t; j += blockDim.x)
        row[j] = ok ? expf(withMask(row[j], mask, i, j) - l) : 0.0f;
    }
    float dot = 0.0f;
    for (int64_t k = threadIdx.x; k < dv; k += blockDim.x)
      dot += grad[i * dv + k] * out[i * dv + k];
    dot = blockReduce(dot, 0.0f, SumF(), shm);
    if (threadIdx.x == 0)
      delta[i] = dot;
  }
}

/// ds = p (dp - delta) in place of p; 0 in NaN rows and where the mask
/// replaced the score by a constant (plus the mask, where keep hides it).
__global__ void dsKernel(float *p, const float *dp, const float *delta,
                         const float *lse, int64_t rows, int64_t t,
                         AttentionMask mask) {
  TSL_GRID_LOOP(e, rows * t) {
    const int64_t i = e / t, j = e % t;
    const bool constant =
        mask.keep
            ? keepHides(mask, i, j)
            : mask.replace &&
                  mask.m[i * mask.rowStride + j * mask.colStride] == -INFINITY;
    p[e] = isfinite(lse[i]) && !constant ? p[e] * (dp[e] - delta[i]) : 0.0f;
  }
}

/// dv [t, dv] += fill * sum of grad's NaN rows (every key's probability
/// was the fill there).
__global__ void nanRowsGradKernel(const float *lse, const float *grad,
                                  int64_t rows, int64_t t, int64_t dv,
                                  const float *fill, float *dvOut) {
  TSL_GRID_LOOP(e, t * dv) {
    const int64_t k = e % dv;
    float sum = 0.0f;
    bool any = false;
    for (int64_t i = 0; i < rows; ++i)
      if (!isfinite(lse[i])) {
        sum += grad[i * dv + k];
        any = true;
      }
    if (any)
      dvOut[e] += *fill * sum;
  }
}

} // namespace

cudaError_t launchAttentionSoftmax(float *s, int64_t rows, int64_t t,
                                   const AttentionMask &mask, float *lse,
                                   cudaStream_t st) {
  if (rows == 0)
    return cudaSuccess;
  softmaxScoresKernel<<<gridRows(rows), kThreads, 0, st>>>(s, rows, t, mask,
                                                           lse);
  return cudaGetLastError();
}

cudaError_t launchAttentionNanRows(const float *lse, int64_t rows,
                                   const float *v, int64_t t, int64_t dv,
                                   const float *fill, float *out,
                                   cudaStream_t st) {
  return launchOver(rows * dv, st, nanRowsKernel, lse, rows, v, t, dv, fill,
                    out);
}

cudaError_t launchAttentionProbabilities(float *p, int64_t rows, int64_t t,
                                         const AttentionMask &mask,
                                         const float *lse, const float *grad,
                                         const float *out, int64_t dv,
                                         float *delta, cudaStream_t st) {
  if (rows == 0)
    return cudaSuccess;
  probabilitiesKernel<<<gridRows(rows), kThreads, 0, st>>>(
      p, rows, t, mask, lse, grad, out, dv, delta);
  return cudaGetLastError();
}

cudaError_t launchAttentionDs(float *p, const float *dp, const float *delta,
                              const float *lse, int64_t rows, int64_t t,
                              const AttentionMask &mask, cudaStream_t st) {
  return launchOver(rows * t, st, dsKernel, p, dp, delta, lse, rows, t, mask);
}

cudaError_t launchAttentionNanRowsGrad(const float *lse, const float *grad,
                                       int64_t rows, int64_t t, int64_t dv,
                                       const float *fill, float *dvOut,
                                       cudaStream_t st) {
  if (!fill)
    return cudaSuccess;
  return launchOver(t * dv, st, nanRowsGradKernel, lse, grad, rows, t, dv,
                    fill, dvOut);
}

} // namespace tessel::runtime::cuda
