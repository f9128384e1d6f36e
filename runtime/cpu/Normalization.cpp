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

// Each kernel is a template over float and double (f64 models:
// docs/precision.md); CpuMath::exp is the vector approximation for float
// and libm's for double.

template <typename T> T rowMax(const T *x, int64_t n) {
  T m = -std::numeric_limits<T>::infinity();
#pragma omp simd reduction(max : m)
  for (int64_t i = 0; i < n; ++i)
    m = x[i] > m ? x[i] : m;
  return m;
}

template <typename T> T rowSum(const T *x, int64_t n) {
  T s = 0;
#pragma omp simd reduction(+ : s)
  for (int64_t i = 0; i < n; ++i)
    s += x[i];
  return s;
}

/// Softmax of one contiguous row (y may equal x).
template <typename T>
void softmaxRow(bool logSoftmax, const T *x, T *y, int64_t n) {
  const T m = rowMax(x, n);
  T s = 0;
  if (logSoftmax) {
#pragma omp simd reduction(+ : s)
    for (int64_t i = 0; i < n; ++i)
      s += CpuMath::exp(x[i] - m);
    const T shift = m + std::log(s);
    for (int64_t i = 0; i < n; ++i)
      y[i] = x[i] - shift;
    return;
  }
#pragma omp simd reduction(+ : s)
  for (int64_t i = 0; i < n; ++i) {
    T e = CpuMath::exp(x[i] - m);
    y[i] = e;
    s += e;
  }
  const T inv = T(1) / s;
  for (int64_t i = 0; i < n; ++i)
    y[i] *= inv;
}

/// Softmax along the middle dim of a [len, inner] block, inner > 1.
template <typename T>
void softmaxStrided(bool logSoftmax, const T *x, T *y, int64_t len,
                    int64_t inner, std::vector<T> &tmp) {
  tmp.assign(2 * inner, T(0));
  T *m = tmp.data(), *s = tmp.data() + inner;
  std::fill(m, m + inner, -std::numeric_limits<T>::infinity());
  for (int64_t l = 0; l < len; ++l)
    for (int64_t i = 0; i < inner; ++i)
      m[i] = std::max(m[i], x[l * inner + i]);
  for (int64_t l = 0; l < len; ++l)
    for (int64_t i = 0; i < inner; ++i) {
      T e = CpuMath::exp(x[l * inner + i] - m[i]);
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
    s[i] = T(1) / s[i];
  for (int64_t l = 0; l < len; ++l)
    for (int64_t i = 0; i < inner; ++i)
      y[l * inner + i] *= s[i];
}

template <typename T>
void softmaxTyped(bool logSoftmax, const T *x, const Shape &shape, int64_t axis,
                  T *y, ThreadPool &pool) {
  const AxisView v = aroundAxis(shape, axis);
  const int64_t outer = v.outer, len = v.len, inner = v.inner;
  if (outer * len * inner == 0)
    return;
  const int64_t block = len * inner;
  pool.parallelFor(outer, std::max<int64_t>(1, 8192 / block),
                   [&](int64_t b, int64_t e) {
                     std::vector<T> tmp;
                     for (int64_t o = b; o < e; ++o) {
                       if (inner == 1)
                         softmaxRow(logSoftmax, x + o * block, y + o * block, len);
                       else
                         softmaxStrided(logSoftmax, x + o * block,
                                        y + o * block, len, inner, tmp);
                     }
                   });
}

template <typename T>
void layerNormTyped(bool rms, const T *x, const Shape &shape, int64_t axis,
                    T epsilon, const T *scale, const T *bias, T *y,
                    ThreadPool &pool) {
  int64_t rows = 1, d = 1;
  for (int64_t i = 0; i < axis; ++i)
    rows *= shape[i];
  for (size_t i = axis; i < shape.size(); ++i)
    d *= shape[i];
  if (rows * d == 0)
    return;
  const T invD = T(1) / static_cast<T>(d);
  pool.parallelFor(rows, std::max<int64_t>(1, 8192 / d), [&](int64_t b,
                                                             int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      const T *px = x + r * d;
      T *py = y + r * d;
      if (rms) {
        T ss = 0;
#pragma omp simd reduction(+ : ss)
        for (int64_t i = 0; i < d; ++i)
          ss += px[i] * px[i];
        const T inv = T(1) / std::sqrt(ss * invD + epsilon);
        for (int64_t i = 0; i < d; ++i)
          py[i] = px[i] * inv * scale[i];
        continue;
      }
      const T mean = rowSum(px, d) * invD;
      T var = 0;
#pragma omp simd reduction(+ : var)
      for (int64_t i = 0; i < d; ++i) {
        T c = px[i] - mean;
        var += c * c;
      }
      const T inv = T(1) / std::sqrt(var * invD + epsilon);
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

template <typename T>
void batchNormTyped(const T *x, const Shape &shape, const T *scale,
                    const T *bias, const T *mean, const T *var, T epsilon, T *y,
                    ThreadPool &pool) {
  const ChannelGeometry k(shape);
  const int64_t n = k.batch, c = k.channels, spatial = k.spatial;
  if (n * c * spatial == 0)
    return;
  pool.parallelFor(n * c, std::max<int64_t>(1, 16384 / std::max<int64_t>(spatial, 1)),
                   [&](int64_t b, int64_t e) {
                     for (int64_t nc = b; nc < e; ++nc) {
                       const int64_t ch = nc % c;
                       const T a = scale[ch] / std::sqrt(var[ch] + epsilon);
                       const T sh = bias[ch] - mean[ch] * a;
                       const T *px = x + nc * spatial;
                       T *py = y + nc * spatial;
                       for (int64_t i = 0; i < spatial; ++i)
                         py[i] = px[i] * a + sh;
                     }
                   });
}

} // namespace

void softmaxKernel(bool logSoftmax, const float *x, const Shape &shape,
                   int64_t axis, float *y, ThreadPool &pool) {
  softmaxTyped(logSoftmax, x, shape, axis, y, pool);
}

void layerNormKernel(bool rms, const float *x, const Shape &shape, int64_t axis,
                     float epsilon, const float *scale, const float *bias,
                     float *y, ThreadPool &pool) {
  layerNormTyped(rms, x, shape, axis, epsilon, scale, bias, y, pool);
}

void batchNormKernel(const float *x, const Shape &shape, const float *scale,
                     const float *bias, const float *mean, const float *var,
                     float epsilon, float *y, ThreadPool &pool) {
  batchNormTyped(x, shape, scale, bias, mean, var, epsilon, y, pool);
}

namespace {

template <typename T> Step softmaxStepOf(const KernelContext &c) {
  return kernelStep(c, [](const StepArgs &s) {
    softmaxTyped(s.o->kind == OpKind::LogSoftmax, static_cast<const T *>(s.x0),
                 s.a->shape, s.o->axis, static_cast<T *>(s.y0), *s.tp);
  });
}

Step softmaxStep(const KernelContext &c) {
  return c.in(0).dtype == DType::F64 ? softmaxStepOf<double>(c)
                                     : softmaxStepOf<float>(c);
}

template <typename T> Step layerNormStepOf(const KernelContext &c) {
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
      // d elements of T in a vector of floats (new's alignment is double's).
      expanded.emplace_back(d * (sizeof(T) / sizeof(float)));
      slots.push_back(expanded.size() - 1);
    } else {
      slots.push_back(SIZE_MAX);
    }
  }
  auto *ex = &expanded;
  return [=] {
    const T *sp[2] = {nullptr, nullptr};
    for (size_t i = 0; i < params.size(); ++i) {
      if (slots[i] == SIZE_MAX) {
        sp[i] = static_cast<const T *>(params[i].second);
        continue;
      }
      T *dst = reinterpret_cast<T *>((*ex)[slots[i]].data());
      expandKernel(sizeof(T), params[i].second, params[i].first->shape, dst,
                   norm, *tp);
      sp[i] = dst;
    }
    layerNormTyped(o->kind == OpKind::RmsNorm, static_cast<const T *>(x0),
                   a->shape, o->axis, static_cast<T>(o->epsilon), sp[0], sp[1],
                   static_cast<T *>(y0), *tp);
    return Status::ok();
  };
}

Step layerNormStep(const KernelContext &c) {
  return c.in(0).dtype == DType::F64 ? layerNormStepOf<double>(c)
                                     : layerNormStepOf<float>(c);
}

template <typename T> Step batchNormStepOf(const KernelContext &c) {
  const Op *o = &c.op;
  const BufferInfo *a = &c.in(0);
  void *x0 = c.operand(0), *y0 = c.result(0);
  ThreadPool *tp = &c.pool;
  const T *sc = static_cast<const T *>(c.operand(1));
  const T *bi = static_cast<const T *>(c.operand(2));
  const T *me = static_cast<const T *>(c.operand(3));
  const T *va = static_cast<const T *>(c.operand(4));
  return [=] {
    batchNormTyped(static_cast<const T *>(x0), a->shape, sc, bi, me, va,
                   static_cast<T>(o->epsilon), static_cast<T *>(y0), *tp);
    return Status::ok();
  };
}

Step batchNormStep(const KernelContext &c) {
  return c.in(0).dtype == DType::F64 ? batchNormStepOf<double>(c)
                                     : batchNormStepOf<float>(c);
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
