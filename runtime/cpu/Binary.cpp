//===- Binary.cpp - Broadcasting binary kernels, compare and where --------===//
#include "Broadcast.h"
#include "DTypeDispatch.h"
#include "KernelRegistry.h"
#include "Kernels.h"
#include "ThreadPool.h"

#include <cmath>
#include <type_traits>

namespace tessel::runtime::cpu {

namespace {

constexpr int64_t kGrain = 16384;

/// out = f(a, b) over a broadcast plan; out may alias a or b exactly.
template <typename T, typename R, typename F>
void binaryLoop(const T *a, const T *b, R *out, const StridedPlan &plan,
                ThreadPool &pool, F f) {
  const int64_t sa = plan.strides.back()[0], sb = plan.strides.back()[1];
  pool.parallelFor(plan.total, kGrain, [&](int64_t begin, int64_t end) {
    forEachRow(plan, begin, end, [&](const int64_t *off, int64_t n) {
      const T *pa = a + off[0];
      const T *pb = b + off[1];
      R *po = out + off[2];
      if (sa == 1 && sb == 1) {
        for (int64_t i = 0; i < n; ++i)
          po[i] = f(pa[i], pb[i]);
      } else if (sa == 1) {
        const T vb = *pb;
        for (int64_t i = 0; i < n; ++i)
          po[i] = f(pa[i], vb);
      } else if (sb == 1) {
        const T va = *pa;
        for (int64_t i = 0; i < n; ++i)
          po[i] = f(va, pb[i]);
      } else {
        const R v = f(*pa, *pb);
        for (int64_t i = 0; i < n; ++i)
          po[i] = v;
      }
    });
  });
}

template <typename T> struct Wrap {
  using U = std::make_unsigned_t<T>;
  static T add(T a, T b) { return static_cast<T>(U(a) + U(b)); }
  static T sub(T a, T b) { return static_cast<T>(U(a) - U(b)); }
  static T mul(T a, T b) { return static_cast<T>(U(a) * U(b)); }
  // Truncating division (C, ONNX); x / 0 gives 0 instead of a trap.
  static T div(T a, T b) {
    if (b == 0)
      return 0;
    if (b == -1)
      return static_cast<T>(U(0) - U(a));
    return a / b;
  }
  // C's remainder (ONNX Mod fmod=1), sign of a; x % 0 (and MIN % -1) = 0.
  static T fmod(T a, T b) { return b == 0 || b == -1 ? T(0) : T(a % b); }
  // Python's remainder (ONNX Mod fmod=0), sign of b; |r| < |b|, so r + b
  // cannot overflow.
  static T mod(T a, T b) {
    const T r = fmod(a, b);
    return r != 0 && ((r < 0) != (b < 0)) ? T(r + b) : r;
  }
};

template <typename T>
void binaryInt(OpKind kind, const T *a, const T *b, T *out,
               const StridedPlan &plan, ThreadPool &pool) {
  switch (kind) {
  case OpKind::Add:
    return binaryLoop(a, b, out, plan, pool, Wrap<T>::add);
  case OpKind::Sub:
    return binaryLoop(a, b, out, plan, pool, Wrap<T>::sub);
  case OpKind::Mul:
    return binaryLoop(a, b, out, plan, pool, Wrap<T>::mul);
  case OpKind::Div:
    return binaryLoop(a, b, out, plan, pool, Wrap<T>::div);
  case OpKind::Mod:
    return binaryLoop(a, b, out, plan, pool, Wrap<T>::mod);
  case OpKind::FMod:
    return binaryLoop(a, b, out, plan, pool, Wrap<T>::fmod);
  case OpKind::Max:
    return binaryLoop(a, b, out, plan, pool, [](T x, T y) { return x > y ? x : y; });
  case OpKind::Min:
    return binaryLoop(a, b, out, plan, pool, [](T x, T y) { return x < y ? x : y; });
  default:
    return;
  }
}

void powF32(const float *a, const float *b, const Shape &bShape, float *out,
            const StridedPlan &plan, ThreadPool &pool) {
  if (numElements(bShape) == 1) {
    float e = *b;
    if (e == 2.0f)
      return binaryLoop(a, b, out, plan, pool, [](float x, float) { return x * x; });
    if (e == 3.0f)
      return binaryLoop(a, b, out, plan, pool,
                        [](float x, float) { return x * x * x; });
    if (e == 1.0f)
      return binaryLoop(a, b, out, plan, pool, [](float x, float) { return x; });
    if (e == 0.5f)
      return binaryLoop(a, b, out, plan, pool,
                        [](float x, float) { return std::sqrt(x); });
    if (e == -1.0f)
      return binaryLoop(a, b, out, plan, pool,
                        [](float x, float) { return 1.0f / x; });
  }
  binaryLoop(a, b, out, plan, pool, [](float x, float y) { return std::pow(x, y); });
}

template <typename T>
void compareTyped(ComparePredicate p, const T *a, const T *b, uint8_t *out,
                  const StridedPlan &plan, ThreadPool &pool) {
  switch (p) {
  case ComparePredicate::Eq:
    return binaryLoop(a, b, out, plan, pool,
                      [](T x, T y) { return static_cast<uint8_t>(x == y); });
  case ComparePredicate::Ne:
    return binaryLoop(a, b, out, plan, pool,
                      [](T x, T y) { return static_cast<uint8_t>(x != y); });
  case ComparePredicate::Lt:
    return binaryLoop(a, b, out, plan, pool,
                      [](T x, T y) { return static_cast<uint8_t>(x < y); });
  case ComparePredicate::Le:
    return binaryLoop(a, b, out, plan, pool,
                      [](T x, T y) { return static_cast<uint8_t>(x <= y); });
  case ComparePredicate::Gt:
    return binaryLoop(a, b, out, plan, pool,
                      [](T x, T y) { return static_cast<uint8_t>(x > y); });
  case ComparePredicate::Ge:
    return binaryLoop(a, b, out, plan, pool,
                      [](T x, T y) { return static_cast<uint8_t>(x >= y); });
  }
}

template <typename T>
void whereTyped(const uint8_t *c, const T *x, const T *y, T *out,
                const StridedPlan &plan, ThreadPool &pool) {
  const auto &st = plan.strides.back();
  pool.parallelFor(plan.total, kGrain, [&](int64_t begin, int64_t end) {
    forEachRow(plan, begin, end, [&](const int64_t *off, int64_t n) {
      const uint8_t *pc = c + off[0];
      const T *px = x + off[1];
      const T *py = y + off[2];
      T *po = out + off[3];
      if (st[0] == 1 && st[1] == 1 && st[2] == 1) {
        for (int64_t i = 0; i < n; ++i)
          po[i] = pc[i] ? px[i] : py[i];
      } else if (st[0] == 1 && st[1] == 0 && st[2] == 1) {
        const T vx = *px;
        for (int64_t i = 0; i < n; ++i)
          po[i] = pc[i] ? vx : py[i];
      } else if (st[0] == 1 && st[1] == 1 && st[2] == 0) {
        const T vy = *py;
        for (int64_t i = 0; i < n; ++i)
          po[i] = pc[i] ? px[i] : vy;
      } else {
        for (int64_t i = 0; i < n; ++i)
          po[i] = pc[i * st[0]] ? px[i * st[1]] : py[i * st[2]];
      }
    });
  });
}

} // namespace

void binaryKernel(OpKind kind, DType dtype, const void *a, const Shape &aShape,
                  const void *b, const Shape &bShape, void *out,
                  const Shape &outShape, ThreadPool &pool) {
  StridedPlan plan = makeBroadcastPlan(outShape, {&aShape, &bShape});
  if (dtype == DType::I64)
    return binaryInt(kind, static_cast<const int64_t *>(a),
                     static_cast<const int64_t *>(b), static_cast<int64_t *>(out),
                     plan, pool);
  if (dtype == DType::I32)
    return binaryInt(kind, static_cast<const int32_t *>(a),
                     static_cast<const int32_t *>(b), static_cast<int32_t *>(out),
                     plan, pool);
  const float *fa = static_cast<const float *>(a);
  const float *fb = static_cast<const float *>(b);
  float *fo = static_cast<float *>(out);
  switch (kind) {
  case OpKind::Add:
    return binaryLoop(fa, fb, fo, plan, pool, [](float x, float y) { return x + y; });
  case OpKind::Sub:
    return binaryLoop(fa, fb, fo, plan, pool, [](float x, float y) { return x - y; });
  case OpKind::Mul:
    return binaryLoop(fa, fb, fo, plan, pool, [](float x, float y) { return x * y; });
  case OpKind::Div:
    return binaryLoop(fa, fb, fo, plan, pool, [](float x, float y) { return x / y; });
  case OpKind::Pow:
    return powF32(fa, fb, bShape, fo, plan, pool);
  case OpKind::FMod:
    return binaryLoop(fa, fb, fo, plan, pool,
                      [](float x, float y) { return std::fmod(x, y); });
  case OpKind::Max: // NaN propagates, as numpy.maximum
    return binaryLoop(fa, fb, fo, plan, pool,
                      [](float x, float y) { return (x > y || x != x) ? x : y; });
  case OpKind::Min:
    return binaryLoop(fa, fb, fo, plan, pool,
                      [](float x, float y) { return (x < y || x != x) ? x : y; });
  default:
    return;
  }
}

void compareKernel(ComparePredicate pred, DType dtype, const void *a,
                   const Shape &aShape, const void *b, const Shape &bShape,
                   uint8_t *out, const Shape &outShape, ThreadPool &pool) {
  StridedPlan plan = makeBroadcastPlan(outShape, {&aShape, &bShape});
  visitDType(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    compareTyped(pred, static_cast<const T *>(a), static_cast<const T *>(b),
                 out, plan, pool);
  });
}

void whereKernel(size_t elemSize, const uint8_t *cond, const Shape &cShape,
                 const void *x, const Shape &xShape, const void *y,
                 const Shape &yShape, void *out, const Shape &outShape,
                 ThreadPool &pool) {
  StridedPlan plan = makeBroadcastPlan(outShape, {&cShape, &xShape, &yShape});
  switch (elemSize) {
  case 1:
    return whereTyped(cond, static_cast<const uint8_t *>(x),
                      static_cast<const uint8_t *>(y), static_cast<uint8_t *>(out),
                      plan, pool);
  case 4:
    return whereTyped(cond, static_cast<const uint32_t *>(x),
                      static_cast<const uint32_t *>(y),
                      static_cast<uint32_t *>(out), plan, pool);
  default:
    return whereTyped(cond, static_cast<const uint64_t *>(x),
                      static_cast<const uint64_t *>(y),
                      static_cast<uint64_t *>(out), plan, pool);
  }
}

namespace {

Step binaryStep(const KernelContext &c) {
  return kernelStep(c, [](const StepArgs &s) {
    binaryKernel(s.o->kind, s.a->dtype, s.x0, s.a->shape, s.x1, s.b->shape,
                 s.y0, s.r->shape, *s.tp);
  });
}

Step compareStep(const KernelContext &c) {
  return kernelStep(c, [](const StepArgs &s) {
    compareKernel(s.o->predicate, s.a->dtype, s.x0, s.a->shape, s.x1,
                  s.b->shape, static_cast<uint8_t *>(s.y0), s.r->shape, *s.tp);
  });
}

Step whereStep(const KernelContext &c) {
  const BufferInfo *a = &c.in(0), *bx = &c.in(1), *by = &c.in(2),
                   *r = &c.out(0);
  void *x0 = c.operand(0), *x1 = c.operand(1), *x2 = c.operand(2);
  void *y0 = c.result(0);
  ThreadPool *tp = &c.pool;
  return [=] {
    whereKernel(dtypeSize(r->dtype), static_cast<const uint8_t *>(x0), a->shape,
                x1, bx->shape, x2, by->shape, y0, r->shape, *tp);
    return Status::ok();
  };
}

} // namespace

void registerBinaryKernels(KernelRegistry &r) {
  for (OpKind k : {OpKind::Add, OpKind::Sub, OpKind::Mul, OpKind::Div,
                   OpKind::Pow, OpKind::Max, OpKind::Min, OpKind::Mod,
                   OpKind::FMod})
    r.add(k, binaryStep);
  r.add(OpKind::Compare, compareStep);
  r.add(OpKind::Where, whereStep);
}

} // namespace tessel::runtime::cpu
