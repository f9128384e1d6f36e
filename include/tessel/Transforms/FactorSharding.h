//===- FactorSharding.h - dim shardings <-> factor shardings ----*- C++ -*-===//
//
// The arithmetic that propagation and partitioning share: projecting the
// axes that split a (possibly compound) tensor dim onto the factors of a
// #tessel.rule and back, the pending reduction a reduction factor leaves, and
// sizes in bytes for the cost model.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_TRANSFORMS_FACTORSHARDING_H
#define TESSEL_TRANSFORMS_FACTORSHARDING_H

#include "dialects/tessel/TesselOps.h"

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>

namespace mlir::tessel {

/// Mesh axes, major to minor.
using AxisList = SmallVector<StringAttr, 2>;
/// The size of a mesh axis.
using AxisSizeFn = llvm::function_ref<int64_t(StringAttr)>;

/// The number of shards `axes` make.
int64_t getNumShards(ArrayRef<StringAttr> axes, AxisSizeFn axisSize);

/// Projects the axes that split a dim onto the factors the dim is made of
/// (`factorSizes`, major to minor). Axes go to the major factor while they
/// divide what is left of it; the next factor takes axes only once the
/// previous one is split completely (otherwise a shard would not be a
/// contiguous block of the dim). Returns one axis list per factor; sets
/// `*complete` to whether every axis found a factor.
SmallVector<AxisList> projectDimToFactors(ArrayRef<int64_t> factorSizes,
                                          ArrayRef<StringAttr> axes,
                                          AxisSizeFn axisSize,
                                          bool *complete = nullptr);

/// The inverse: the axes of a dim made of factors `factorSizes` split by
/// `factorAxes`. A minor factor's axes count only when every more major
/// factor is split completely; they are dropped otherwise.
AxisList projectFactorsToDim(ArrayRef<int64_t> factorSizes,
                             ArrayRef<AxisList> factorAxes,
                             AxisSizeFn axisSize);

/// Padded dims made of several factors (a padded batch merged with the
/// sequence, [B (pad p), T] -> [B*T]): the pad belongs to the major factor,
/// the only one split, and the dim's pad is that factor's pad times the
/// minor factors' sizes (p*T: whole rows of the minor factors).
/// `factorPadOfDim`: the major factor's pad of a dim of `dimPad` over factors
/// `factorSizes`, or nullopt where the pad is no whole number of rows.
std::optional<int64_t> factorPadOfDim(ArrayRef<int64_t> factorSizes,
                                      int64_t dimPad);
/// `dimPadOfFactor`: the dim's pad when its major factor has `factorPad`
/// and is split by `factorAxes[0]` alone (the minor factors unsplit); 0
/// otherwise.
int64_t dimPadOfFactor(ArrayRef<int64_t> factorSizes,
                       ArrayRef<AxisList> factorAxes, int64_t factorPad);

/// The pending reduction that sharding a reduction factor of `op` leaves in
/// its results, as the op declares it through
/// ShardingRuleOpInterface::getReductionKind: max for reduce_max, mean for
/// reduce_mean and global_avg_pool, sum for matmul, gemm, reduce_sum, conv2d
/// and for any other op that keeps the interface's default. Sum for an op
/// without the interface (it has no rule, so nothing to shard).
ReductionKind getReductionKind(Operation *op);

/// The size of a value of type `type` in bytes (1 per i1 element).
int64_t getSizeInBytes(Type type);

/// `{"a", "b"}`, for diagnostics.
std::string formatAxes(ArrayRef<StringAttr> axes);

} // namespace mlir::tessel

#endif // TESSEL_TRANSFORMS_FACTORSHARDING_H
