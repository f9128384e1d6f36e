//===- DType.cpp - Element types and shapes -------------------------------===//
#include "tessel/runtime/DType.h"

#include "DTypeNames.h"

#include "tessel/support/Checked.h"

#include <iterator>

namespace tessel::runtime {

namespace {
constexpr DTypeNames kNames = {"f32",  "i64", "i32", "bool",
                               "bf16", "f16", "f64"};
} // namespace

size_t dtypeSize(DType t) {
  constexpr size_t kSizes[] = {4, 8, 4, 1, 2, 2, 8};
  unsigned i = static_cast<unsigned>(t) - 1;
  return i < std::size(kSizes) ? kSizes[i] : 1;
}

const char *dtypeName(DType t) { return dtypeNameIn(kNames, t, "?"); }

std::optional<DType> parseDType(std::string_view name) {
  return parseDTypeIn(kNames, name);
}

bool isValidDType(int value) { return value >= 1 && value <= 7; }

int64_t numElements(const Shape &shape) {
  // A zero dim after an overflowing prefix still gives 0 elements.
  return checkedProduct(shape, int64_t(1) << 62).value_or(-1);
}

std::optional<uint64_t> byteSize(DType dtype, const Shape &shape) {
  return checkedBytes(numElements(shape), dtypeSize(dtype),
                      uint64_t(1) << 62);
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
