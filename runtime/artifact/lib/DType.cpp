//===- DType.cpp - Element types and shapes -------------------------------===//
#include "tessel/runtime/DType.h"

#include "DTypeNames.h"

namespace tessel::runtime {

namespace {
constexpr DTypeNames kNames = {"f32", "i64", "i32", "bool"};
} // namespace

size_t dtypeSize(DType t) {
  constexpr size_t kSizes[] = {4, 8, 4, 1};
  unsigned i = static_cast<unsigned>(t) - 1;
  return i < 4 ? kSizes[i] : 1;
}

const char *dtypeName(DType t) { return dtypeNameIn(kNames, t, "?"); }

std::optional<DType> parseDType(std::string_view name) {
  return parseDTypeIn(kNames, name);
}

bool isValidDType(int value) { return value >= 1 && value <= 4; }

int64_t numElements(const Shape &shape) {
  constexpr int64_t kLimit = int64_t(1) << 62;
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0)
      return -1;
    if (d == 0)
      n = 0;
    else if (n > kLimit / d)
      return -1;
    else
      n *= d;
  }
  // A zero dim after an overflowing prefix still gives 0 elements.
  return n;
}

std::optional<uint64_t> byteSize(DType dtype, const Shape &shape) {
  int64_t n = numElements(shape);
  uint64_t width = dtypeSize(dtype);
  if (n < 0 || (width && uint64_t(n) > (uint64_t(1) << 62) / width))
    return std::nullopt;
  return uint64_t(n) * width;
}

std::string shapeToString(const Shape &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i)
      s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

std::string typeToString(DType dtype, const Shape &shape) {
  return std::string(dtypeName(dtype)) + " " + shapeToString(shape);
}

} // namespace tessel::runtime
