//===- Numerics.cpp - Finding NaN and infinities in f32 buffers -----------===//
#include "tessel/runtime/Numerics.h"

#include <cmath>
#include <cstdio>
#include <cstring>

namespace tessel::runtime {

namespace {

constexpr uint32_t kExponent = 0x7f800000u, kMantissa = 0x007fffffu;

/// Whether any of the n floats is NaN or infinite: a branch-free count the
/// compiler vectorises.
bool anyNonFinite(const uint32_t *bits, int64_t n) {
  uint32_t count = 0;
  for (int64_t k = 0; k < n; ++k)
    count += (bits[k] & kExponent) == kExponent;
  return count != 0;
}

} // namespace

Finiteness scanFinite(const float *p, int64_t n, int64_t &first) {
  static_assert(sizeof(float) == sizeof(uint32_t));
  const auto *bits = reinterpret_cast<const uint32_t *>(p);
  constexpr int64_t kBlock = 4096;
  Finiteness worst = Finiteness::Finite;
  for (int64_t b = 0; b < n; b += kBlock) {
    const int64_t e = b + kBlock < n ? b + kBlock : n;
    if (!anyNonFinite(bits + b, e - b))
      continue;
    for (int64_t k = b; k < e; ++k) {
      if ((bits[k] & kExponent) != kExponent)
        continue;
      if (bits[k] & kMantissa) {
        first = k;
        return Finiteness::NaN;
      }
      if (worst == Finiteness::Finite) {
        worst = Finiteness::Inf;
        first = k;
      }
    }
  }
  return worst;
}

std::string floatText(float v) {
  if (std::isnan(v))
    return "NaN";
  if (std::isinf(v))
    return v > 0 ? "inf" : "-inf";
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g", static_cast<double>(v));
  return buf;
}

std::string multiIndex(const Shape &shape, int64_t flat) {
  std::string s;
  std::vector<int64_t> idx(shape.size(), 0);
  for (size_t d = shape.size(); d-- > 0;) {
    if (shape[d] > 0) {
      idx[d] = flat % shape[d];
      flat /= shape[d];
    }
  }
  for (size_t d = 0; d < idx.size(); ++d)
    s += (d ? ", " : "") + std::to_string(idx[d]);
  return s;
}

} // namespace tessel::runtime
