//===- HalfFloat.h - bf16 and f16 to and from f32 ---------------*- C++ -*-===//
//
// The conversions between the two-byte float types the runtime stores (DType
// BF16 and F16) and f32, in which every kernel computes them: widening is
// exact, narrowing rounds to nearest, ties to even, as PyTorch's
// c10::BFloat16 and c10::Half do. NaNs stay (quiet) NaNs, infinities stay,
// an f32 past a format's largest finite value rounds to an infinity.
// Plain C++ on the bits, host and device: the CPU's cast kernel, the CUDA
// cast kernel, npy files and the inputs that take f32 for bf16 share them.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_RUNTIME_HALFFLOAT_H
#define TESSEL_RUNTIME_HALFFLOAT_H

#include "tessel/runtime/DType.h"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define TESSEL_HALF_HOST_DEVICE __host__ __device__
#else
#define TESSEL_HALF_HOST_DEVICE
#endif

namespace tessel::runtime {

TESSEL_HALF_HOST_DEVICE inline uint32_t bitsOfF32(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

TESSEL_HALF_HOST_DEVICE inline float f32OfBits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

/// f32's bits `u` rounded to bf16 without branches (it vectorises): the top
/// 16 bits to nearest, ties to even; infinities and NaNs as they are.
/// Returns the rounded f32's bits; `*bf16` gets their top half (a NaN stays
/// a quiet NaN).
TESSEL_HALF_HOST_DEVICE inline uint32_t roundBf16Bits(uint32_t u,
                                                      uint16_t *bf16) {
  const bool finite = (u & 0x7f800000u) != 0x7f800000u;
  const uint32_t r =
      finite ? (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u : u;
  const uint32_t nan = (u & 0x7fffffffu) > 0x7f800000u ? 0x40u : 0u;
  *bf16 = static_cast<uint16_t>((r >> 16) | nan);
  return r;
}

TESSEL_HALF_HOST_DEVICE inline float bf16ToF32(uint16_t h) {
  return f32OfBits(static_cast<uint32_t>(h) << 16);
}

TESSEL_HALF_HOST_DEVICE inline uint16_t f32ToBf16(float f) {
  uint16_t h;
  roundBf16Bits(bitsOfF32(f), &h);
  return h;
}

TESSEL_HALF_HOST_DEVICE inline float f16ToF32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
  if (exp == 0x1f) // infinity or NaN
    return f32OfBits(sign | 0x7f800000u | (man << 13));
  if (exp == 0) { // zero or subnormal: man 2^-24, exact in f32
    const float v = static_cast<float>(man) * 0x1p-24f;
    return sign ? -v : v;
  }
  return f32OfBits(sign | ((exp + 112) << 23) | (man << 13));
}

TESSEL_HALF_HOST_DEVICE inline uint16_t f32ToF16(float f) {
  const uint32_t u = bitsOfF32(f);
  const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  const uint32_t a = u & 0x7fffffffu;
  if (a >= 0x7f800000u) // infinity, or NaN kept quiet
    return sign | 0x7c00u | (a > 0x7f800000u ? 0x200u | ((a >> 13) & 0x3ffu) : 0u);
  if (a >= 0x477ff000u) // from 65520 up: rounds past 65504
    return sign | 0x7c00u;
  if (a >= 0x38800000u) { // normal in f16 (from 2^-14): rebias, round
    const uint32_t r = a - 0x38000000u;
    return sign | static_cast<uint16_t>((r + 0xfffu + ((r >> 13) & 1u)) >> 13);
  }
  // Subnormal or zero: the multiple of 2^-24 nearest (ties to even); 1024
  // is the smallest normal, which the encoding continues into.
  const float scaled = f32OfBits(a) * 0x1p24f;
  return sign | static_cast<uint16_t>(rintf(scaled));
}

/// `h`, of `half` (BF16 or F16), as f32: exact.
TESSEL_HALF_HOST_DEVICE inline float halfToF32(DType half, uint16_t h) {
  return half == DType::BF16 ? bf16ToF32(h) : f16ToF32(h);
}

/// `f` rounded to `half` (BF16 or F16), to nearest even.
TESSEL_HALF_HOST_DEVICE inline uint16_t f32ToHalf(DType half, float f) {
  return half == DType::BF16 ? f32ToBf16(f) : f32ToF16(f);
}

/// `d` rounded toward zero to f32, the last bit set when inexact ("round to
/// odd"): rounding that to a half, to nearest even, gives `d`'s own nearest
/// half (f32 keeps more than two bits beyond either half's), where rounding
/// `d` to nearest f32 first could round twice. Infinities and NaNs as they
/// are; past f32's range, f32's largest value (odd), which every half
/// rounds to infinity.
inline float f64ToF32RoundToOdd(double d) {
  float f = static_cast<float>(d);
  if (d != d || static_cast<double>(f) == d)
    return f;
  uint32_t u = bitsOfF32(f);
  // The magnitude one step down when rounding went up (sign-magnitude
  // bits: the same step for either sign; a zero never went up).
  const double af = f < 0 ? -static_cast<double>(f) : static_cast<double>(f);
  if (af > (d < 0 ? -d : d))
    u -= 1;
  return f32OfBits(u | 1u);
}

/// n values of `half` widened to f32 (npy files, Python's arrays, f32
/// masters written from a half model's data).
inline void widenHalves(DType half, const uint16_t *h, float *f, size_t n) {
  for (size_t i = 0; i < n; ++i)
    f[i] = halfToF32(half, h[i]);
}

/// n f32 values rounded to `half` (bf16 inputs given as f32, f32 masters
/// exported in the model's type).
inline void roundToHalves(DType half, const float *f, uint16_t *h, size_t n) {
  for (size_t i = 0; i < n; ++i)
    h[i] = f32ToHalf(half, f[i]);
}

} // namespace tessel::runtime

#endif // TESSEL_RUNTIME_HALFFLOAT_H
