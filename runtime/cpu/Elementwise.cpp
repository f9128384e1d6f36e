//===- Elementwise.cpp - Unary elementwise kernels and cast ---------------===//
#include "Kernels.h"
#include "ThreadPool.h"
#include "VecMath.h"

#include <cmath>

namespace tessel::runtime::cpu {

namespace {

constexpr int64_t kGrain = 16384;

template <typename T, typename U, typename F>
void mapLoop(const T *__restrict x, U *__restrict y, int64_t n, F f) {
  for (int64_t i = 0; i < n; ++i)
    y[i] = f(x[i]);
}

/// Applies f elementwise; x and y may be the same buffer (in place), so the
/// __restrict loop is only used when they differ.
template <typename T, typename U, typename F>
void map(const T *x, U *y, int64_t n, ThreadPool &pool, F f) {
  pool.parallelFor(n, kGrain, [&](int64_t b, int64_t e) {
    if (static_cast<const void *>(x) != static_cast<const void *>(y))
      mapLoop(x + b, y + b, e - b, f);
    else
      for (int64_t i = b; i < e; ++i)
        y[i] = f(x[i]);
  });
}

template <typename T>
void unaryInt(OpKind kind, const T *x, T *y, int64_t n, ThreadPool &pool) {
  switch (kind) {
  case OpKind::Neg:
    return map(x, y, n, pool, [](T v) { return static_cast<T>(-v); });
  case OpKind::Abs:
    return map(x, y, n, pool, [](T v) { return v < 0 ? static_cast<T>(-v) : v; });
  case OpKind::Relu:
    return map(x, y, n, pool, [](T v) { return v < 0 ? T(0) : v; });
  default:
    return;
  }
}

template <typename From, typename To>
void castTyped(const From *x, To *y, int64_t n, ThreadPool &pool) {
  map(x, y, n, pool, [](From v) { return static_cast<To>(v); });
}

template <typename From>
void castFrom(const From *x, DType to, void *y, int64_t n, ThreadPool &pool) {
  switch (to) {
  case DType::F32:
    return castTyped(x, static_cast<float *>(y), n, pool);
  case DType::I64:
    return castTyped(x, static_cast<int64_t *>(y), n, pool);
  case DType::I32:
    return castTyped(x, static_cast<int32_t *>(y), n, pool);
  case DType::Bool:
    return map(x, static_cast<uint8_t *>(y), n, pool,
               [](From v) { return static_cast<uint8_t>(v != From(0)); });
  }
}

} // namespace

void unaryKernel(OpKind kind, bool tanhApproximation, DType dtype,
                 const void *xv, void *yv, int64_t n, ThreadPool &pool) {
  if (dtype == DType::I64)
    return unaryInt(kind, static_cast<const int64_t *>(xv),
                    static_cast<int64_t *>(yv), n, pool);
  if (dtype == DType::I32)
    return unaryInt(kind, static_cast<const int32_t *>(xv),
                    static_cast<int32_t *>(yv), n, pool);
  if (dtype == DType::Bool) { // not
    return map(static_cast<const uint8_t *>(xv), static_cast<uint8_t *>(yv), n,
               pool, [](uint8_t v) { return static_cast<uint8_t>(v == 0); });
  }
  const float *x = static_cast<const float *>(xv);
  float *y = static_cast<float *>(yv);
  switch (kind) {
  case OpKind::Neg:
    return map(x, y, n, pool, [](float v) { return -v; });
  case OpKind::Exp:
    return map(x, y, n, pool, [](float v) { return vexp(v); });
  case OpKind::Log:
    return map(x, y, n, pool, [](float v) { return vlog(v); });
  case OpKind::Sqrt:
    return map(x, y, n, pool, [](float v) { return std::sqrt(v); });
  case OpKind::Rsqrt:
    return map(x, y, n, pool, [](float v) { return 1.0f / std::sqrt(v); });
  case OpKind::Tanh:
    return map(x, y, n, pool, [](float v) { return vtanh(v); });
  case OpKind::Erf:
    return map(x, y, n, pool, [](float v) { return verf(v); });
  case OpKind::Sigmoid:
    return map(x, y, n, pool, [](float v) { return vsigmoid(v); });
  case OpKind::Relu:
    return map(x, y, n, pool, [](float v) { return v < 0.0f ? 0.0f : v; });
  case OpKind::Gelu:
    if (tanhApproximation)
      return map(x, y, n, pool, [](float v) { return vgeluTanh(v); });
    return map(x, y, n, pool, [](float v) { return vgeluErf(v); });
  case OpKind::Reciprocal:
    return map(x, y, n, pool, [](float v) { return 1.0f / v; });
  case OpKind::Abs:
    return map(x, y, n, pool, [](float v) { return std::fabs(v); });
  default:
    return;
  }
}

void castKernel(DType from, const void *x, DType to, void *y, int64_t n,
                ThreadPool &pool) {
  if (from == to) {
    if (x != y)
      std::memcpy(y, x, n * dtypeSize(from));
    return;
  }
  switch (from) {
  case DType::F32:
    return castFrom(static_cast<const float *>(x), to, y, n, pool);
  case DType::I64:
    return castFrom(static_cast<const int64_t *>(x), to, y, n, pool);
  case DType::I32:
    return castFrom(static_cast<const int32_t *>(x), to, y, n, pool);
  case DType::Bool:
    return castFrom(static_cast<const uint8_t *>(x), to, y, n, pool);
  }
}

} // namespace tessel::runtime::cpu
