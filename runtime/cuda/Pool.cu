//===- Pool.cu - Pooling and its gradients on CUDA ------------------------===//
//
// The device code of the Pool family (Pool.cpp builds the steps): max_pool,
// avg_pool, global_avg_pool, and the pools' gradients, scatters written as
// gathers (one thread per dx element over the windows that cover it: no
// atomics, the same result on every run). The windows' math is WindowMath.h.
//
//===----------------------------------------------------------------------===//
#include "CudaKernels.h"
#include "DeviceUtil.cuh"

#include <cmath>
#include <cstdint>

namespace tessel::runtime::cuda {

namespace {

using namespace device;

/// max_pool (IsMax) or avg_pool, one result element per thread (windowAt:
/// WindowMath.h).
template <bool IsMax>
__global__ void poolKernel(const float *x, float *y, PoolGeom g) {
  const int64_t total = g.planes * g.oh * g.ow;
  TSL_GRID_LOOP(e, total) {
    const int64_t s = e % g.ow, r = (e / g.ow) % g.oh, p = e / (g.ow * g.oh);
    const Window win = windowAt(g, r, s);
    const float *px = x + p * g.h * g.w;
    float acc = IsMax ? -INFINITY : 0.0f;
    for (int64_t i = win.h0; i < win.h1; ++i)
      for (int64_t j = win.w0; j < win.w1; ++j) {
        const float v = px[i * g.w + j];
        if constexpr (IsMax)
          acc = acc < v ? v : acc; // std::max(acc, v)
        else
          acc += v;
      }
    if constexpr (IsMax) {
      y[e] = acc;
    } else {
      const int64_t count = g.countIncludePad
                                ? win.padded
                                : (win.h1 - win.h0) * (win.w1 - win.w0);
      y[e] = count > 0 ? acc / static_cast<float>(count) : 0.0f;
    }
  }
}

__global__ void globalAvgPoolKernel(const float *x, float *y, int64_t planes,
                                    int64_t spatial) {
  __shared__ float shm[32];
  for (int64_t p = blockIdx.x; p < planes; p += gridDim.x) {
    const float *px = x + p * spatial;
    float sum = 0.0f;
    for (int64_t i = threadIdx.x; i < spatial; i += blockDim.x)
      sum += px[i];
    sum = blockReduce(sum, 0.0f, SumF(), shm);
    if (threadIdx.x == 0)
      y[p] = spatial ? sum / static_cast<float>(spatial) : 0.0f;
  }
}

/// One thread per dx element (poolBackwardAt: WindowMath.h).
template <bool IsMax>
__global__ void poolBackwardKernel(const float *x, const float *dy, float *dx,
                                   PoolGeom g) {
  const int64_t total = g.planes * g.h * g.w;
  TSL_GRID_LOOP(e, total) { dx[e] = poolBackwardAt<IsMax>(x, dy, g, e); }
}

} // namespace

cudaError_t launchMaxPool(const float *x, float *y, const PoolGeom &g,
                          cudaStream_t s) {
  return launchOver(g.planes * g.oh * g.ow, s, poolKernel<true>, x, y, g);
}

cudaError_t launchAvgPool(const float *x, float *y, const PoolGeom &g,
                          cudaStream_t s) {
  return launchOver(g.planes * g.oh * g.ow, s, poolKernel<false>, x, y, g);
}

cudaError_t launchGlobalAvgPool(const float *x, float *y, int64_t planes,
                                int64_t spatial, cudaStream_t s) {
  if (planes == 0)
    return cudaGetLastError();
  globalAvgPoolKernel<<<gridRows(planes), kThreads, 0, s>>>(x, y, planes,
                                                            spatial);
  return cudaGetLastError();
}

cudaError_t launchMaxPoolBackward(const float *x, const float *dy, float *dx,
                                  const PoolGeom &g, cudaStream_t s) {
  return launchOver(g.planes * g.h * g.w, s, poolBackwardKernel<true>, x, dy,
                    dx, g);
}

cudaError_t launchAvgPoolBackward(const float *dy, float *dx, const PoolGeom &g,
                                  cudaStream_t s) {
  return launchOver(g.planes * g.h * g.w, s, poolBackwardKernel<false>,
                    static_cast<const float *>(nullptr), dy, dx, g);
}

} // namespace tessel::runtime::cuda
