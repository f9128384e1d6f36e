//===- WindowMath.h - Sliding windows, element by element ------*- C++ -*-===//
//
// The index math of the pools, their gradients and col2im, one element at a
// time, as host and device functions: the kernels (Conv.cu, Pool.cu) call
// them per thread, and CudaWindowMathTest.cpp runs the same functions on
// the host against the CPU backend, so that the math is checked where no
// GPU is.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_RUNTIME_CUDA_WINDOWMATH_H
#define TESSEL_RUNTIME_CUDA_WINDOWMATH_H

#include "CudaKernels.h"

#include <cstdint>

#if defined(__CUDACC__)
#define TSL_WINDOW_FN __host__ __device__ __forceinline__
#else
#define TSL_WINDOW_FN inline
#endif

namespace tessel::runtime::cuda {

/// The window of output (r, s), clipped to the input; `padded` counts the
/// window clipped to input + pads (as the CPU kernel and ONNX Runtime).
struct Window {
  int64_t h0, h1, w0, w1, padded;
};
TSL_WINDOW_FN Window windowAt(const PoolGeom &g, int64_t r, int64_t s) {
  Window win;
  int64_t h0 = r * g.sh - g.pt;
  int64_t h1 = h0 + g.kh < g.h + g.pb ? h0 + g.kh : g.h + g.pb;
  const int64_t ph = h1 - h0;
  int64_t w0 = s * g.sw - g.pl;
  int64_t w1 = w0 + g.kw < g.w + g.pr ? w0 + g.kw : g.w + g.pr;
  const int64_t pw = w1 - w0;
  win.h0 = h0 < 0 ? 0 : h0;
  win.h1 = h1 < g.h ? h1 : g.h;
  win.w0 = w0 < 0 ? 0 : w0;
  win.w1 = w1 < g.w ? w1 : g.w;
  win.padded = ph * pw;
  return win;
}

/// The outputs [o0, o1) along one dim whose window (start o*stride - pad,
/// k wide) holds input position i.
TSL_WINDOW_FN void coveringOutputs(int64_t i, int64_t k, int64_t stride,
                                   int64_t pad, int64_t outs, int64_t &o0,
                                   int64_t &o1) {
  const int64_t hi = i + pad;    // o*stride <= hi
  const int64_t lo = hi - k + 1; // o*stride >= lo
  o0 = lo <= 0 ? 0 : (lo + stride - 1) / stride;
  o1 = hi / stride + 1;
  if (o1 > outs)
    o1 = outs;
}

/// dx[e] of max_pool_backward (IsMax: x the pool's input) or
/// avg_pool_backward over the planes [planes, h, w]: the windows that cover
/// element e in row-major order; max: a window's dy where e is its first
/// maximum (row-major, as oneDNN's workspace records it); avg: dy divided by
/// the window's count (as avg_pool counts it).
template <bool IsMax>
TSL_WINDOW_FN float poolBackwardAt(const float *x, const float *dy,
                                   const PoolGeom &g, int64_t e) {
  const int64_t iw = e % g.w, ih = (e / g.w) % g.h, p = e / (g.w * g.h);
  const float *px = IsMax ? x + p * g.h * g.w : nullptr;
  const float *pdy = dy + p * g.oh * g.ow;
  int64_t r0, r1, s0, s1;
  coveringOutputs(ih, g.kh, g.sh, g.pt, g.oh, r0, r1);
  coveringOutputs(iw, g.kw, g.sw, g.pl, g.ow, s0, s1);
  float sum = 0.0f;
  for (int64_t r = r0; r < r1; ++r)
    for (int64_t s = s0; s < s1; ++s) {
      const Window win = windowAt(g, r, s);
      if constexpr (IsMax) {
        int64_t best = win.h0 * g.w + win.w0;
        float bv = px[best];
        for (int64_t i = win.h0; i < win.h1; ++i)
          for (int64_t j = win.w0; j < win.w1; ++j)
            if (px[i * g.w + j] > bv) {
              bv = px[i * g.w + j];
              best = i * g.w + j;
            }
        if (best == ih * g.w + iw)
          sum += pdy[r * g.ow + s];
      } else {
        const int64_t count = g.countIncludePad
                                  ? win.padded
                                  : (win.h1 - win.h0) * (win.w1 - win.w0);
        sum += pdy[r * g.ow + s] / static_cast<float>(count);
      }
    }
  return sum;
}

/// x[e] of col2im for one image and group [channels, h, w]: the column
/// entries of every tap (i, j) and output (r, s) with
/// r*sh - pt + i*dh = ih and s*sw - pl + j*dw = iw, summed in tap order.
TSL_WINDOW_FN float col2imAt(const float *col, const Conv2DGeom &g,
                             int64_t e) {
  const int64_t spatial = g.oh * g.ow;
  const int64_t iw = e % g.w, ih = (e / g.w) % g.h, ci = e / (g.w * g.h);
  float sum = 0.0f;
  for (int64_t i = 0; i < g.kh; ++i) {
    const int64_t rn = ih + g.pt - i * g.dh; // r * sh
    if (rn < 0 || rn % g.sh != 0 || rn / g.sh >= g.oh)
      continue;
    const int64_t r = rn / g.sh;
    for (int64_t j = 0; j < g.kw; ++j) {
      const int64_t sn = iw + g.pl - j * g.dw;
      if (sn < 0 || sn % g.sw != 0 || sn / g.sw >= g.ow)
        continue;
      sum += col[((ci * g.kh + i) * g.kw + j) * spatial + r * g.ow +
                 sn / g.sw];
    }
  }
  return sum;
}

} // namespace tessel::runtime::cuda

#undef TSL_WINDOW_FN

#endif // TESSEL_RUNTIME_CUDA_WINDOWMATH_H
