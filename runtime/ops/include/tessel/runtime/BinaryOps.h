//===- BinaryOps.h - Each elementwise binary op's math, once ----*- C++ -*-===//
//
// The scalar function of every binary op the op table marks with
// Tessel_BinaryScalarFunction (dialects/tessel/TesselRuntime.td), written
// once and compiled by both backends: the CPU kernels (runtime/cpu/
// Binary.cpp) and the CUDA kernels (runtime/cuda/Binary.cu) map it over a
// broadcast plan. As ScalarOps.h for unary ops: each op is a functor named
// after its OpKind enumerator, a template over the backend's math library
// `M` (CpuMath, CudaMath: for float, fmod, pow and sqrt). The generated
// list TESSEL_RUNTIME_BINARY_SCALAR_OPS (OpKinds.inc) names the functors and
// the dtypes they take (scalar::Float, Numeric, Integer), so a new binary
// op is its ODS entry (with its gradient) and its functor here.
//
// Integers wrap (two's complement) instead of overflowing, and never trap:
// x / 0 and x % 0 are 0, MIN / -1 is MIN.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_RUNTIME_BINARYOPS_H
#define TESSEL_RUNTIME_BINARYOPS_H

#include "tessel/runtime/ScalarOps.h"

#include <type_traits>

namespace tessel::runtime::scalar {

/// The dtypes of a binary functor that takes integers only (i64, i32).
struct Integer {};

/// Whether a functor over `Types` (Float, Numeric, Integer) takes elements
/// of type T (float and double, int64_t, int32_t; never bool's uint8_t).
/// Float means f32 and f64; Numeric f32, f64, i64 and i32.
template <class Types, class T> constexpr bool takes() {
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>)
    return !std::is_same_v<Types, Integer>;
  else if constexpr (std::is_same_v<T, int64_t> || std::is_same_v<T, int32_t>)
    return !std::is_same_v<Types, Float>;
  else
    return false;
}

namespace detail {
template <class T> using Unsigned = std::make_unsigned_t<T>;
/// C's remainder (sign of x); x % 0 (and MIN % -1) = 0.
template <class T> TESSEL_HOST_DEVICE inline T intRemainder(T x, T y) {
  return y == 0 || y == -1 ? T(0) : static_cast<T>(x % y);
}
} // namespace detail

template <class M> struct Add {
  template <class T> TESSEL_HOST_DEVICE T operator()(T x, T y) const {
    if constexpr (std::is_integral_v<T>)
      return static_cast<T>(detail::Unsigned<T>(x) + detail::Unsigned<T>(y));
    else
      return x + y;
  }
};
template <class M> struct Sub {
  template <class T> TESSEL_HOST_DEVICE T operator()(T x, T y) const {
    if constexpr (std::is_integral_v<T>)
      return static_cast<T>(detail::Unsigned<T>(x) - detail::Unsigned<T>(y));
    else
      return x - y;
  }
};
template <class M> struct Mul {
  template <class T> TESSEL_HOST_DEVICE T operator()(T x, T y) const {
    if constexpr (std::is_integral_v<T>)
      return static_cast<T>(detail::Unsigned<T>(x) * detail::Unsigned<T>(y));
    else
      return x * y;
  }
};
/// Integers: truncating (C, ONNX).
template <class M> struct Div {
  template <class T> TESSEL_HOST_DEVICE T operator()(T x, T y) const {
    if constexpr (std::is_integral_v<T>)
      return y == 0 ? T(0) : y == -1 ? negate(x) : static_cast<T>(x / y);
    else
      return x / y;
  }
};
/// numpy.maximum: a NaN operand propagates (the first one when both are).
template <class M> struct Max {
  template <class T> TESSEL_HOST_DEVICE T operator()(T x, T y) const {
    return (x > y || x != x) ? x : y;
  }
};
template <class M> struct Min {
  template <class T> TESSEL_HOST_DEVICE T operator()(T x, T y) const {
    return (x < y || x != x) ? x : y;
  }
};
/// ONNX Mod fmod=0, Python's %: the sign of y; |r| < |y|, so r + y cannot
/// overflow.
template <class M> struct Mod {
  template <class T> TESSEL_HOST_DEVICE T operator()(T x, T y) const {
    const T r = detail::intRemainder(x, y);
    return r != 0 && ((r < 0) != (y < 0)) ? static_cast<T>(r + y) : r;
  }
};
/// ONNX Mod fmod=1, C's fmod: the sign of x.
template <class M> struct FMod {
  template <class T> TESSEL_HOST_DEVICE T operator()(T x, T y) const {
    if constexpr (std::is_integral_v<T>)
      return detail::intRemainder(x, y);
    else
      return M::fmod(x, y);
  }
};
/// x^y. With a single-element exponent (`scalarExponent`, set by the
/// kernels through setScalarRhs) the common powers are exact products, as
/// PyTorch's and ONNX Runtime's CPU kernels special-case them.
template <class M> struct Pow {
  bool scalarExponent = false;
  template <class T> TESSEL_HOST_DEVICE T operator()(T x, T y) const {
    if (scalarExponent) {
      if (y == T(2))
        return x * x;
      if (y == T(3))
        return x * x * x;
      if (y == T(1))
        return x;
      if (y == T(0.5))
        return M::sqrt(x);
      if (y == T(-1))
        return T(1) / x;
    }
    return M::pow(x, y);
  }
};

/// relu_grad (a training op, not in the list): x the relu's result, y the
/// gradient of its output.
template <class M> struct ReluGrad {
  TESSEL_HOST_DEVICE float operator()(float x, float y) const {
    return x > 0.0f ? y : 0.0f;
  }
};

/// Tells functor `f` that its right operand is one element for the whole
/// map (Pow's fast paths); other functors ignore it.
template <class F> TESSEL_HOST_DEVICE inline void setScalarRhs(F &, bool) {}
template <class M>
TESSEL_HOST_DEVICE inline void setScalarRhs(Pow<M> &f, bool scalar) {
  f.scalarExponent = scalar;
}

} // namespace tessel::runtime::scalar

#endif // TESSEL_RUNTIME_BINARYOPS_H
