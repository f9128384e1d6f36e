//===- Elementwise.cpp - Unary elementwise kernels and cast ---------------===//
//
// The unary ops with a scalar function (tessel/runtime/ScalarOps.h, listed
// by the op table in TESSEL_RUNTIME_UNARY_SCALAR_OPS) are registered from
// that list: a new one needs nothing here. Cast and round_float, which are
// not one function of a float, have their own kernels.
//
//===----------------------------------------------------------------------===//
#include "tessel/ops/DTypeDispatch.h"
#include "HalfConvert.h"
#include "KernelRegistry.h"
#include "KernelResources.h"
#include "Kernels.h"
#include "ThreadPool.h"
#include "VecMath.h"
#include "tessel/runtime/HalfFloat.h"
#include "tessel/runtime/ScalarOps.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

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

template <typename From, typename To>
void castTyped(const From *x, To *y, int64_t n, ThreadPool &pool) {
  map(x, y, n, pool, [](From v) { return static_cast<To>(v); });
}

template <typename From>
void castFrom(const From *x, DType to, void *y, int64_t n, ThreadPool &pool) {
  visitDType(to, [&](auto tag) {
    using To = typename decltype(tag)::type;
    if constexpr (kIsBool<To>)
      map(x, static_cast<uint8_t *>(y), n, pool,
          [](From v) { return static_cast<uint8_t>(v != From(0)); });
    else
      castTyped(x, static_cast<To *>(y), n, pool);
  });
}

/// A cast from or to bf16 or f16: through f32, in which the half is exact;
/// to a half rounds once, to nearest even (an i64 goes to f32 first, as
/// PyTorch's casts do).
void castHalf(DType from, const void *x, DType to, void *y, int64_t n,
              ThreadPool &pool) {
  if (isHalf(from) && isHalf(to)) {
    map(static_cast<const uint16_t *>(x), static_cast<uint16_t *>(y), n, pool,
        [=](uint16_t h) { return f32ToHalf(to, halfToF32(from, h)); });
    return;
  }
  // f32 <-> a half: HalfConvert.h's vector loops.
  if (isHalf(from) && to == DType::F32) {
    const uint16_t *in = static_cast<const uint16_t *>(x);
    float *out = static_cast<float *>(y);
    pool.parallelFor(n, kGrain, [=](int64_t b, int64_t e) {
      widenHalfArray(from, in + b, out + b, e - b);
    });
    return;
  }
  if (from == DType::F32 && isHalf(to)) {
    const float *in = static_cast<const float *>(x);
    uint16_t *out = static_cast<uint16_t *>(y);
    pool.parallelFor(n, kGrain, [=](int64_t b, int64_t e) {
      narrowHalfArray(to, in + b, out + b, e - b);
    });
    return;
  }
  if (isHalf(from)) {
    const uint16_t *in = static_cast<const uint16_t *>(x);
    visitDType(to, [&](auto tag) {
      using To = typename decltype(tag)::type;
      if constexpr (kIsBool<To>)
        map(in, static_cast<uint8_t *>(y), n, pool, [=](uint16_t h) {
          return static_cast<uint8_t>(halfToF32(from, h) != 0.0f);
        });
      else
        map(in, static_cast<To *>(y), n, pool, [=](uint16_t h) {
          return static_cast<To>(halfToF32(from, h));
        });
    });
    return;
  }
  if (from == DType::F64) {
    // Through f32 rounded to odd, so that the half is f64's own nearest.
    map(static_cast<const double *>(x), static_cast<uint16_t *>(y), n, pool,
        [=](double v) { return f32ToHalf(to, f64ToF32RoundToOdd(v)); });
    return;
  }
  visitDType(from, [&](auto tag) {
    using From = typename decltype(tag)::type;
    map(static_cast<const From *>(x), static_cast<uint16_t *>(y), n, pool,
        [=](From v) { return f32ToHalf(to, static_cast<float>(v)); });
  });
}

/// The step y = f(x) over the instruction's operand and result as T. `f` is
/// chosen, and the attributes it captures read, when the step is built: the
/// loop is the kind's own, with no dispatch inside.
template <typename T, typename F> Step mapStep(const KernelContext &c, F f) {
  const T *x = static_cast<const T *>(c.operand(0));
  T *y = static_cast<T *>(c.result(0));
  const int64_t n = c.in(0).numel;
  ThreadPool *pool = &c.pool;
  return [=] {
    map(x, y, n, *pool, f);
    return Status::ok();
  };
}

using scalar::roundBf16Bits;

/// round_float to bf16. Where its result is a parameter's rounded value
/// that bf16 GEMMs read (KernelResources::bf16RoundCopies), the bf16 copy
/// they read is written in the same pass, and when nothing else reads the
/// f32 result (bf16RoundCopyOnly) only the copy.
Step roundBf16Step(const KernelContext &c) {
  const float *x = static_cast<const float *>(c.operand(0));
  float *y = static_cast<float *>(c.result(0));
  const int64_t n = c.in(0).numel;
  ThreadPool *pool = &c.pool;
  const KernelResources &res = c.resources;
  uint16_t *copy = c.index < res.bf16RoundCopies.size()
                       ? res.bf16RoundCopies[c.index]
                       : nullptr;
  if (!copy)
    return mapStep<float>(c, [](float v) {
      uint32_t u;
      uint16_t unused;
      std::memcpy(&u, &v, sizeof u);
      u = roundBf16Bits(u, &unused);
      std::memcpy(&v, &u, sizeof u);
      return v;
    });
  const bool copyOnly = res.bf16RoundCopyOnly[c.index];
  return [=] {
    pool->parallelFor(n, kGrain, [=](int64_t b, int64_t e) {
      const uint32_t *__restrict in = reinterpret_cast<const uint32_t *>(x);
      uint32_t *__restrict out = reinterpret_cast<uint32_t *>(y);
      uint16_t *__restrict half = copy;
      if (copyOnly)
        for (int64_t i = b; i < e; ++i)
          roundBf16Bits(in[i], half + i);
      else
        for (int64_t i = b; i < e; ++i)
          out[i] = roundBf16Bits(in[i], half + i);
    });
    return Status::ok();
  };
}

template <typename F> Step floatStep(const KernelContext &c, F f) {
  return mapStep<float>(c, f);
}

/// An op on f32 and f64: `f` is generic.
template <typename F> Step floatOrDoubleStep(const KernelContext &c, F f) {
  if (c.in(0).dtype == DType::F64)
    return mapStep<double>(c, f);
  return floatStep(c, f);
}

/// An op on f32, f64, i64 and i32: `f` is generic (`auto v`).
template <typename F> Step numericStep(const KernelContext &c, F f) {
  switch (c.in(0).dtype) {
  case DType::I64:
    return mapStep<int64_t>(c, f);
  case DType::I32:
    return mapStep<int32_t>(c, f);
  default:
    return floatOrDoubleStep(c, f);
  }
}

/// y = f(x), with `f` a functor of ScalarOps.h over its dtypes `Types`.
template <typename Types, typename F>
Step scalarStep(const KernelContext &c, F f) {
  // gelu's form is an attribute: one loop per form, with the form a
  // constant in it (a loop-invariant branch inside stops vectorisation).
  if constexpr (std::is_same_v<F, scalar::Gelu<CpuMath>>) {
    if (c.in(0).dtype == DType::F64)
      return mapStep<double>(c, f);
    if (f.tanhApproximation) // as a sigmoid (VecMath.h)
      return floatStep(c, [](float v) { return vgeluTanh(v); });
    return floatStep(c, [](float v) { return F{false}(v); });
  } else if constexpr (std::is_same_v<Types, scalar::Bool>)
    return mapStep<uint8_t>(c, f);
  else if constexpr (std::is_same_v<Types, scalar::Numeric>)
    return numericStep(c, f);
  else
    return floatOrDoubleStep(c, f);
}

Step castStep(const KernelContext &c) {
  const DType from = c.in(0).dtype, to = c.op.to;
  const void *x = c.operand(0);
  void *y = c.result(0);
  const int64_t n = c.in(0).numel;
  ThreadPool *pool = &c.pool;
  return [=] {
    castKernel(from, x, to, y, n, *pool);
    return Status::ok();
  };
}

} // namespace

void castKernel(DType from, const void *x, DType to, void *y, int64_t n,
                ThreadPool &pool) {
  if (from == to) {
    if (x != y)
      std::memcpy(y, x, n * dtypeSize(from));
    return;
  }
  if (isHalf(from) || isHalf(to))
    return castHalf(from, x, to, y, n, pool);
  visitDType(from, [&](auto tag) {
    using From = typename decltype(tag)::type;
    castFrom(static_cast<const From *>(x), to, y, n, pool);
  });
}

// The unary ops (README.md, "Instruction set"): each scalar function's
// functor gets its attributes from the instruction (`op`) once, when the
// step is built, outside the loop the step runs.
void registerElementwiseKernels(KernelRegistry &r) {
#define TESSEL_UNARY_SCALAR(Kind, Types, SetMembers)                           \
  r.add(OpKind::Kind, [](const KernelContext &c) {                             \
    const Op &op = c.op;                                                       \
    (void)op;                                                                  \
    scalar::Kind<CpuMath> f;                                                   \
    SetMembers return scalarStep<scalar::Types>(c, f);                         \
  });
  TESSEL_RUNTIME_UNARY_SCALAR_OPS(TESSEL_UNARY_SCALAR)
#undef TESSEL_UNARY_SCALAR
  r.add(OpKind::Cast, castStep);
  // The nearest value of a narrower float format (bf16, fp16), in f32.
  r.add(OpKind::RoundFloat, [](const KernelContext &c) {
    const int e = static_cast<int>(c.op.intAttr("exponent_bits", 8));
    const int m = static_cast<int>(c.op.intAttr("mantissa_bits", 7));
    if (e == 8 && m == 7)
      return roundBf16Step(c);
    return floatStep(c, [e, m](float v) {
      return scalar::roundToFormat<CpuMath>(v, e, m);
    });
  });
}

} // namespace tessel::runtime::cpu
