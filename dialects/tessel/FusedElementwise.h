//===- FusedElementwise.h - what tessel.fused_elementwise may hold -*- C++ -*-===//
//
// The ops -tessel-fuse-elementwise folds into one tessel.fused_elementwise:
// the unary and binary elementwise ops of f32 whose math is one scalar
// function on both backends (the runtime's TESSEL_RUNTIME_UNARY_SCALAR_OPS
// and TESSEL_RUNTIME_BINARY_SCALAR_OPS over f32) and that have no
// attributes but gelu's form. FusedElementwiseTest checks each name against
// the runtime's lists. Besides them a program holds casts between f32, bf16
// and f16 (the casts -tessel-float-normalization puts around a half
// model's ops), so that a half chain reads and writes its halves once.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_DIALECT_FUSEDELEMENTWISE_H
#define TESSEL_DIALECT_FUSEDELEMENTWISE_H

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringRef.h"

namespace mlir::tessel {

inline llvm::ArrayRef<llvm::StringRef> fusableUnaryOps() {
  static const llvm::StringRef ops[] = {
      "neg",  "exp",        "log",        "sqrt",    "rsqrt", "tanh",
      "erf",  "sigmoid",    "relu",       "gelu",    "reciprocal",
      "abs",  "softplus",   "hard_swish", "sin",     "cos",   "softsign"};
  return ops;
}

inline llvm::ArrayRef<llvm::StringRef> fusableBinaryOps() {
  static const llvm::StringRef ops[] = {"add", "sub", "mul", "div",
                                        "pow", "max", "min", "fmod"};
  return ops;
}

/// 1 or 2 for a fusable unary or binary op's mnemonic, else 0.
inline int fusableArity(llvm::StringRef mnemonic) {
  if (llvm::is_contained(fusableUnaryOps(), mnemonic))
    return 1;
  if (llvm::is_contained(fusableBinaryOps(), mnemonic))
    return 2;
  return 0;
}

/// A cast instruction's flag for its target element type: 0 f32, 1 bf16,
/// 2 f16; -1 for a type a fused op does not hold.
inline int fusedCastCode(mlir::Type element) {
  return element.isF32() ? 0 : element.isBF16() ? 1 : element.isF16() ? 2 : -1;
}

/// Whether an input of shape `in` may feed a result of shape `out`: the
/// same shape, one element, or `out`'s trailing dims (broadcast over the
/// leading ones).
inline bool fitsFusedInput(llvm::ArrayRef<int64_t> in,
                           llvm::ArrayRef<int64_t> out) {
  int64_t n = 1;
  for (int64_t d : in)
    n *= d;
  if (n == 1 || in == out)
    return true;
  while (!in.empty() && in.front() == 1)
    in = in.drop_front();
  return in.size() <= out.size() && out.take_back(in.size()) == in;
}

} // namespace mlir::tessel

#endif // TESSEL_DIALECT_FUSEDELEMENTWISE_H
