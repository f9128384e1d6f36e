//===- Numerics.h - Finding NaN and infinities in f32 buffers ---*- C++ -*-===//
//
// The scan behind tessel-run's numerics checks (docs/training.md): the loss
// of every step, the states before a checkpoint is written, and with
// --check-numerics every instruction's results (Executor::setCheckNumerics).
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_RUNTIME_NUMERICS_H
#define TESSEL_RUNTIME_NUMERICS_H

#include "tessel/runtime/DType.h"

#include <cstdint>
#include <string>

namespace tessel::runtime {

/// What a buffer holds, ordered from best to worst.
enum class Finiteness : uint8_t { Unknown, Finite, Inf, NaN };

/// The worst of the `n` floats at `p`: Finite, Inf (an infinity, no NaN) or
/// NaN; `first` is set to the first element that is so (untouched when
/// Finite).
Finiteness scanFinite(const float *p, int64_t n, int64_t &first);

/// "NaN", "inf", "-inf", or the value as printf's %g.
std::string floatText(float v);

/// "1, 5, 3": the multi-index of row-major element `flat` of `shape`.
std::string multiIndex(const Shape &shape, int64_t flat);

} // namespace tessel::runtime

#endif // TESSEL_RUNTIME_NUMERICS_H
