//===- VecMath.h - Branch-free float math that GCC vectorises ---*- C++ -*-===//
//
// Cephes-style approximations (about 1-2 ulp over the useful range) written
// without calls or branches, so loops over them vectorise at -O3 without
// -ffast-math (libm's expf/logf calls would not).
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_RUNTIME_CPU_VECMATH_H
#define TESSEL_RUNTIME_CPU_VECMATH_H

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

namespace tessel::runtime::cpu {

inline float bitsToFloat(int32_t i) {
  float f;
  std::memcpy(&f, &i, 4);
  return f;
}
inline int32_t floatToBits(float f) {
  int32_t i;
  std::memcpy(&i, &f, 4);
  return i;
}

/// e^x; exact 0 below -87.3, +inf above 88.7, NaN propagates.
inline float vexp(float x) {
  // NaN clamps to -87.3 (its result is replaced below): converting a NaN
  // to int32_t would be undefined behaviour (the artifact fuzzer's find).
  float xc = x > -87.3f ? (x < 88.7f ? x : 88.7f) : -87.3f;
  float n = std::floor(xc * 1.44269504088896341f + 0.5f);
  float r = xc - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  float p = 1.9875691500E-4f;
  p = p * r + 1.3981999507E-3f;
  p = p * r + 8.3334519073E-3f;
  p = p * r + 4.1665795894E-2f;
  p = p * r + 1.6666665459E-1f;
  p = p * r + 5.0000001201E-1f;
  p = p * r * r + r + 1.0f;
  // n in [-126, 128]; split the scale so that 2^128 does not overflow early.
  int32_t ni = static_cast<int32_t>(n);
  int32_t half = ni >> 1;
  float s1 = bitsToFloat((half + 127) << 23);
  float s2 = bitsToFloat((ni - half + 127) << 23);
  float y = p * s1 * s2;
  y = x < -87.3f ? 0.0f : y;
  y = x > 88.7f ? std::numeric_limits<float>::infinity() : y;
  return x != x ? x : y;
}

/// Natural log; -inf at 0, NaN below 0, +inf at +inf. Denormal inputs are
/// treated as their normal neighbours (relative error ~1e-7 is kept above
/// 1.2e-38).
inline float vlog(float x) {
  int32_t bits = floatToBits(x);
  int32_t e = ((bits >> 23) & 0xff) - 126;
  float m = bitsToFloat((bits & 0x807fffff) | 0x3f000000); // [0.5, 1)
  bool small = m < 0.707106781186547524f;
  float ef = static_cast<float>(small ? e - 1 : e);
  m = small ? m + m - 1.0f : m - 1.0f;
  float z = m * m;
  float y = 7.0376836292E-2f;
  y = y * m - 1.1514610310E-1f;
  y = y * m + 1.1676998740E-1f;
  y = y * m - 1.2420140846E-1f;
  y = y * m + 1.4249322787E-1f;
  y = y * m - 1.6668057665E-1f;
  y = y * m + 2.0000714765E-1f;
  y = y * m - 2.4999993993E-1f;
  y = y * m + 3.3333331174E-1f;
  y = y * m * z;
  y = y + ef * -2.12194440e-4f;
  y = y - 0.5f * z;
  float r = m + y + ef * 0.693359375f;
  r = x == std::numeric_limits<float>::infinity() ? x : r;
  r = x == 0.0f ? -std::numeric_limits<float>::infinity() : r;
  r = x < 0.0f ? std::numeric_limits<float>::quiet_NaN() : r;
  return x != x ? x : r;
}

/// tanh: a polynomial near 0, 1 - 2/(e^2x + 1) elsewhere.
inline float vtanh(float x) {
  float ax = std::fabs(x);
  float z = x * x;
  float p = -5.70498872745E-3f;
  p = p * z + 2.06390887954E-2f;
  p = p * z - 5.37397155531E-2f;
  p = p * z + 1.33314422036E-1f;
  p = p * z - 3.33332819422E-1f;
  float nearZero = x + x * z * p;
  // Capped at 10, where 1 - 2/(e^20 + 1) rounds to 1 exactly as tanhf does
  // from 9.01 (at 9 it was 1 - 6e-8, and gelu's tanh form at -inf came out
  // -inf * 6e-8 = -inf, not -inf * 0 = NaN as on CUDA).
  float e = vexp(2.0f * (ax > 10.0f ? 10.0f : ax));
  float far = 1.0f - 2.0f / (e + 1.0f);
  far = x < 0.0f ? -far : far;
  float r = ax < 0.625f ? nearZero : far;
  return x != x ? x : r;
}

/// erf: a Taylor series below 0.5, Abramowitz-Stegun 7.1.26 above
/// (absolute error < 2e-7).
inline float verf(float x) {
  float ax = std::fabs(x);
  float z = x * x;
  float taylor =
      x * (1.1283791670955126f +
           z * (-0.37612638903183754f +
                z * (0.11283791670955126f +
                     z * (-0.026866170645131252f +
                          z * (0.005223977625442188f +
                               z * (-0.0008548325508299338f +
                                    z * 0.00012055332981789664f))))));
  float t = 1.0f / (1.0f + 0.3275911f * ax);
  float poly =
      t * (0.254829592f +
           t * (-0.284496736f +
                t * (1.421413741f + t * (-1.453152027f + t * 1.061405429f))));
  float far = 1.0f - poly * vexp(-z);
  far = x < 0.0f ? -far : far;
  float r = ax < 0.5f ? taylor : far;
  return x != x ? x : r;
}

inline float vsigmoid(float x) { return 1.0f / (1.0f + vexp(-x)); }

inline float vgeluErf(float x) {
  return 0.5f * x * (1.0f + verf(x * 0.70710678118654752f));
}

/// gelu's tanh form, 0.5 x (1 + tanh(y)) with y = sqrt(2 / pi) (x +
/// 0.044715 x^3), computed as the equal x sigmoid(2 y) = x / (1 + e^(-2y)):
/// one exp and one division where vtanh takes both and a polynomial and
/// blends (GPT-2-small's 12 MLPs at seq 128: 24 -> 14 ms on one AVX2
/// core), and no cancellation in 1 + tanh(y) for negative x. Within 5e-7
/// of the formula in double on [-6, 6]; +inf at +inf, NaN at -inf (-inf /
/// inf, as the formula's -inf * 0), NaN propagates.
inline float vgeluTanh(float x) {
  const float u = -1.5957691216057308f * (x + 0.044715f * x * x * x);
  return x / (1.0f + vexp(u));
}

/// The CPU's math library `M` for the scalar functions of
/// tessel/runtime/ScalarOps.h and BinaryOps.h: the approximations above where a loop must
/// vectorise, libm elsewhere.
struct CpuMath {
  static float exp(float x) { return vexp(x); }
  static float log(float x) { return vlog(x); }
  static float log1p(float x) { return std::log1p(x); }
  static float sqrt(float x) { return std::sqrt(x); }
  static float tanh(float x) { return vtanh(x); }
  static float erf(float x) { return verf(x); }
  static float sin(float x) { return std::sin(x); }
  static float cos(float x) { return std::cos(x); }
  static float fabs(float x) { return std::fabs(x); }
  static float nearbyint(float x) { return std::nearbyint(x); }
  static float floor(float x) { return std::floor(x); }
  static float ceil(float x) { return std::ceil(x); }
  static float fmod(float x, float y) { return std::fmod(x, y); }
  static float pow(float x, float y) { return std::pow(x, y); }
  // Each rounded once (tessel/ops/Optimizer.h's updates).
  static float add(float x, float y) { return x + y; }
  static float sub(float x, float y) { return x - y; }
  static float mul(float x, float y) { return x * y; }
  static float div(float x, float y) { return x / y; }
  /// x y + z rounded once (vfmadd on x86-64-v3).
  static float fma(float x, float y, float z) { return std::fma(x, y, z); }

  // f64 (docs/precision.md): libm's, as PyTorch's double CPU kernels are.
  static double exp(double x) { return std::exp(x); }
  static double log(double x) { return std::log(x); }
  static double log1p(double x) { return std::log1p(x); }
  static double sqrt(double x) { return std::sqrt(x); }
  static double tanh(double x) { return std::tanh(x); }
  static double erf(double x) { return std::erf(x); }
  static double sin(double x) { return std::sin(x); }
  static double cos(double x) { return std::cos(x); }
  static double fabs(double x) { return std::fabs(x); }
  static double nearbyint(double x) { return std::nearbyint(x); }
  static double floor(double x) { return std::floor(x); }
  static double ceil(double x) { return std::ceil(x); }
  static double fmod(double x, double y) { return std::fmod(x, y); }
  static double pow(double x, double y) { return std::pow(x, y); }
};

} // namespace tessel::runtime::cpu

#endif // TESSEL_RUNTIME_CPU_VECMATH_H
