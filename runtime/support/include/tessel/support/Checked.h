//===- Checked.h - checked arithmetic on sizes read from input --*- C++ -*-===//
//
// Every size, count and product Tessel computes from an input (mesh axes,
// shard counts, shapes, offsets, arena sizes) goes through these helpers
// (docs/security.md, "Checked arithmetic"): a product or sum that does not
// fit is nullopt, never a wrapped number that a later division, allocation
// or bounds check trusts. Plain C++ on the compilers' overflow builtins:
// the compiler and the runtime share it, and it includes neither MLIR nor
// LLVM.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_SUPPORT_CHECKED_H
#define TESSEL_SUPPORT_CHECKED_H

#include <cstdint>
#include <optional>
#include <type_traits>

namespace tessel {

namespace detail {
/// `op` (one of the compilers' __builtin_*_overflow) of a and b, or nullopt
/// when the result does not fit in T.
template <typename T, typename Op>
constexpr std::optional<T> checked(T a, T b, Op op) {
  static_assert(std::is_integral_v<T>);
  T r{};
  if (op(a, b, &r))
    return std::nullopt;
  return r;
}
} // namespace detail

/// a + b, or nullopt when it does not fit in T.
template <typename T> constexpr std::optional<T> checkedAdd(T a, T b) {
  return detail::checked(a, b, [](T x, T y, T *r) {
    return __builtin_add_overflow(x, y, r);
  });
}

/// a - b, or nullopt when it does not fit in T.
template <typename T> constexpr std::optional<T> checkedSub(T a, T b) {
  return detail::checked(a, b, [](T x, T y, T *r) {
    return __builtin_sub_overflow(x, y, r);
  });
}

/// a * b, or nullopt when it does not fit in T.
template <typename T> constexpr std::optional<T> checkedMul(T a, T b) {
  return detail::checked(a, b, [](T x, T y, T *r) {
    return __builtin_mul_overflow(x, y, r);
  });
}

/// The product of `values` (a shape's dims, a mesh's axis sizes), or
/// nullopt when one is negative or the product exceeds `limit`. A 0 makes
/// the product 0 even after a prefix that overflowed: a tensor with a 0 dim
/// has no elements, whatever its other dims.
template <typename Range>
constexpr std::optional<int64_t>
checkedProduct(const Range &values, int64_t limit = INT64_MAX) {
  int64_t n = 1;
  bool over = false;
  for (auto v : values) {
    const int64_t d = static_cast<int64_t>(v);
    if (d < 0)
      return std::nullopt;
    if (d == 0)
      n = 0;
    else if (std::optional<int64_t> p = checkedMul(n, d); p && *p <= limit)
      n = *p;
    else
      over = true;
  }
  if (n == 0)
    return 0;
  if (over)
    return std::nullopt;
  return n;
}

/// The byte size of `elements` elements of `width` bytes, or nullopt when
/// `elements` is negative or the size exceeds `limit`.
constexpr std::optional<uint64_t>
checkedBytes(int64_t elements, uint64_t width, uint64_t limit = INT64_MAX) {
  if (elements < 0)
    return std::nullopt;
  std::optional<uint64_t> b = checkedMul(uint64_t(elements), width);
  if (!b || *b > limit)
    return std::nullopt;
  return b;
}

/// Whether [offset, offset + length) lies inside [0, size): the sum is
/// never formed, so an offset near 2^64 cannot wrap into range.
constexpr bool rangeInside(uint64_t offset, uint64_t length, uint64_t size) {
  return offset <= size && length <= size - offset;
}

} // namespace tessel

#endif // TESSEL_SUPPORT_CHECKED_H
