//===- Pool.cpp - max_pool, avg_pool, global_avg_pool (NCHW) --------------===//
#include "tessel/ops/Broadcast.h"
#include "KernelRegistry.h"
#include "KernelResources.h"
#include "Kernels.h"
#include "ThreadPool.h"

#include <algorithm>
#include <limits>

namespace tessel::runtime::cpu {

namespace {

/// The window of result index `o` along one dim of `n` input entries:
/// [lo, hi) clipped to the input, and how many entries it spans in the input
/// and its pads (`padBegin` before, `padEnd` after).
struct Span {
  int64_t lo, hi, padded;
};
inline Span windowSpan(int64_t o, int64_t stride, int64_t padBegin, int64_t k,
                       int64_t n, int64_t padEnd) {
  const int64_t lo = o * stride - padBegin;
  const int64_t hi = std::min(lo + k, n + padEnd);
  return {std::max<int64_t>(lo, 0), std::min(hi, n), hi - lo};
}

/// Runs fn(window) for every output position of every (n, c) plane; the
/// window is clipped to the input, `poolSize` counts the padded window
/// (clipped to input + pads, as PyTorch and ONNX Runtime do).
template <typename F>
void forEachWindow(const Shape &xShape, const Shape &yShape,
                   const std::vector<int64_t> &kernel,
                   const std::vector<int64_t> &strides,
                   const std::vector<int64_t> &pads, ThreadPool &pool, F fn) {
  const int64_t planes = xShape[0] * xShape[1];
  const int64_t h = xShape[2], w = xShape[3], oh = yShape[2], ow = yShape[3];
  pool.parallelFor(planes, std::max<int64_t>(1, 4096 / std::max<int64_t>(oh * ow, 1)),
                   [&](int64_t b, int64_t e) {
    for (int64_t p = b; p < e; ++p)
      for (int64_t r = 0; r < oh; ++r) {
        const Span hs =
            windowSpan(r, strides[0], pads[0], kernel[0], h, pads[2]);
        for (int64_t s = 0; s < ow; ++s) {
          const Span ws =
              windowSpan(s, strides[1], pads[1], kernel[1], w, pads[3]);
          fn(p, p * h * w, (p * oh + r) * ow + s, hs.lo, hs.hi, ws.lo, ws.hi,
             hs.padded * ws.padded);
        }
      }
  });
}

} // namespace

void maxPoolKernel(const float *x, const Shape &xShape, float *y,
                   const Shape &yShape, const std::vector<int64_t> &kernel,
                   const std::vector<int64_t> &strides,
                   const std::vector<int64_t> &pads, ThreadPool &pool) {
  const int64_t w = xShape[3];
  forEachWindow(xShape, yShape, kernel, strides, pads, pool,
                [&](int64_t, int64_t in, int64_t out, int64_t h0, int64_t h1,
                    int64_t w0, int64_t w1, int64_t) {
                  float m = -std::numeric_limits<float>::infinity();
                  for (int64_t i = h0; i < h1; ++i)
                    for (int64_t j = w0; j < w1; ++j)
                      m = std::max(m, x[in + i * w + j]);
                  y[out] = m;
                });
}

void avgPoolKernel(const float *x, const Shape &xShape, float *y,
                   const Shape &yShape, const std::vector<int64_t> &kernel,
                   const std::vector<int64_t> &strides,
                   const std::vector<int64_t> &pads, bool countIncludePad,
                   ThreadPool &pool) {
  const int64_t w = xShape[3];
  forEachWindow(xShape, yShape, kernel, strides, pads, pool,
                [&](int64_t, int64_t in, int64_t out, int64_t h0, int64_t h1,
                    int64_t w0, int64_t w1, int64_t padded) {
                  float s = 0.0f;
                  for (int64_t i = h0; i < h1; ++i)
                    for (int64_t j = w0; j < w1; ++j)
                      s += x[in + i * w + j];
                  int64_t count =
                      countIncludePad ? padded : (h1 - h0) * (w1 - w0);
                  y[out] = count > 0 ? s / static_cast<float>(count) : 0.0f;
                });
}

void globalAvgPoolKernel(const float *x, const Shape &xShape, float *y,
                         ThreadPool &pool) {
  const ChannelGeometry k(xShape);
  const int64_t planes = k.batch * k.channels, spatial = k.spatial;
  pool.parallelFor(planes, std::max<int64_t>(1, 16384 / std::max<int64_t>(spatial, 1)),
                   [&](int64_t b, int64_t e) {
                     for (int64_t p = b; p < e; ++p) {
                       const float *px = x + p * spatial;
                       float s = 0.0f;
#pragma omp simd reduction(+ : s)
                       for (int64_t i = 0; i < spatial; ++i)
                         s += px[i];
                       y[p] = spatial ? s / static_cast<float>(spatial) : 0.0f;
                     }
                   });
}

namespace {

Step maxPoolStep(const KernelContext &c) {
  void *x0 = c.operand(0), *y0 = c.result(0);
  if (DnnlPool *p = c.resources.dnnlPools[c.index].get())
    return [=] {
      return p->run(static_cast<const float *>(x0), static_cast<float *>(y0));
    };
  return kernelStep(c, [](const StepArgs &s) {
    maxPoolKernel(static_cast<const float *>(s.x0), s.a->shape,
                  static_cast<float *>(s.y0), s.r->shape, s.o->kernel,
                  s.o->strides, s.o->pads, *s.tp);
  });
}

Step avgPoolStep(const KernelContext &c) {
  return kernelStep(c, [](const StepArgs &s) {
    avgPoolKernel(static_cast<const float *>(s.x0), s.a->shape,
                  static_cast<float *>(s.y0), s.r->shape, s.o->kernel,
                  s.o->strides, s.o->pads, s.o->countIncludePad, *s.tp);
  });
}

Step globalAvgPoolStep(const KernelContext &c) {
  return kernelStep(c, [](const StepArgs &s) {
    globalAvgPoolKernel(static_cast<const float *>(s.x0), s.a->shape,
                        static_cast<float *>(s.y0), *s.tp);
  });
}

} // namespace

void registerPoolBackwardKernels(KernelRegistry &r); // PoolBackward.cpp

void registerPoolKernels(KernelRegistry &r) {
  registerPoolBackwardKernels(r);
  addKernels(r, {{OpKind::MaxPool, maxPoolStep},
                 {OpKind::AvgPool, avgPoolStep},
                 {OpKind::GlobalAvgPool, globalAvgPoolStep}});
}

} // namespace tessel::runtime::cpu
