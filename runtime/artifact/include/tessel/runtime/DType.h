//===- DType.h - Element types and shapes -----------------------*- C++ -*-===//
#ifndef TESSEL_RUNTIME_DTYPE_H
#define TESSEL_RUNTIME_DTYPE_H

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tessel::runtime {

/// Element types; the values equal tessel.artifact.DType.
enum class DType : uint8_t {
  F32 = 1,
  I64 = 2,
  I32 = 3,
  Bool = 4,
  BF16 = 5,
  F16 = 6,
  F64 = 7
};

/// bf16 or f16: stored in two bytes, computed in f32 (docs/precision.md).
inline bool isHalf(DType t) { return t == DType::BF16 || t == DType::F16; }

using Shape = std::vector<int64_t>;

/// Bytes per element.
size_t dtypeSize(DType t);
/// "f32", "i64", "i32", "bool", "bf16", "f16", "f64".
const char *dtypeName(DType t);
/// Parses the names dtypeName() prints; nullopt otherwise.
std::optional<DType> parseDType(std::string_view name);
/// True for the values of tessel.artifact.DType the runtime knows.
bool isValidDType(int value);

/// Number of elements, or -1 when a dim is negative or the product overflows
/// 2^62.
int64_t numElements(const Shape &shape);
/// Bytes of a tensor of `dtype` and `shape`, or nullopt when a dim is
/// negative or the size does not fit in 2^62: the runtime's one checked size,
/// used before anything read from a file is allocated.
std::optional<uint64_t> byteSize(DType dtype, const Shape &shape);
/// "[2, 3, 4]".
std::string shapeToString(const Shape &shape);
/// "f32 [2, 3, 4]".
std::string typeToString(DType dtype, const Shape &shape);

} // namespace tessel::runtime

#endif // TESSEL_RUNTIME_DTYPE_H
