//===- DType.cpp - Element types and shapes -------------------------------===//
#include "tessel/runtime/DType.h"

namespace tessel::runtime {

size_t dtypeSize(DType t) {
  switch (t) {
  case DType::F32:
  case DType::I32:
    return 4;
  case DType::I64:
    return 8;
  case DType::Bool:
    return 1;
  }
  return 1;
}

const char *dtypeName(DType t) {
  switch (t) {
  case DType::F32:
    return "f32";
  case DType::I64:
    return "i64";
  case DType::I32:
    return "i32";
  case DType::Bool:
    return "bool";
  }
  return "?";
}

std::optional<DType> parseDType(std::string_view name) {
  if (name == "f32")
    return DType::F32;
  if (name == "i64")
    return DType::I64;
  if (name == "i32")
    return DType::I32;
  if (name == "bool")
    return DType::Bool;
  return std::nullopt;
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

std::string shapeToString(const Shape &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i)
      s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

} // namespace tessel::runtime
