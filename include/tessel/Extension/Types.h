//===- Types.h - Plain values the extension API exchanges -------*- C++ -*-===//
//
// Tensor types and attributes as plain C++ values: a plugin includes no MLIR,
// LLVM or protobuf header and links against nothing of Tessel's; everything
// it sees of Tessel is in include/tessel/Extension/.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_EXTENSION_TYPES_H
#define TESSEL_EXTENSION_TYPES_H

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace tessel::ext {

/// An element type by the runtime's name: "f32", "f16", "bf16", "i64",
/// "i32", "bool".
using DType = std::string;

/// A ranked, statically shaped tensor type.
struct TensorType {
  DType dtype = "f32";
  std::vector<int64_t> shape;

  int64_t numel() const {
    int64_t n = 1;
    for (int64_t d : shape)
      n *= d;
    return n;
  }
  bool operator==(const TensorType &o) const {
    return dtype == o.dtype && shape == o.shape;
  }
  bool operator!=(const TensorType &o) const { return !(*this == o); }
};

/// One attribute of a custom op: integers, floats or a string. A single
/// number is a list of one.
struct AttrValue {
  enum class Kind { Ints, Floats, Str };
  Kind kind = Kind::Ints;
  std::vector<int64_t> ints;
  std::vector<double> floats;
  std::string str;

  static AttrValue ofInt(int64_t v) { return {Kind::Ints, {v}, {}, {}}; }
  static AttrValue ofInts(std::vector<int64_t> v) {
    return {Kind::Ints, std::move(v), {}, {}};
  }
  static AttrValue ofFloat(double v) { return {Kind::Floats, {}, {v}, {}}; }
  static AttrValue ofStr(std::string v) {
    return {Kind::Str, {}, {}, std::move(v)};
  }
};

/// A custom op's attributes by name.
using Attrs = std::map<std::string, AttrValue>;

/// attrs[name] as one float (a float or an integer), or `dflt`.
inline double floatAttr(const Attrs &attrs, const std::string &name,
                        double dflt) {
  auto it = attrs.find(name);
  if (it == attrs.end())
    return dflt;
  if (it->second.kind == AttrValue::Kind::Floats &&
      it->second.floats.size() == 1)
    return it->second.floats[0];
  if (it->second.kind == AttrValue::Kind::Ints && it->second.ints.size() == 1)
    return static_cast<double>(it->second.ints[0]);
  return dflt;
}

/// "f32[2, 3]": for messages.
inline std::string toString(const TensorType &t) {
  std::string s = t.dtype + "[";
  for (size_t i = 0; i < t.shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(t.shape[i]);
  return s + "]";
}

} // namespace tessel::ext

#endif // TESSEL_EXTENSION_TYPES_H
