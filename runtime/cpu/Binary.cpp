//===- Binary.cpp - Broadcasting binary kernels, compare and where --------===//
//
// Each binary op's math is its functor in tessel/runtime/BinaryOps.h,
// shared with the CUDA backend; here, the loops over broadcast plans.
//
//===----------------------------------------------------------------------===//
#include "KernelRegistry.h"
#include "Kernels.h"
#include "ThreadPool.h"
#include "VecMath.h"
#include "tessel/ops/Broadcast.h"
#include "tessel/ops/DTypeDispatch.h"
#include "tessel/runtime/BinaryOps.h"

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

/// out = f(a, b) for the functor `f` of a binary op (BinaryOps.h), over
/// the dtypes its Types tag allows (scalar::takes).
template <class Types, class F>
void binaryTyped(F f, DType dtype, const void *a, const void *b, void *out,
                 const StridedPlan &plan, ThreadPool &pool) {
  visitDType(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (scalar::takes<Types, T>())
      binaryLoop(static_cast<const T *>(a), static_cast<const T *>(b),
                 static_cast<T *>(out), plan, pool, f);
  });
}

/// pow with a single-element exponent: the functor's fast paths with the
/// exponent a constant of the loop, so that x * x vectorises.
bool powByConstant(const float *a, const float *b, float *out,
                   const StridedPlan &plan, ThreadPool &pool) {
  scalar::Pow<CpuMath> f;
  f.scalarExponent = true;
  const float e = *b;
  if (e == 2.0f)
    binaryLoop(a, b, out, plan, pool,
               [f](float x, float) { return f(x, 2.0f); });
  else if (e == 3.0f)
    binaryLoop(a, b, out, plan, pool,
               [f](float x, float) { return f(x, 3.0f); });
  else if (e == 1.0f)
    binaryLoop(a, b, out, plan, pool,
               [f](float x, float) { return f(x, 1.0f); });
  else if (e == 0.5f)
    binaryLoop(a, b, out, plan, pool,
               [f](float x, float) { return f(x, 0.5f); });
  else if (e == -1.0f)
    binaryLoop(a, b, out, plan, pool,
               [f](float x, float) { return f(x, -1.0f); });
  else
    return false;
  return true;
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
  const bool scalarRhs = numElements(bShape) == 1;
  if (kind == OpKind::Pow && scalarRhs && dtype == DType::F32 &&
      powByConstant(static_cast<const float *>(a),
                    static_cast<const float *>(b), static_cast<float *>(out),
                    plan, pool))
    return;
  switch (kind) {
#define TESSEL_BINARY_SCALAR(Kind, Types)                                      \
  case OpKind::Kind: {                                                         \
    scalar::Kind<CpuMath> f;                                                   \
    scalar::setScalarRhs(f, scalarRhs);                                        \
    return binaryTyped<scalar::Types>(f, dtype, a, b, out, plan, pool);        \
  }
    TESSEL_RUNTIME_BINARY_SCALAR_OPS(TESSEL_BINARY_SCALAR)
#undef TESSEL_BINARY_SCALAR
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
  visitElementSize(elemSize, 0, [&](auto tag) {
    using T = typename decltype(tag)::type;
    whereTyped(cond, static_cast<const T *>(x), static_cast<const T *>(y),
               static_cast<T *>(out), plan, pool);
    return 0;
  });
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

// The binary ops of the op table's TESSEL_RUNTIME_BINARY_SCALAR_OPS, each
// its functor of tessel/runtime/BinaryOps.h over a broadcast plan.
void registerBinaryKernels(KernelRegistry &r) {
#define TESSEL_BINARY_SCALAR(Kind, Types) r.add(OpKind::Kind, binaryStep);
  TESSEL_RUNTIME_BINARY_SCALAR_OPS(TESSEL_BINARY_SCALAR)
#undef TESSEL_BINARY_SCALAR
  r.add(OpKind::Compare, compareStep);
  r.add(OpKind::Where, whereStep);
}

} // namespace tessel::runtime::cpu
