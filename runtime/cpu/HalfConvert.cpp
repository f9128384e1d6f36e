//===- HalfConvert.cpp - f32 <-> bf16 / f16 over arrays -------------------===//
#include "HalfConvert.h"

#include "tessel/runtime/HalfFloat.h"

#if defined(__F16C__)
#include <immintrin.h>
#endif

namespace tessel::runtime::cpu {

void widenHalfArray(DType half, const uint16_t *__restrict h,
                    float *__restrict f, int64_t n) {
  int64_t i = 0;
  if (half == DType::BF16) {
    uint32_t *__restrict u = reinterpret_cast<uint32_t *>(f);
    for (; i < n; ++i)
      u[i] = static_cast<uint32_t>(h[i]) << 16;
    return;
  }
#if defined(__F16C__)
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(f + i, _mm256_cvtph_ps(_mm_loadu_si128(
                                reinterpret_cast<const __m128i *>(h + i))));
#endif
  for (; i < n; ++i)
    f[i] = f16ToF32(h[i]);
}

void narrowHalfArray(DType half, const float *__restrict f,
                     uint16_t *__restrict h, int64_t n) {
  int64_t i = 0;
  if (half == DType::BF16) {
    const uint32_t *__restrict u = reinterpret_cast<const uint32_t *>(f);
    for (; i < n; ++i)
      roundBf16Bits(u[i], h + i);
    return;
  }
#if defined(__F16C__)
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i *>(h + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(f + i),
                                     _MM_FROUND_TO_NEAREST_INT |
                                         _MM_FROUND_NO_EXC));
#endif
  for (; i < n; ++i)
    h[i] = f32ToF16(f[i]);
}

void roundHalfArray(DType half, const float *x, float *y, int64_t n) {
  int64_t i = 0;
  if (half == DType::BF16) {
    const uint32_t *u = reinterpret_cast<const uint32_t *>(x);
    uint32_t *r = reinterpret_cast<uint32_t *>(y);
    for (; i < n; ++i) {
      uint16_t unused;
      r[i] = roundBf16Bits(u[i], &unused);
    }
    return;
  }
#if defined(__F16C__)
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(
        y + i, _mm256_cvtph_ps(_mm256_cvtps_ph(
                   _mm256_loadu_ps(x + i),
                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)));
#endif
  for (; i < n; ++i)
    y[i] = f16ToF32(f32ToF16(x[i]));
}

} // namespace tessel::runtime::cpu
