//===- ShardingRuleBuilder.h - building #tessel.rule ------------*- C++ -*-===//
//
// The helper every op's sharding rule is built with, and the factorisation of
// reshapes into compound factors. Kept public so unit tests and a user's own
// ops can use them.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_DIALECT_SHARDINGRULEBUILDER_H
#define TESSEL_DIALECT_SHARDINGRULEBUILDER_H

#include "dialects/tessel/TesselDialect.h"

#include "llvm/ADT/SmallVector.h"

namespace mlir::tessel {

/// What a factor allows.
enum class FactorKind {
  /// Sharding it shards every dim it maps to; no communication.
  Pass,
  /// It appears in operands only; sharding it makes the results partial.
  Reduction,
  /// It must stay replicated (a softmax axis, a sliced dim, a window dim).
  NeedReplication,
};

/// A dim of an operand (`isResult` false) or a result.
struct TensorDim {
  bool isResult;
  unsigned index;
  int64_t dim;
};
inline TensorDim operandDim(unsigned index, int64_t dim) {
  return {false, index, dim};
}
inline TensorDim resultDim(unsigned index, int64_t dim) {
  return {true, index, dim};
}

/// Builds an OpShardingRuleAttr factor by factor. Each added factor is
/// appended (as the minor-most part) to the dims it maps to.
class ShardingRuleBuilder {
public:
  ShardingRuleBuilder(MLIRContext *ctx, ArrayRef<int64_t> operandRanks,
                      ArrayRef<int64_t> resultRanks);
  /// Starts from `op`'s ranked tensor operands and results.
  explicit ShardingRuleBuilder(Operation *op);

  int64_t addFactor(int64_t size, ArrayRef<TensorDim> dims,
                    FactorKind kind = FactorKind::Pass);

  OpShardingRuleAttr build() const;

private:
  MLIRContext *ctx;
  SmallVector<SmallVector<SmallVector<int64_t>>> operands, results;
  SmallVector<int64_t> sizes, reduction, replication;
};

/// The factorisation of a row-major reshape of `in` to `out`.
struct ReshapeFactors {
  SmallVector<int64_t> sizes;
  /// Per factor: may it be sharded (false for the factors of a region where
  /// the two shapes share no common split, e.g. [2, 3] -> [3, 2]).
  SmallVector<bool> shardable;
  /// Per dim of `in` / `out`: its factors, major to minor (none for size 1).
  SmallVector<SmallVector<int64_t>> inDims, outDims;
};

/// Splits the dims of `in` and `out` (same element count) into the finest
/// common factors: [b, t, 768] -> [b, t, 12, 64] gives factors b, t, 12, 64
/// with in dim 2 = [12, 64].
ReshapeFactors factorReshape(ArrayRef<int64_t> in, ArrayRef<int64_t> out);

} // namespace mlir::tessel

#endif // TESSEL_DIALECT_SHARDINGRULEBUILDER_H
