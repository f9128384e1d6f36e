//===- HalfConvert.h - f32 <-> bf16 / f16 over arrays, vectorised -*- C++ -*-===//
//
// The CPU's loops between f32 and the two-byte floats: the values of
// HalfFloat.h's scalar conversions (nearest even; NaNs, infinities and
// subnormals kept), many at a time. bf16 is shifts and an integer rounding
// the compiler vectorises; f16 uses F16C's conversions (x86-64-v3), which
// round to nearest even as HalfFloat.h does (a signalling f16 NaN widens
// quiet), and HalfFloat.h's loop where
// the CPU has none. HalfFloatTest checks both directions on every half
// and on 200 000 random f32s against the scalar conversions. The cast
// kernel and fused_elementwise's loads and stores use them.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_RUNTIME_CPU_HALFCONVERT_H
#define TESSEL_RUNTIME_CPU_HALFCONVERT_H

#include "tessel/runtime/DType.h"

#include <cstdint>

namespace tessel::runtime::cpu {

/// n halves of `half` (BF16 or F16) widened to f32: exact.
void widenHalfArray(DType half, const uint16_t *__restrict h,
                    float *__restrict f, int64_t n);

/// n f32s rounded to `half` (BF16 or F16), to nearest even.
void narrowHalfArray(DType half, const float *__restrict f,
                     uint16_t *__restrict h, int64_t n);

/// n f32s rounded to `half` (BF16 or F16), to nearest even, and held as
/// f32 (`x` and `y` may be the same array).
void roundHalfArray(DType half, const float *x, float *y, int64_t n);

} // namespace tessel::runtime::cpu

#endif // TESSEL_RUNTIME_CPU_HALFCONVERT_H
