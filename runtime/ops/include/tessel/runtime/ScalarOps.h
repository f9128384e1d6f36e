//===- ScalarOps.h - Each elementwise unary op's math, once -----*- C++ -*-===//
//
// The scalar function of every unary op the op table marks with
// Tessel_ScalarFunction (dialects/tessel/TesselRuntime.td), written once and
// compiled by both backends: the CPU kernels (runtime/cpu/Elementwise.cpp)
// and the CUDA kernels (runtime/cuda/Elementwise.cu) map it over a buffer.
//
// Each op is a functor named after its OpKind enumerator, a template over
// the backend's math library `M` (the functions below that CpuMath and
// CudaMath provide), with the op's attributes as members of the same name
// in camel case (`alpha`, `tanhApproximation`). The generated list
// TESSEL_RUNTIME_UNARY_SCALAR_OPS (OpKinds.inc) names the functors, the
// dtypes they take and how their members are read from an instruction, so
// a new op is its ODS entry and its functor here.
//
//   template <class M> struct Softplus {
//     template <class T> TESSEL_HOST_DEVICE T operator()(T v) const {
//       return maxOf(v, T(0)) + M::log1p(M::exp(-M::fabs(v)));
//     }
//   };
//
// M provides, for float: exp, log, log1p, sqrt, tanh, erf, sin, cos, fabs,
// nearbyint (round to nearest, ties to even).
//
// Two more functions that are not unary ops of the table live here for the
// same reason, one formula for both backends: gelu_grad's (GeluGrad) and
// round_float's (roundToFormat).
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_RUNTIME_SCALAROPS_H
#define TESSEL_RUNTIME_SCALAROPS_H

#include "tessel/runtime/HalfFloat.h"

#include <cstdint>
#include <cstring>
#include <type_traits>

#if defined(__CUDACC__)
#define TESSEL_HOST_DEVICE __host__ __device__
#else
#define TESSEL_HOST_DEVICE
#endif

namespace tessel::runtime::scalar {

/// The dtypes a functor takes (the second column of the generated list):
/// Float: f32, f64; Numeric: f32, f64, i64, i32; Bool: bool (its uint8_t
/// elements). f64 runs on the CPU only (docs/precision.md).
struct Float {};
struct Numeric {};
struct Bool {};

/// std::max and std::min exactly (a NaN `a` wins max, a NaN `b` loses), so
/// that the CPU kernels keep std::max's results.
template <class T> TESSEL_HOST_DEVICE inline T maxOf(T a, T b) {
  return a < b ? b : a;
}
template <class T> TESSEL_HOST_DEVICE inline T minOf(T a, T b) {
  return b < a ? b : a;
}

/// -v; integers wrap (two's complement) instead of overflowing.
template <class T> TESSEL_HOST_DEVICE inline T negate(T v) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(U(0) - U(v));
  } else {
    return -v;
  }
}

/// The constant `f` in f32 and `d` in f64: a constant that f32 cannot
/// hold exactly keeps its f32 value, and so the f32 kernels their bits.
template <class T>
TESSEL_HOST_DEVICE constexpr T lit(float f, [[maybe_unused]] double d) {
  if constexpr (std::is_same_v<T, double>)
    return d;
  else
    return f;
}

template <class M> struct Neg {
  template <class T> TESSEL_HOST_DEVICE T operator()(T v) const {
    return negate(v);
  }
};
template <class M> struct Abs {
  template <class T> TESSEL_HOST_DEVICE T operator()(T v) const {
    if constexpr (std::is_integral_v<T>)
      return v < 0 ? negate(v) : v;
    else
      return M::fabs(v);
  }
};
template <class M> struct Relu {
  template <class T> TESSEL_HOST_DEVICE T operator()(T v) const {
    return v < T(0) ? T(0) : v;
  }
};
template <class M> struct Not {
  TESSEL_HOST_DEVICE uint8_t operator()(uint8_t v) const {
    return static_cast<uint8_t>(v == 0);
  }
};
template <class M> struct Exp {
  template <class T> TESSEL_HOST_DEVICE T operator()(T v) const {
    return M::exp(v);
  }
};
template <class M> struct Log {
  template <class T> TESSEL_HOST_DEVICE T operator()(T v) const {
    return M::log(v);
  }
};
template <class M> struct Sqrt {
  template <class T> TESSEL_HOST_DEVICE T operator()(T v) const {
    return M::sqrt(v);
  }
};
template <class M> struct Rsqrt {
  template <class T> TESSEL_HOST_DEVICE T operator()(T v) const {
    return T(1) / M::sqrt(v);
  }
};
template <class M> struct Reciprocal {
  template <class T> TESSEL_HOST_DEVICE T operator()(T v) const {
    return T(1) / v;
  }
};
template <class M> struct Tanh {
  template <class T> TESSEL_HOST_DEVICE T operator()(T v) const {
    return M::tanh(v);
  }
};
template <class M> struct Sin {
  template <class T> TESSEL_HOST_DEVICE T operator()(T v) const {
    return M::sin(v);
  }
};
template <class M> struct Cos {
  template <class T> TESSEL_HOST_DEVICE T operator()(T v) const {
    return M::cos(v);
  }
};
/// The step functions (ONNX's Floor, Ceil, Round: halves to even, as
/// nearbyint in the default rounding mode; Sign: -1, 0 or 1, NaN kept).
template <class M> struct Floor {
  template <class T> TESSEL_HOST_DEVICE T operator()(T v) const {
    return M::floor(v);
  }
};
template <class M> struct Ceil {
  template <class T> TESSEL_HOST_DEVICE T operator()(T v) const {
    return M::ceil(v);
  }
};
template <class M> struct Round {
  template <class T> TESSEL_HOST_DEVICE T operator()(T v) const {
    return M::nearbyint(v);
  }
};
template <class M> struct Sign {
  template <class T> TESSEL_HOST_DEVICE T operator()(T v) const {
    if (v > T(0))
      return T(1);
    if (v < T(0))
      return T(-1);
    return v == T(0) ? T(0) : v; // NaN stays NaN
  }
};
template <class M> struct Erf {
  template <class T> TESSEL_HOST_DEVICE T operator()(T v) const {
    return M::erf(v);
  }
};
template <class M> struct Sigmoid {
  template <class T> TESSEL_HOST_DEVICE T operator()(T v) const {
    return T(1) / (T(1) + M::exp(-v));
  }
};
/// x * Phi(x); with tanhApproximation, the tanh form.
template <class M> struct Gelu {
  bool tanhApproximation = false;
  template <class T> TESSEL_HOST_DEVICE T operator()(T v) const {
    const T sqrt2OverPi = lit<T>(0.79788456080286536f, 0.79788456080286536);
    const T k = lit<T>(0.044715f, 0.044715);
    const T sqrtHalf = lit<T>(0.70710678118654752f, 0.70710678118654752);
    if (tanhApproximation)
      return T(0.5) * v * (T(1) + M::tanh(sqrt2OverPi * (v + k * v * v * v)));
    return T(0.5) * v * (T(1) + M::erf(v * sqrtHalf));
  }
};
/// log(1 + exp(x)), without overflow: max(x, 0) + log1p(exp(-|x|)).
template <class M> struct Softplus {
  template <class T> TESSEL_HOST_DEVICE T operator()(T v) const {
    return maxOf(v, T(0)) + M::log1p(M::exp(-M::fabs(v)));
  }
};
/// x * max(0, min(1, x / 6 + 1/2)) (ONNX HardSwish: alpha 1/6, beta 0.5).
template <class M> struct HardSwish {
  template <class T> TESSEL_HOST_DEVICE T operator()(T v) const {
    const T sixth = lit<T>(1.0f / 6.0f, 1.0 / 6.0);
    return v * maxOf(T(0), minOf(T(1), v * sixth + T(0.5)));
  }
};
/// x / (1 + |x|) (ONNX Softsign, torch.nn.Softsign).
template <class M> struct Softsign {
  template <class T> TESSEL_HOST_DEVICE T operator()(T v) const {
    return v / (T(1) + M::fabs(v));
  }
};
/// alpha is the op's f32 attribute (ONNX's LeakyRelu alpha is a float), in
/// f64 too.
template <class M> struct LeakyRelu {
  float alpha = 0.01f;
  template <class T> TESSEL_HOST_DEVICE T operator()(T v) const {
    return v < T(0) ? T(alpha) * v : v;
  }
};

/// dy * gelu'(x) (gelu_grad): the gradient rule's formulas
/// (dialects/tessel/Gradients.cpp's comment), erf or tanh form.
template <class M> struct GeluGrad {
  bool tanhApproximation = false;
  TESSEL_HOST_DEVICE float operator()(float v, float g) const {
    if (tanhApproximation) {
      const float k = 0.79788456080286536f, kc = k * 0.044715f;
      const float v2 = v * v;
      const float t = M::tanh(v * (v2 * kc + k));
      const float d = (t + 1.0f) * 0.5f +
                      v * (1.0f - t * t) * (v2 * (1.5f * kc) + 0.5f * k);
      return g * d;
    }
    const float cdf = (M::erf(v * 0.70710678118654752f) + 1.0f) * 0.5f;
    const float pdf = M::exp(v * v * -0.5f) * 0.39894228040143268f;
    return g * (cdf + v * pdf);
  }
};

/// The f32 whose bits are `u`, and the bits of `x`.
TESSEL_HOST_DEVICE inline float floatOfBits(uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float x;
  std::memcpy(&x, &u, sizeof x);
  return x;
#endif
}
TESSEL_HOST_DEVICE inline uint32_t bitsOfFloat(float x) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(x);
#else
  uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  return u;
#endif
}

/// `x` rounded to the nearest value (ties to even) of the binary format
/// with `e` exponent and `m` mantissa bits (round_float; 2 <= e <= 8,
/// 0 <= m <= 23): its subnormals below 2^(2 - 2^(e-1)), infinity beyond its
/// largest finite value; infinities and NaNs as they are.
template <class M>
TESSEL_HOST_DEVICE inline float roundToFormat(float x, int e, int m) {
  uint32_t u = bitsOfFloat(x);
  if ((u & 0x7f800000u) == 0x7f800000u) // not finite
    return x;
  const int emax = (1 << (e - 1)) - 1;
  // 2^k for k in [-126, 127], exactly.
  auto pow2 = [](int k) { return floatOfBits(uint32_t(k + 127) << 23); };
  if (e < 8 && M::fabs(x) < pow2(1 - emax)) {
    const float quantum = pow2(1 - emax - m);
    return M::nearbyint(x / quantum) * quantum;
  }
  const int shift = 23 - m;
  if (shift > 0) {
    u += (1u << (shift - 1)) - 1 + ((u >> shift) & 1u);
    u &= ~((1u << shift) - 1);
  }
  const float y = floatOfBits(u);
  // The largest finite value, (2 - 2^-m) 2^emax.
  if (e < 8 && M::fabs(y) > (2.0f - pow2(-m)) * pow2(emax))
    return floatOfBits((bitsOfFloat(x) & 0x80000000u) | 0x7f800000u);
  return y;
}

/// roundToFormat(x, 8, 7) on the bits of x (HalfFloat.h): the CPU's
/// round_float to bf16 and its bf16 copies, and the CUDA backend's bf16 GEMM
/// operands.
using tessel::runtime::roundBf16Bits;

} // namespace tessel::runtime::scalar

#endif // TESSEL_RUNTIME_SCALAROPS_H
