//===- Normalization.cu - Softmax and the norms on CUDA -------------------===//
//
// The device code of the Normalization family (Normalization.cpp builds the
// steps), as the CPU backend's (cpu/Normalization.cpp): softmax and
// log_softmax, layer_norm and rms_norm (one block per row), batch_norm.
//
//===----------------------------------------------------------------------===//
#include "CudaKernels.h"
#include "DeviceUtil.cuh"

#include <cmath>
#include <cstdint>

namespace tessel::runtime::cuda {

namespace {

using namespace device;

/// Softmax over contiguous rows, one block per row. y may be x: every read
/// of a row's reductions happens before the barrier of blockReduce, and the
/// final pass reads and writes the same element in the same thread.
__global__ void softmaxRowsKernel(bool logSoftmax, const float *x, float *y,
                                  int64_t rows, int64_t len) {
  __shared__ float shm[32];
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const float *px = x + row * len;
    float *py = y + row * len;
    float m = -INFINITY;
    for (int64_t i = threadIdx.x; i < len; i += blockDim.x)
      m = px[i] > m ? px[i] : m;
    m = blockReduce(m, -INFINITY, MaxF(), shm);
    float sum = 0.0f;
    for (int64_t i = threadIdx.x; i < len; i += blockDim.x)
      sum += expf(px[i] - m);
    sum = blockReduce(sum, 0.0f, SumF(), shm);
    if (logSoftmax) {
      const float shift = m + logf(sum);
      for (int64_t i = threadIdx.x; i < len; i += blockDim.x)
        py[i] = px[i] - shift;
    } else {
      const float inv = 1.0f / sum;
      for (int64_t i = threadIdx.x; i < len; i += blockDim.x)
        py[i] = expf(px[i] - m) * inv;
    }
  }
}

/// Softmax along the middle dim of [outer, len, inner], one thread per
/// (outer, inner) column.
__global__ void softmaxColumnsKernel(bool logSoftmax, const float *x, float *y,
                                     int64_t outer, int64_t len,
                                     int64_t inner) {
  TSL_GRID_LOOP(col, outer * inner) {
    const int64_t o = col / inner, i = col - o * inner;
    const float *px = x + o * len * inner + i;
    float *py = y + o * len * inner + i;
    float m = -INFINITY;
    for (int64_t l = 0; l < len; ++l)
      m = px[l * inner] > m ? px[l * inner] : m;
    float sum = 0.0f;
    for (int64_t l = 0; l < len; ++l)
      sum += expf(px[l * inner] - m);
    if (logSoftmax) {
      const float shift = m + logf(sum);
      for (int64_t l = 0; l < len; ++l)
        py[l * inner] = px[l * inner] - shift;
    } else {
      const float inv = 1.0f / sum;
      for (int64_t l = 0; l < len; ++l)
        py[l * inner] = expf(px[l * inner] - m) * inv;
    }
  }
}

/// layer_norm / rms_norm over rows of d elements, one block per row (two
/// passes: mean, then variance, as the CPU kernel).
__global__ void layerNormKernel(bool rms, const float *x, int64_t rows,
                                int64_t d, float epsilon, const float *scale,
                                const float *bias, float *y) {
  __shared__ float shm[32];
  const float invD = 1.0f / static_cast<float>(d);
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const float *px = x + row * d;
    float *py = y + row * d;
    if (rms) {
      float ss = 0.0f;
      for (int64_t i = threadIdx.x; i < d; i += blockDim.x)
        ss += px[i] * px[i];
      ss = blockReduce(ss, 0.0f, SumF(), shm);
      const float inv = 1.0f / sqrtf(ss * invD + epsilon);
      for (int64_t i = threadIdx.x; i < d; i += blockDim.x)
        py[i] = px[i] * inv * scale[i];
      continue;
    }
    float sum = 0.0f;
    for (int64_t i = threadIdx.x; i < d; i += blockDim.x)
      sum += px[i];
    const float mean = blockReduce(sum, 0.0f, SumF(), shm) * invD;
    float var = 0.0f;
    for (int64_t i = threadIdx.x; i < d; i += blockDim.x) {
      const float c = px[i] - mean;
      var += c * c;
    }
    var = blockReduce(var, 0.0f, SumF(), shm);
    const float inv = 1.0f / sqrtf(var * invD + epsilon);
    for (int64_t i = threadIdx.x; i < d; i += blockDim.x) {
      const float v = (px[i] - mean) * inv * scale[i];
      py[i] = bias ? v + bias[i] : v;
    }
  }
}

__global__ void batchNormKernel(const float *x, int64_t c, int64_t spatial,
                                int64_t total, const float *scale,
                                const float *bias, const float *mean,
                                const float *var, float epsilon, float *y) {
  TSL_GRID_LOOP(e, total) {
    const int64_t ch = (e / spatial) % c;
    const float a = scale[ch] / sqrtf(var[ch] + epsilon);
    const float sh = bias[ch] - mean[ch] * a;
    y[e] = x[e] * a + sh;
  }
}

} // namespace

cudaError_t launchSoftmax(bool logSoftmax, const float *x, float *y,
                          int64_t outer, int64_t len, int64_t inner,
                          cudaStream_t s) {
  if (outer * len * inner == 0)
    return cudaGetLastError();
  if (inner == 1)
    softmaxRowsKernel<<<gridRows(outer), kThreads, 0, s>>>(logSoftmax, x, y,
                                                           outer, len);
  else
    softmaxColumnsKernel<<<gridFor(outer * inner), kThreads, 0, s>>>(
        logSoftmax, x, y, outer, len, inner);
  return cudaGetLastError();
}

cudaError_t launchLayerNorm(bool rms, const float *x, int64_t rows, int64_t d,
                            float epsilon, const float *scale,
                            const float *bias, float *y, cudaStream_t s) {
  if (rows * d == 0)
    return cudaGetLastError();
  layerNormKernel<<<gridRows(rows), kThreads, 0, s>>>(rms, x, rows, d, epsilon,
                                                      scale, bias, y);
  return cudaGetLastError();
}

cudaError_t launchBatchNorm(const float *x, int64_t n, int64_t c,
                            int64_t spatial, const float *scale,
                            const float *bias, const float *mean,
                            const float *var, float epsilon, float *y,
                            cudaStream_t s) {
  const int64_t total = n * c * spatial;
  return launchOver(total, s, batchNormKernel, x, c, spatial, total, scale,
                    bias, mean, var, epsilon, y);
}

} // namespace tessel::runtime::cuda
