//===- Training.cu - Gradient ops, optimizer updates on CUDA --------------===//
//
// The device code of the Training family (Training.cpp builds the steps; the
// ops of dialects/tessel/TrainingOps.td): gelu_grad, log_softmax_grad,
// gather_grad, BatchNorm's training pieces, adam_update and sgd_update, each
// with the CPU kernel's formula (runtime/cpu/Training.cpp). relu_grad is a
// case of the binary kernel (Binary.cu); col2im and the pools' gradients are
// in Conv.cu and Pool.cu.
//
// No kernel here uses atomics, so every result is the same on every run:
// gather_grad sorts the indices (a stable radix sort keeps positions in
// order) and sums each index's rows in position order, the CPU's order, so
// that its result has the CPU's bits.
//
//===----------------------------------------------------------------------===//
#include "CudaKernels.h"
#include "DeviceUtil.cuh"
#include "tessel/runtime/ScalarOps.h"

#include <climits>
#include <cmath>
#include <cub/device/device_radix_sort.cuh>

namespace tessel::runtime::cuda {

namespace {

using namespace device;

//===----------------------------------------------------------------------===//
// gelu_grad, log_softmax_grad
//===----------------------------------------------------------------------===//

__global__ void geluGradKernel(const float *x, const float *g, float *y,
                               int64_t n, bool tanhForm) {
  const scalar::GeluGrad<CudaMath> f{tanhForm};
  TSL_GRID_LOOP(i, n) { y[i] = f(x[i], g[i]); }
}

/// One block per row (the axis innermost). y may be g: each element is read
/// (for the sum) before the barrier of blockReduce and written after it by
/// the thread that reads it again.
__global__ void logSoftmaxGradRowsKernel(const float *out, const float *g,
                                         float *y, int64_t rows, int64_t len) {
  __shared__ float shm[32];
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const float *po = out + row * len, *pg = g + row * len;
    float *py = y + row * len;
    float sum = 0.0f;
    for (int64_t i = threadIdx.x; i < len; i += blockDim.x)
      sum += pg[i];
    sum = blockReduce(sum, 0.0f, SumF(), shm);
    for (int64_t i = threadIdx.x; i < len; i += blockDim.x)
      py[i] = pg[i] - expf(po[i]) * sum;
  }
}

/// One thread per (outer, inner) column; the CPU's order of the sum.
__global__ void logSoftmaxGradColumnsKernel(const float *out, const float *g,
                                            float *y, int64_t outer,
                                            int64_t len, int64_t inner) {
  TSL_GRID_LOOP(col, outer * inner) {
    const int64_t o = col / inner, in = col - o * inner;
    const int64_t base = o * len * inner + in;
    float sum = 0.0f;
    for (int64_t a = 0; a < len; ++a)
      sum += g[base + a * inner];
    for (int64_t a = 0; a < len; ++a) {
      const int64_t k = base + a * inner;
      y[k] = g[k] - expf(out[k]) * sum;
    }
  }
}

//===----------------------------------------------------------------------===//
// gather_grad
//===----------------------------------------------------------------------===//

/// key[j] = idx[j] wrapped into [0, dim), or dim (sorted last, skipped) when
/// out of range; val[j] = j.
template <typename I>
__global__ void gatherGradKeysKernel(const I *idx, int n, int64_t dim,
                                     unsigned *key, int *val) {
  TSL_GRID_LOOP(j, n) {
    int64_t v = static_cast<int64_t>(idx[j]);
    if (v < 0)
      v += dim;
    key[j] = static_cast<unsigned>((v >= 0 && v < dim) ? v : dim);
    val[j] = static_cast<int>(j);
  }
}

/// One thread per (o, p, c) of [outer, n, inner]: where sorted position p
/// starts a run of equal keys, out[o, key, c] = the run's grad rows summed
/// from 0 in position order (as the CPU's += into zeros).
__global__ void gatherGradSumKernel(const float *grad, const unsigned *key,
                                    const int *val, int n, int64_t outer,
                                    int64_t dim, int64_t inner, float *out) {
  const int64_t total = outer * n * inner;
  TSL_GRID_LOOP(e, total) {
    const int64_t c = e % inner;
    const int64_t p = (e / inner) % n;
    const int64_t o = e / (inner * n);
    const unsigned k = key[p];
    if (k >= dim || (p > 0 && key[p - 1] == k))
      continue;
    const float *rows = grad + o * n * inner + c;
    float sum = 0.0f;
    for (int64_t q = p; q < n && key[q] == k; ++q)
      sum += rows[static_cast<int64_t>(val[q]) * inner];
    out[(o * dim + static_cast<int64_t>(k)) * inner + c] = sum;
  }
}

/// Bits that hold every key in [0, dim].
int keyBits(int64_t dim) {
  int bits = 1;
  while (bits < 31 && (int64_t(1) << bits) <= dim)
    ++bits;
  return bits;
}

/// The scratch of launchGatherGrad: keys and positions before and after the
/// sort, then cub's own, each 256-byte aligned.
struct GatherGradScratch {
  unsigned *keyIn, *keyOut;
  int *valIn, *valOut;
  void *temp;
  size_t tempBytes;
};
size_t alignUp(size_t b) { return (b + 255) / 256 * 256; }
GatherGradScratch carve(void *scratch, int n, size_t total) {
  char *p = static_cast<char *>(scratch);
  const size_t arr = alignUp(static_cast<size_t>(n) * sizeof(int));
  GatherGradScratch s;
  s.keyIn = reinterpret_cast<unsigned *>(p);
  s.valIn = reinterpret_cast<int *>(p + arr);
  s.keyOut = reinterpret_cast<unsigned *>(p + 2 * arr);
  s.valOut = reinterpret_cast<int *>(p + 3 * arr);
  s.temp = p + 4 * arr;
  s.tempBytes = total - 4 * arr;
  return s;
}

//===----------------------------------------------------------------------===//
// BatchNorm's training pieces: one block per channel
//===----------------------------------------------------------------------===//

/// The planes of channel ch in batch order, each strided over the block:
/// f(value index) for each element.
template <typename F>
__device__ void forChannel(int64_t n, int64_t c, int64_t spatial, int64_t ch,
                           F f) {
  for (int64_t b = 0; b < n; ++b) {
    const int64_t base = (b * c + ch) * spatial;
    for (int64_t i = threadIdx.x; i < spatial; i += blockDim.x)
      f(base + i);
  }
}

__global__ void batchNormVarianceKernel(const float *x, const float *mean,
                                        int64_t n, int64_t c, int64_t spatial,
                                        float *var) {
  __shared__ double shm[32];
  for (int64_t ch = blockIdx.x; ch < c; ch += gridDim.x) {
    const float m = mean[ch];
    double acc = 0.0;
    forChannel(n, c, spatial, ch, [&](int64_t k) {
      const float d = __fsub_rn(x[k], m);
      acc += static_cast<double>(__fmul_rn(d, d)); // rounded, as the CPU
    });
    acc = blockReduce(acc, 0.0, SumF(), shm);
    const double count = static_cast<double>(n * spatial);
    if (threadIdx.x == 0)
      var[ch] = count != 0.0 ? static_cast<float>(acc / count) : NAN;
  }
}

__global__ void batchNormGradSumsKernel(const float *g, const float *x,
                                        const float *mean, int64_t n, int64_t c,
                                        int64_t spatial, float *sumG,
                                        float *sumGC) {
  __shared__ double shm[32];
  for (int64_t ch = blockIdx.x; ch < c; ch += gridDim.x) {
    const float m = mean[ch];
    double a = 0.0, b = 0.0;
    forChannel(n, c, spatial, ch, [&](int64_t k) {
      const float gk = g[k];
      a += static_cast<double>(gk);
      b += static_cast<double>(__fmul_rn(gk, __fsub_rn(x[k], m)));
    });
    a = blockReduce(a, 0.0, SumF(), shm);
    b = blockReduce(b, 0.0, SumF(), shm);
    if (threadIdx.x == 0) {
      sumG[ch] = static_cast<float>(a);
      sumGC[ch] = static_cast<float>(b);
    }
  }
}

/// The CPU's formula, each operation rounded once (no fused multiply-add).
__global__ void batchNormGradInputKernel(const float *g, const float *x,
                                         const float *mean,
                                         const float *gradMean,
                                         const float *proj, const float *coef,
                                         int64_t c, int64_t spatial,
                                         int64_t total, float *dx) {
  TSL_GRID_LOOP(e, total) {
    const int64_t ch = (e / spatial) % c;
    const float centred = __fmul_rn(__fsub_rn(x[e], mean[ch]), proj[ch]);
    dx[e] =
        __fmul_rn(__fsub_rn(__fsub_rn(g[e], gradMean[ch]), centred), coef[ch]);
  }
}

// Optimizer updates ------------------------------------------------------
// The formulas of tessel/ops/Optimizer.h (AdamStep, SgdStep), which the CPU
// kernels run too, over CudaMath's once-rounded add, sub, mul and div (no
// fused multiply-add), so both backends give the same bits. Results may alias operands (in place): each thread
// reads its element before it writes it. The parameter and its state may be
// pinned host memory (Gemini's host chunks), read through its mapping.

__global__ void adamUpdateKernel(const float *p, const float *g,
                                 const float *m, const float *v,
                                 const float *stepSize, const float *sqrtBc2,
                                 const float *decay, float *p1, float *m1,
                                 float *v1, int64_t n, AdamParams k) {
  const AdamStep<CudaMath> f{k, *stepSize, *sqrtBc2, *decay};
  TSL_GRID_LOOP(i, n) {
    float pi = p[i], mi = m[i], vi = v[i];
    float gi = g[i];
    if (k.weightDecay != 0.0f)
      gi = coupledDecay<CudaMath>(gi, pi, k.weightDecay);
    f(pi, gi, mi, vi);
    p1[i] = pi;
    m1[i] = mi;
    v1[i] = vi;
  }
}

__global__ void sgdUpdateKernel(const float *p, const float *g,
                                const float *buf, const float *lr, float *p1,
                                float *buf1, int64_t n, SgdParams k) {
  const SgdStep<CudaMath> f{k, *lr};
  TSL_GRID_LOOP(i, n) {
    float pi = p[i], bi = buf[i];
    float di = g[i];
    if (k.weightDecay != 0.0f)
      di = coupledDecay<CudaMath>(di, pi, k.weightDecay);
    f(pi, di, bi);
    p1[i] = pi;
    buf1[i] = bi;
  }
}

} // namespace

cudaError_t launchGeluGrad(const float *x, const float *g, float *y, int64_t n,
                           bool tanhForm, cudaStream_t s) {
  return launchOver(n, s, geluGradKernel, x, g, y, n, tanhForm);
}

cudaError_t launchLogSoftmaxGrad(const float *out, const float *g, float *y,
                                 int64_t outer, int64_t len, int64_t inner,
                                 cudaStream_t s) {
  if (outer * len * inner == 0)
    return cudaGetLastError();
  if (inner == 1)
    logSoftmaxGradRowsKernel<<<gridRows(outer), kThreads, 0, s>>>(out, g, y,
                                                                  outer, len);
  else
    logSoftmaxGradColumnsKernel<<<gridFor(outer * inner), kThreads, 0, s>>>(
        out, g, y, outer, len, inner);
  return cudaGetLastError();
}

cudaError_t gatherGradScratchBytes(int64_t numIndices, int64_t dim,
                                   size_t &bytes) {
  bytes = 0;
  if (numIndices <= 0 || numIndices > INT_MAX || dim >= INT_MAX)
    return cudaErrorInvalidValue;
  const int n = static_cast<int>(numIndices);
  size_t temp = 0;
  cudaError_t e = cub::DeviceRadixSort::SortPairs(
      nullptr, temp, static_cast<const unsigned *>(nullptr),
      static_cast<unsigned *>(nullptr), static_cast<const int *>(nullptr),
      static_cast<int *>(nullptr), n, 0, keyBits(dim));
  bytes = 4 * alignUp(static_cast<size_t>(n) * sizeof(int)) + alignUp(temp);
  return e;
}

cudaError_t launchGatherGrad(const float *grad, DType indexType,
                             const void *indices, int64_t numIndices,
                             int64_t outer, int64_t dim, int64_t inner,
                             void *scratch, size_t scratchBytes, float *out,
                             cudaStream_t s) {
  const int64_t bytes =
      outer * dim * inner * static_cast<int64_t>(sizeof(float));
  if (bytes) {
    cudaError_t e = cudaMemsetAsync(out, 0, bytes, s);
    if (e != cudaSuccess)
      return e;
  }
  if (numIndices == 0 || outer * inner == 0)
    return cudaGetLastError();
  const int n = static_cast<int>(numIndices);
  GatherGradScratch w = carve(scratch, n, scratchBytes);
  cudaError_t e = indexType == DType::I64
                      ? launchOver(n, s, gatherGradKeysKernel<int64_t>,
                                   static_cast<const int64_t *>(indices), n,
                                   dim, w.keyIn, w.valIn)
                      : launchOver(n, s, gatherGradKeysKernel<int32_t>,
                                   static_cast<const int32_t *>(indices), n,
                                   dim, w.keyIn, w.valIn);
  if (e != cudaSuccess)
    return e;
  e = cub::DeviceRadixSort::SortPairs(w.temp, w.tempBytes, w.keyIn, w.keyOut,
                                      w.valIn, w.valOut, n, 0, keyBits(dim), s);
  if (e != cudaSuccess)
    return e;
  return launchOver(outer * n * inner, s, gatherGradSumKernel, grad, w.keyOut,
                    w.valOut, n, outer, dim, inner, out);
}

cudaError_t launchBatchNormVariance(const float *x, const float *mean,
                                    int64_t n, int64_t c, int64_t spatial,
                                    float *var, cudaStream_t s) {
  if (c == 0)
    return cudaGetLastError();
  batchNormVarianceKernel<<<gridRows(c), kThreads, 0, s>>>(x, mean, n, c,
                                                           spatial, var);
  return cudaGetLastError();
}

cudaError_t launchBatchNormGradSums(const float *g, const float *x,
                                    const float *mean, int64_t n, int64_t c,
                                    int64_t spatial, float *sumG, float *sumGC,
                                    cudaStream_t s) {
  if (c == 0)
    return cudaGetLastError();
  batchNormGradSumsKernel<<<gridRows(c), kThreads, 0, s>>>(
      g, x, mean, n, c, spatial, sumG, sumGC);
  return cudaGetLastError();
}

cudaError_t launchBatchNormGradInput(const float *g, const float *x,
                                     const float *mean, const float *gradMean,
                                     const float *proj, const float *coef,
                                     int64_t n, int64_t c, int64_t spatial,
                                     float *dx, cudaStream_t s) {
  const int64_t total = n * c * spatial;
  return launchOver(total, s, batchNormGradInputKernel, g, x, mean, gradMean,
                    proj, coef, c, spatial, total, dx);
}

cudaError_t launchAdamUpdate(const AdamBuffers &b, const AdamParams &k,
                             cudaStream_t s) {
  return launchOver(b.n, s, adamUpdateKernel, b.p, b.g, b.m, b.v, b.stepSize,
                    b.sqrtBc2, b.decay, b.p1, b.m1, b.v1, b.n, k);
}

cudaError_t launchSgdUpdate(const SgdBuffers &b, const SgdParams &k,
                            cudaStream_t s) {
  return launchOver(b.n, s, sgdUpdateKernel, b.p, b.g, b.buf, b.lr, b.p1,
                    b.buf1, b.n, k);
}

} // namespace tessel::runtime::cuda
