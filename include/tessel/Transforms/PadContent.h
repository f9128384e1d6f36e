//===- PadContent.h - what the pad of a padded shard holds ------*- C++ -*-===//
//
// A dim padded so that its axes divide it (`pad: auto`) holds extra entries
// on the last shards. Weights and graph inputs are zero there (filled on
// load); an op computes its own pad from its operands' (exp(0) = 1, log(0) =
// -inf). A sum over a padded dim is exact when each padded term is zero:
// a product with a zero pad and finite other factors.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_TRANSFORMS_PADCONTENT_H
#define TESSEL_TRANSFORMS_PADCONTENT_H

#include "mlir/IR/Value.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/STLFunctionalExtras.h"

namespace mlir::tessel {

enum class PadContent { Zero, Finite, Unknown };

/// What the padded entries of values hold, from their producers. `padded`
/// says whether a value has a padded dim (a value without one holds data,
/// finite; a splat zero constant is zero everywhere).
class PadContentAnalysis {
public:
  /// `padsOf` (optional): each dim's pad of a value (empty: none known),
  /// which lets a product of two padded values be shown zero factor by
  /// factor.
  explicit PadContentAnalysis(
      llvm::function_ref<bool(Value)> padded,
      llvm::function_ref<llvm::SmallVector<int64_t>(Value)> padsOf = nullptr)
      : padded(padded), padsOf(padsOf) {}

  PadContent get(Value v);
  /// The op that first made `v`'s pad non-zero (or not finite), if any.
  Operation *culprit(Value v);

private:
  llvm::function_ref<bool(Value)> padded;
  llvm::function_ref<llvm::SmallVector<int64_t>(Value)> padsOf;
  llvm::DenseMap<Value, std::pair<PadContent, Operation *>> memo;
  std::pair<PadContent, Operation *> compute(Value v);
  /// A matmul or gemm whose every padded result dim has a zero-padded
  /// operand holding that dim's factor.
  bool zeroByFactor(Operation *op);
};

} // namespace mlir::tessel

#endif // TESSEL_TRANSFORMS_PADCONTENT_H
