//===- Verifiers.h - verification of sharding specs -------------*- C++ -*-===//

#ifndef TESSEL_DIALECT_VERIFIERS_H
#define TESSEL_DIALECT_VERIFIERS_H

#include "dialects/tessel/TesselOps.h"

namespace mlir::tessel {

/// Verifies `sharding` as the spec of a value of type `type` (C2-C4 of
/// #tessel.sharding): the mesh exists (looked up from `anchor`), every axis is
/// in it, there is one dim spec per dim, and every split dim divides evenly
/// or has a pad. Errors are emitted on `anchor` and name `valueDesc`.
LogicalResult verifyShardingForType(TensorShardingAttr sharding, Type type,
                                    Operation *anchor, StringRef valueDesc);

/// Verifies the `tessel.sharding` attribute `value` of `op`: one spec for a
/// single-result op, an array of one spec per result otherwise.
LogicalResult verifyResultShardings(Operation *op, Attribute value);

/// The most devices a mesh may have (2^31): the product of every axis size
/// is checked against it, so that products of axis sizes (shard counts,
/// group sizes) can never overflow, whatever the input.
constexpr int64_t kMaxMeshDevices = int64_t(1) << 31;

/// The product of `sizes` (mesh axis sizes), or nullopt when one is not
/// positive or the product exceeds kMaxMeshDevices. IR is untrusted input
/// (tessel-opt reads it) and op verifiers may run before the mesh's own.
std::optional<int64_t> checkedShardCount(ArrayRef<int64_t> sizes);

/// The output size of a window of `k` (dilated) over `size` padded by `lo`
/// and `hi` (strides and dilations >= 1, checked before), as convolutions
/// and poolings compute it. With `ceil`, a last window that would start in
/// the end padding is dropped (PyTorch's rule, ONNX's since opset 19);
/// `droppedLast`, where given, says whether one was.
int64_t windowOutput(int64_t size, int64_t lo, int64_t hi, int64_t k,
                     int64_t stride, int64_t dilation, bool ceil,
                     bool *droppedLast = nullptr);

/// A shape as diagnostics print it: "[2, 3]", "[?, 3]".
std::string formatShape(ArrayRef<int64_t> shape);

} // namespace mlir::tessel

#endif // TESSEL_DIALECT_VERIFIERS_H
