//===- Normalization.cpp - softmax, layer/rms/batch norm ------------------===//
#include "tessel/ops/Broadcast.h"
#include "KernelRegistry.h"
#include "KernelResources.h"
#include "Kernels.h"
#include "ThreadPool.h"
#include "VecMath.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace tessel::runtime::cpu {

namespace {

float rowMax(const float *x, int64_t n) {
  float m = -std::numeric_limits<float>::infinity();
#pragma omp simd reduction(max : m)
  for (int64_t i = 0; i < n; ++i)
    m = x[i] > m ? x[i] : m;
  return m;
}

float rowSum(const float *x, int64_t n) {
  float s = 0.0f;
#pragma omp simd reduction(+ : s)
  for (int64_t i = 0; i < n; ++i)
    s += x[i];
  return s;
}

/// Softmax of one contiguous row (y may equal x).
void softmaxRow(bool logSoftmax, const float *x, float *y, int64_t n) {
  const float m = rowMax(x, n);
  float s = 0.0f;
  if (logSoftmax) {
#pragma omp simd reduction(+ : s)
    for (int64_t i = 0; i < n; ++i)
      s += vexp(x[i] - m);
    const float shift = m + std::log(s);
    for (int64_t i = 0; i < n; ++i)
      y[i] = x[i] - shift;
    return;
  }
#pragma omp simd reduction(+ : s)
  for (int64_t i = 0; i < n; ++i) {
    float e = vexp(x[i] - m);
    y[i] = e;
    s += e;
  }
  const float inv = 1.0f / s;
  for (int64_t i = 0; i < n; ++i)
    y[i] *= inv;
}

/// Softmax along the middle dim of a [len, inner] block, inner > 1.
void softmaxStrided(bool logSoftmax, const float *x, float *y, int64_t len,
                    int64_t inner, std::vector<float> &tmp) {
  tmp.assign(2 * inner, 0.0f);
  float *m = tmp.data(), *s = tmp.data() + inner;
  std::fill(m, m + inner, -std::numeric_limits<float>::infinity());
  for (int64_t l = 0; l < len; ++l)
    for (int64_t i = 0; i < inner; ++i)
      m[i] = std::max(m[i], x[l * inner + i]);
  for (int64_t l = 0; l < len; ++l)
    for (int64_t i = 0; i < inner; ++i) {
      float e = vexp(x[l * inner + i] - m[i]);
      s[i] += e;
      if (!logSoftmax)
        y[l * inner + i] = e;
    }
  if (logSoftmax) {
    for (int64_t i = 0; i < inner; ++i)
      s[i] = m[i] + std::log(s[i]);
    for (int64_t l = 0; l < len; ++l)
      for (int64_t i = 0; i < inner; ++i)
        y[l * inner + i] = x[l * inner + i] - s[i];
    return;
  }
  for (int64_t i = 0; i < inner; ++i)
    s[i] = 1.0f / s[i];
  for (int64_t l = 0; l < len; ++l)
    for (int64_t i = 0; i < inner; ++i)
      y[l * inner + i] *= s[i];
}

} // namespace

void softmaxKernel(bool logSoftmax, const float *x, const Shape &shape,
                   int64_t axis, float *y, ThreadPool &pool) {
  const AxisView v = aroundAxis(shape, axis);
  const int64_t outer = v.outer, len = v.len, inner = v.inner;
  if (outer * len * inner == 0)
    return;
  const int64_t block = len * inner;
  pool.parallelFor(outer, std::max<int64_t>(1, 8192 / block),
                   [&](int64_t b, int64_t e) {
                     std::vector<float> tmp;
                     for (int64_t o = b; o < e; ++o) {
                       if (inner == 1)
                         softmaxRow(logSoftmax, x + o * block, y + o * block, len);
                       else
                         softmaxStrided(logSoftmax, x + o * block,
                                        y + o * block, len, inner, tmp);
                     }
                   });
}

void layerNormKernel(bool rms, const float *x, const Shape &shape,
                     int64_t axis, float epsilon, const float *scale,
                     const float *bias, float *y, ThreadPool &pool) {
  int64_t rows = 1, d = 1;
  for (int64_t i = 0; i < axis; ++i)
    rows *= shape[i];
  for (size_t i = axis; i < shape.size(); ++i)
    d *= shape[i];
  if (rows * d == 0)
    return;
  const float invD = 1.0f / static_cast<float>(d);
  pool.parallelFor(rows, std::max<int64_t>(1, 8192 / d), [&](int64_t b,
                                                             int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      const float *px = x + r * d;
      float *py = y + r * d;
      if (rms) {
        float ss = 0.0f;
#pragma omp simd reduction(+ : ss)
        for (int64_t i = 0; i < d; ++i)
          ss += px[i] * px[i];
        const float inv = 1.0f / std::sqrt(ss * invD + epsilon);
        for (int64_t i = 0; i < d; ++i)
          py[i] = px[i] * inv * scale[i];
        continue;
      }
      const float mean = rowSum(px, d) * invD;
      float var = 0.0f;
#pragma omp simd reduction(+ : var)
      for (int64_t i = 0; i < d; ++i) {
        float c = px[i] - mean;
        var += c * c;
      }
      const float inv = 1.0f / std::sqrt(var * invD + epsilon);
      if (bias) {
        for (int64_t i = 0; i < d; ++i)
          py[i] = (px[i] - mean) * inv * scale[i] + bias[i];
      } else {
        for (int64_t i = 0; i < d; ++i)
          py[i] = (px[i] - mean) * inv * scale[i];
      }
    }
  });
}

void batchNormKernel(const float *x, const Shape &shape, const float *scale,
                     const float *bias, const float *mean, const float *var,
                     float epsilon, float *y, ThreadPool &pool) {
  const ChannelGeometry k(shape);
  const int64_t n = k.batch, c = k.channels, spatial = k.spatial;
  if (n * c * spatial == 0)
    return;
  pool.parallelFor(n * c, std::max<int64_t>(1, 16384 / std::max<int64_t>(spatial, 1)),
                   [&](int64_t b, int64_t e) {
                     for (int64_t nc = b; nc < e; ++nc) {
                       const int64_t ch = nc % c;
                       const float a = scale[ch] / std::sqrt(var[ch] + epsilon);
                       const float sh = bias[ch] - mean[ch] * a;
                       const float *px = x + nc * spatial;
                       float *py = y + nc * spatial;
                       for (int64_t i = 0; i < spatial; ++i)
                         py[i] = px[i] * a + sh;
                     }
                   });
}

namespace {

Step softmaxStep(const KernelContext &c) {
  return kernelStep(c, [](const StepArgs &s) {
    softmaxKernel(s.o->kind == OpKind::LogSoftmax,
                  static_cast<const float *>(s.x0), s.a->shape, s.o->axis,
                  static_cast<float *>(s.y0), *s.tp);
  });
}

Step layerNormStep(const KernelContext &c) {
  const Op &op = c.op;
  const Op *o = &op;
  const BufferInfo *a = &c.in(0);
  void *x0 = c.operand(0), *y0 = c.result(0);
  ThreadPool *tp = &c.pool;
  // Scale and bias that broadcast are expanded to the normalized shape on
  // every run (their contents may change between runs).
  Shape norm(a->shape.begin() + op.axis, a->shape.end());
  int64_t d = numElements(norm);
  std::vector<std::vector<float>> &expanded = c.resources.expanded;
  std::vector<std::pair<const BufferInfo *, void *>> params;
  std::vector<size_t> slots;
  for (size_t i = 1; i < op.operands.size(); ++i) {
    params.emplace_back(&c.in(i), c.operand(i));
    if (c.in(i).numel != d) {
      expanded.emplace_back(d);
      slots.push_back(expanded.size() - 1);
    } else {
      slots.push_back(SIZE_MAX);
    }
  }
  auto *ex = &expanded;
  return [=] {
    const float *sp[2] = {nullptr, nullptr};
    for (size_t i = 0; i < params.size(); ++i) {
      if (slots[i] == SIZE_MAX) {
        sp[i] = static_cast<const float *>(params[i].second);
        continue;
      }
      float *dst = (*ex)[slots[i]].data();
      expandKernel(4, params[i].second, params[i].first->shape, dst, norm, *tp);
      sp[i] = dst;
    }
    layerNormKernel(o->kind == OpKind::RmsNorm, static_cast<const float *>(x0),
                    a->shape, o->axis, o->epsilon, sp[0], sp[1],
                    static_cast<float *>(y0), *tp);
    return Status::ok();
  };
}

Step batchNormStep(const KernelContext &c) {
  const Op *o = &c.op;
  const BufferInfo *a = &c.in(0);
  void *x0 = c.operand(0), *y0 = c.result(0);
  ThreadPool *tp = &c.pool;
  const float *sc = static_cast<const float *>(c.operand(1));
  const float *bi = static_cast<const float *>(c.operand(2));
  const float *me = static_cast<const float *>(c.operand(3));
  const float *va = static_cast<const float *>(c.operand(4));
  return [=] {
    batchNormKernel(static_cast<const float *>(x0), a->shape, sc, bi, me, va,
                    o->epsilon, static_cast<float *>(y0), *tp);
    return Status::ok();
  };
}

} // namespace

void registerNormalizationKernels(KernelRegistry &r) {
  addKernels(r, {{OpKind::Softmax, softmaxStep},
                 {OpKind::LogSoftmax, softmaxStep},
                 {OpKind::LayerNorm, layerNormStep},
                 {OpKind::RmsNorm, layerNormStep},
                 {OpKind::BatchNorm, batchNormStep}});
}

} // namespace tessel::runtime::cpu
