//===- Conv.cu - im2col, col2im, bias on CUDA -----------------------------===//
//
// The device code of the Conv family: conv2d and its gradients are cuBLAS
// GEMMs over im2col'd columns (Conv.cpp); their im2col (f32 and bf16), the
// bias add, and col2im, conv2d_backward_data's scatter written as a gather
// (one thread per input element, which sums the columns' entries that read
// it in a fixed order: no atomics, the same result on every run).
//
//===----------------------------------------------------------------------===//
#include "CudaKernels.h"
#include "DeviceUtil.cuh"

#include <cstdint>

namespace tessel::runtime::cuda {

namespace {

using namespace device;

template <typename T>
__global__ void im2colKernel(const T *x, Conv2DGeom g, T *col) {
  const int64_t spatial = g.oh * g.ow;
  const int64_t total = g.channels * g.kh * g.kw * spatial;
  TSL_GRID_LOOP(e, total) {
    const int64_t row = e / spatial, pos = e - row * spatial;
    const int64_t ci = row / (g.kh * g.kw), i = (row / g.kw) % g.kh,
                  j = row % g.kw;
    const int64_t r = pos / g.ow, s = pos - r * g.ow;
    const int64_t ih = r * g.sh - g.pt + i * g.dh;
    const int64_t iw = s * g.sw - g.pl + j * g.dw;
    col[e] = (ih >= 0 && ih < g.h && iw >= 0 && iw < g.w)
                 ? x[(ci * g.h + ih) * g.w + iw]
                 : T(0); // +0 in f32 and in bf16's bits
  }
}

__global__ void addBiasKernel(float *y, const float *bias, int64_t o,
                              int64_t spatial, int64_t total) {
  TSL_GRID_LOOP(e, total) { y[e] += bias[(e / spatial) % o]; }
}

/// One thread per input element (col2imAt: WindowMath.h).
__global__ void col2imKernel(const float *col, Conv2DGeom g, float *x) {
  const int64_t total = g.channels * g.h * g.w;
  TSL_GRID_LOOP(e, total) { x[e] = col2imAt(col, g, e); }
}

} // namespace

cudaError_t launchIm2Col(const float *x, const Conv2DGeom &g, float *col,
                         cudaStream_t s) {
  return launchOver(g.channels * g.kh * g.kw * g.oh * g.ow, s,
                    im2colKernel<float>, x, g, col);
}

cudaError_t launchIm2ColBf16(const uint16_t *x, const Conv2DGeom &g,
                             uint16_t *col, cudaStream_t s) {
  return launchOver(g.channels * g.kh * g.kw * g.oh * g.ow, s,
                    im2colKernel<uint16_t>, x, g, col);
}

cudaError_t launchAddBias(float *y, const float *bias, int64_t n, int64_t o,
                          int64_t spatial, cudaStream_t s) {
  const int64_t total = n * o * spatial;
  return launchOver(total, s, addBiasKernel, y, bias, o, spatial, total);
}

cudaError_t launchCol2Im(const float *col, const Conv2DGeom &g, float *x,
                         cudaStream_t s) {
  return launchOver(g.channels * g.h * g.w, s, col2imKernel, col, g, x);
}

} // namespace tessel::runtime::cuda
