//===- FusedProgram.h - fused_elementwise's per-element program -*- C++ -*-===//
//
// The `program` of a fused_elementwise instruction (dialects/tessel/
// TesselOps.td), decoded and checked once by the load-time checks and by
// both backends' kernels (cpu/Fused.cpp, cuda/Fused.cu): per instruction
// [kind, a, b, flag], `kind` a unary or binary scalar op of f32 (the op
// table's TESSEL_RUNTIME_UNARY_SCALAR_OPS without attributes but gelu's
// form, TESSEL_RUNTIME_BINARY_SCALAR_OPS but the integer ones) or a cast
// between f32, bf16 and f16, `a` and `b` the values it reads (b = -1 for a
// unary op), `flag` gelu's tanh form or the cast's target (0 f32, 1 bf16,
// 2 f16). Values 0..inputs-1 are the inputs, then one per instruction; the
// result is the last. An input is the result's shape (Whole), one element
// (Scalar), or the result's trailing dims repeated (Period: element e of
// the result reads e % period).
//
// Each value has a type: an input its dtype (f32, bf16 or f16), a cast its
// target, every other instruction f32, whose operands must be f32. The
// kernels hold every value as the f32 it is exactly (a half widened when
// loaded, a cast to a half rounding to nearest even) and store the result
// in its type, which is the last instruction's.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_RUNTIME_FUSEDPROGRAM_H
#define TESSEL_RUNTIME_FUSEDPROGRAM_H

#include "tessel/runtime/DType.h"
#include "tessel/runtime/OpKind.h"
#include "tessel/runtime/Program.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace tessel::runtime {

struct FusedInstruction {
  OpKind kind = OpKind::Add;
  int a = 0, b = -1;
  /// gelu's tanh form.
  bool flag = false;
  /// The value's type: a cast's target, else F32.
  DType type = DType::F32;
};

struct FusedInput {
  enum Kind : int { Whole, Scalar, Period } kind = Whole;
  int64_t period = 0;
  DType dtype = DType::F32;
};

/// A cast instruction's flag for its target type, or -1 for a type a
/// program does not hold.
inline int fusedCastCode(DType t) {
  return t == DType::F32 ? 0 : t == DType::BF16 ? 1 : t == DType::F16 ? 2 : -1;
}

struct FusedProgram {
  /// The most instructions a program holds.
  static constexpr int kMaxInstructions = 32;
  std::vector<FusedInstruction> code;
  std::vector<FusedInput> inputs;
};

/// 1 or 2 for a kind a program may apply (its operand count), else 0.
inline int fusedArity(OpKind k) {
  switch (k) {
#define TESSEL_FUSED_UNARY(Kind, Types, SetMembers)                            \
  case OpKind::Kind:                                                           \
    return (#Types[0] != 'B' && (sizeof(#SetMembers) == 1 ||                   \
                                 OpKind::Kind == OpKind::Gelu))                \
               ? 1                                                             \
               : 0;
    TESSEL_RUNTIME_UNARY_SCALAR_OPS(TESSEL_FUSED_UNARY)
#undef TESSEL_FUSED_UNARY
#define TESSEL_FUSED_BINARY(Kind, Types)                                       \
  case OpKind::Kind:                                                           \
    return #Types[0] != 'I' ? 2 : 0;
    TESSEL_RUNTIME_BINARY_SCALAR_OPS(TESSEL_FUSED_BINARY)
#undef TESSEL_FUSED_BINARY
  case OpKind::Cast:
    return 1;
  default:
    return 0;
  }
}

/// The `program` attribute of a fused_elementwise instruction (empty when
/// absent or not integers).
inline std::vector<int64_t> fusedProgramOf(const Op &op) {
  auto it = op.attrs.find("program");
  if (it == op.attrs.end() || it->second.kind != AttrValue::Kind::Ints)
    return {};
  return it->second.ints;
}

/// Decodes `ints` for inputs of `shapes` and `dtypes` and a result of
/// `result` and `resultType`; an empty string when the program fits them,
/// else what does not.
inline std::string decodeFusedProgram(const std::vector<int64_t> &ints,
                                      const std::vector<Shape> &shapes,
                                      const std::vector<DType> &dtypes,
                                      const Shape &result, DType resultType,
                                      FusedProgram &p) {
  p = FusedProgram{};
  if (ints.empty() || ints.size() % 4 != 0 ||
      ints.size() / 4 > static_cast<size_t>(FusedProgram::kMaxInstructions))
    return "program must hold 1 to " +
           std::to_string(FusedProgram::kMaxInstructions) +
           " instructions of 4 integers, got " + std::to_string(ints.size()) +
           " integers";
  const int64_t numel = numElements(result);
  for (size_t i = 0; i < shapes.size(); ++i) {
    const Shape &s = shapes[i];
    FusedInput in;
    in.dtype = i < dtypes.size() ? dtypes[i] : DType::Bool;
    if (fusedCastCode(in.dtype) < 0)
      return "input " + std::to_string(i) + " is " + dtypeName(in.dtype) +
             ": an input is f32, bf16 or f16";
    const int64_t n = numElements(s);
    if (s == result) {
      in.kind = FusedInput::Whole;
    } else if (n == 1) {
      in.kind = FusedInput::Scalar;
    } else {
      size_t lead = 0;
      while (lead < s.size() && s[lead] == 1)
        ++lead;
      const size_t rank = s.size() - lead;
      if (rank > result.size() ||
          !std::equal(s.begin() + lead, s.end(), result.end() - rank) ||
          n == 0 || numel % n != 0)
        return "input " + std::to_string(i) + " has shape " + shapeToString(s) +
               ": not the result's " + shapeToString(result) +
               ", one element, or the result's trailing dims";
      in.kind = FusedInput::Period;
      in.period = n;
    }
    p.inputs.push_back(in);
  }
  const int64_t inputs = static_cast<int64_t>(shapes.size());
  auto typeOf = [&](int64_t v) {
    return v < inputs ? p.inputs[v].dtype : p.code[v - inputs].type;
  };
  for (size_t i = 0; i < ints.size() / 4; ++i) {
    const int64_t *w = &ints[4 * i];
    auto kind = opKindFromInt(w[0] >= 0 && w[0] <= 1 << 20 ? int(w[0]) : -1);
    const int arity = kind ? fusedArity(*kind) : 0;
    const std::string at = "instruction " + std::to_string(i) + ": ";
    if (!arity)
      return at + "kind " + std::to_string(w[0]) +
             " is no unary or binary f32 scalar op nor a cast";
    const int64_t defined = inputs + static_cast<int64_t>(i);
    if (w[1] < 0 || w[1] >= defined ||
        (arity == 2 ? (w[2] < 0 || w[2] >= defined) : w[2] != -1))
      return at + "reads values " + std::to_string(w[1]) + ", " +
             std::to_string(w[2]) + " of the " + std::to_string(defined) +
             " defined before it";
    FusedInstruction ins{*kind, static_cast<int>(w[1]),
                         static_cast<int>(w[2]), false, DType::F32};
    if (*kind == OpKind::Cast) {
      if (w[3] < 0 || w[3] > 2)
        return at + "cast to " + std::to_string(w[3]) +
               ": the target is 0 (f32), 1 (bf16) or 2 (f16)";
      ins.type = w[3] == 0 ? DType::F32 : w[3] == 1 ? DType::BF16 : DType::F16;
    } else {
      if (w[3] != 0 && !(w[3] == 1 && *kind == OpKind::Gelu))
        return at + "flag " + std::to_string(w[3]) + " is not 0";
      ins.flag = w[3] != 0;
      for (int k = 0; k < arity; ++k)
        if (typeOf(w[1 + k]) != DType::F32)
          return at + "reads value " + std::to_string(w[1 + k]) + " of " +
                 dtypeName(typeOf(w[1 + k])) + ": only a cast reads a half";
    }
    p.code.push_back(ins);
  }
  if (p.code.back().type != resultType)
    return std::string("the result is ") + dtypeName(resultType) +
           ", the last instruction's value " + dtypeName(p.code.back().type);
  return "";
}

} // namespace tessel::runtime

#endif // TESSEL_RUNTIME_FUSEDPROGRAM_H
