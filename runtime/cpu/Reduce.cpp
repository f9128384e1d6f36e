//===- Reduce.cpp - reduce_sum, reduce_mean, reduce_max, cumsum -----------===//
#include "tessel/ops/Broadcast.h"
#include "tessel/ops/DTypeDispatch.h"
#include "KernelRegistry.h"
#include "Kernels.h"
#include "ThreadPool.h"

#include <algorithm>
#include <limits>
#include <type_traits>

namespace tessel::runtime::cpu {

namespace {

// A float sum accumulates in double: a bias's or a norm's gradient sums a
// column over every row of the batch (1024 rows of GPT-2's at batch 8 x seq
// 128), where f32 running sums drift by sqrt(rows) ulps (1e-6 of the
// gradient, ten times PyTorch's cascade sums; Adam's normalised steps carry
// it into the trajectory). Doubles hold every partial sum of f32 values to
// within 2^-29 of it, so the result is the exact sum rounded once (up to
// 1e9 terms), whatever the order the threads and the SIMD lanes take.
template <typename T> struct SumOp {
  using Acc = std::conditional_t<std::is_same_v<T, float>, double, T>;
  static Acc init() { return Acc(0); }
  static Acc combine(Acc a, T b) { return a + static_cast<Acc>(b); }
  static Acc merge(Acc a, Acc b) { return a + b; }
  static Acc row(const T *x, int64_t n) {
    Acc s = Acc(0);
#pragma omp simd reduction(+ : s)
    for (int64_t i = 0; i < n; ++i)
      s += static_cast<Acc>(x[i]);
    return s;
  }
};

template <typename T> struct MaxOp {
  using Acc = T;
  // -inf for floats: the max of a row of -inf is -inf, not -FLT_MAX.
  static T init() {
    if constexpr (std::numeric_limits<T>::has_infinity)
      return -std::numeric_limits<T>::infinity();
    else
      return std::numeric_limits<T>::lowest();
  }
  static T combine(T a, T b) { return b > a ? b : a; }
  static T merge(T a, T b) { return combine(a, b); }
  static T row(const T *x, int64_t n) {
    T m = init();
#pragma omp simd reduction(max : m)
    for (int64_t i = 0; i < n; ++i)
      m = x[i] > m ? x[i] : m;
    return m;
  }
};

/// Reduces x (shape `dims`, row-major) into `acc` (Op's accumulator type);
/// `reduced[d]` marks reduced dims. Serial; acc must hold Op::init().
template <typename T, typename Op>
void reduceInto(const T *x, const Shape &dims, const std::vector<bool> &reduced,
                typename Op::Acc *acc) {
  // Output strides per input dim (0 on reduced dims).
  std::vector<int64_t> outStr(dims.size(), 0);
  int64_t s = 1;
  for (size_t d = dims.size(); d-- > 0;) {
    if (!reduced[d]) {
      outStr[d] = s;
      s *= dims[d];
    }
  }
  StridedPlan plan = makeStridedPlan(dims, {outStr});
  const int64_t so = plan.strides.back()[0];
  forEachRow(plan, 0, plan.total, [&](const int64_t *off, int64_t n) {
    const T *px = x + off[1];
    typename Op::Acc *po = acc + off[0];
    if (so == 0) {
      *po = Op::merge(*po, Op::row(px, n));
    } else {
#pragma omp simd
      for (int64_t i = 0; i < n; ++i)
        po[i] = Op::combine(po[i], px[i]);
    }
  });
}

/// reduceInto `out` (holding Op::init()), through an accumulator of Op's
/// type where that is wider than T.
template <typename T, typename Op>
void reduceSerial(const T *x, const Shape &dims, const std::vector<bool> &reduced,
                  T *out) {
  using Acc = typename Op::Acc;
  if constexpr (std::is_same_v<Acc, T>) {
    reduceInto<T, Op>(x, dims, reduced, out);
  } else {
    int64_t count = 1;
    for (size_t d = 0; d < dims.size(); ++d)
      if (!reduced[d])
        count *= dims[d];
    std::vector<Acc> acc(static_cast<size_t>(count), Op::init());
    reduceInto<T, Op>(x, dims, reduced, acc.data());
    for (int64_t i = 0; i < count; ++i)
      out[i] = static_cast<T>(acc[i]);
  }
}

template <typename T, typename Op>
void reduceTyped(const T *x, const Shape &shape, const std::vector<int64_t> &dims,
                 T *out, int64_t outCount, ThreadPool &pool) {
  std::vector<bool> reduced(shape.size(), false);
  for (int64_t d : dims)
    reduced[d] = true;
  std::fill(out, out + outCount, Op::init());
  if (numElements(shape) == 0)
    return;
  // Parallelise over the outermost kept dim when there is one.
  size_t lead = 0;
  while (lead < shape.size() && shape[lead] == 1)
    ++lead;
  if (lead < shape.size() && !reduced[lead] && pool.size() > 1) {
    int64_t inner = 1, outInner = 1;
    for (size_t d = lead + 1; d < shape.size(); ++d) {
      inner *= shape[d];
      if (!reduced[d])
        outInner *= shape[d];
    }
    pool.parallelFor(shape[lead], std::max<int64_t>(1, 16384 / std::max<int64_t>(inner, 1)),
                     [&](int64_t b, int64_t e) {
                       Shape sub(shape.begin() + lead, shape.end());
                       sub[0] = e - b;
                       std::vector<bool> r(reduced.begin() + lead, reduced.end());
                       reduceSerial<T, Op>(x + b * inner, sub, r, out + b * outInner);
                     });
    return;
  }
  reduceSerial<T, Op>(x, shape, reduced, out);
}

template <typename T>
void reduceDispatch(OpKind kind, const T *x, const Shape &shape,
                    const std::vector<int64_t> &dims, T *out, ThreadPool &pool) {
  int64_t total = numElements(shape), reducedCount = 1;
  for (int64_t d : dims)
    reducedCount *= shape[d];
  int64_t outCount = reducedCount ? total / reducedCount : 0;
  if (reducedCount == 0) { // empty reduction
    outCount = 1;
    for (size_t d = 0; d < shape.size(); ++d)
      if (std::find(dims.begin(), dims.end(), int64_t(d)) == dims.end())
        outCount *= shape[d];
  }
  if (kind == OpKind::ReduceMax) {
    reduceTyped<T, MaxOp<T>>(x, shape, dims, out, outCount, pool);
    return;
  }
  reduceTyped<T, SumOp<T>>(x, shape, dims, out, outCount, pool);
  if constexpr (std::is_floating_point_v<T>) {
    if (kind == OpKind::ReduceMean) {
      T scale = reducedCount ? T(1) / static_cast<T>(reducedCount)
                             : std::numeric_limits<T>::quiet_NaN();
      for (int64_t i = 0; i < outCount; ++i)
        out[i] *= scale;
    }
  }
}

} // namespace

void reduceKernel(OpKind kind, DType dtype, const void *x, const Shape &shape,
                  const std::vector<int64_t> &dims, void *out,
                  ThreadPool &pool) {
  visitDType(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!kIsBool<T>)
      reduceDispatch(kind, static_cast<const T *>(x), shape, dims,
                     static_cast<T *>(out), pool);
  });
}

namespace {

/// Integers add wrapping (two's complement), as the binary kernels do.
template <typename T> T scanAdd(T a, T b) {
  if constexpr (std::is_integral_v<T>)
    return static_cast<T>(std::make_unsigned_t<T>(a) +
                          std::make_unsigned_t<T>(b));
  else
    return a + b;
}

/// One sequential scan per line (outer, inner), from the scan's first
/// element: the CUDA kernel's order, so both agree bit for bit.
template <typename T>
void cumsumTyped(const T *x, const AxisView v, bool exclusive, bool reverse,
                 T *y, ThreadPool &pool) {
  const int64_t len = v.len, inner = v.inner;
  pool.parallelFor(v.outer * inner, std::max<int64_t>(1, 16384 / std::max<int64_t>(len, 1)),
                   [&](int64_t b, int64_t e) {
    for (int64_t line = b; line < e; ++line) {
      const int64_t base = (line / inner) * len * inner + line % inner;
      T acc = T(0);
      for (int64_t t = 0; t < len; ++t) {
        const int64_t at = base + (reverse ? len - 1 - t : t) * inner;
        const T v = x[at];
        if (exclusive) {
          y[at] = acc;
          acc = scanAdd(acc, v);
        } else {
          acc = scanAdd(acc, v);
          y[at] = acc;
        }
      }
    }
  });
}

} // namespace

void cumsumKernel(DType dtype, const void *x, const Shape &shape, int64_t axis,
                  bool exclusive, bool reverse, void *y, ThreadPool &pool) {
  const AxisView v = aroundAxis(shape, axis);
  visitDType(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!kIsBool<T>)
      cumsumTyped(static_cast<const T *>(x), v, exclusive, reverse,
                  static_cast<T *>(y), pool);
  });
}

namespace {

Step cumsumStep(const KernelContext &c) {
  const bool exclusive = c.op.intAttr("exclusive", 0) != 0,
             reverse = c.op.intAttr("reverse", 0) != 0;
  return kernelStep(c, [exclusive, reverse](const StepArgs &s) {
    cumsumKernel(s.a->dtype, s.x0, s.a->shape, s.o->axis, exclusive, reverse,
                 s.y0, *s.tp);
  });
}

Step reduceStep(const KernelContext &c) {
  return kernelStep(c, [](const StepArgs &s) {
    reduceKernel(s.o->kind, s.a->dtype, s.x0, s.a->shape, s.o->dims, s.y0,
                 *s.tp);
  });
}

} // namespace

void registerReduceKernels(KernelRegistry &r) {
  for (OpKind k : {OpKind::ReduceSum, OpKind::ReduceMean, OpKind::ReduceMax})
    r.add(k, reduceStep);
  r.add(OpKind::CumSum, cumsumStep);
}

} // namespace tessel::runtime::cpu
