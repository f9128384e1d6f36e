//===- ImportUtil.h - what op importers share -------------------*- C++ -*-===//
//
// Small helpers of the op importers (OpImporters.cpp, ComposedImporters.cpp,
// SequenceImporters.cpp):
// attributes, creating one-result ops, defining outputs.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_LIB_IMPORT_IMPORTUTIL_H
#define TESSEL_LIB_IMPORT_IMPORTUTIL_H

#include "ImporterImpl.h"

#include "dialects/tessel/Verifiers.h"

namespace mlir::tessel::detail {

inline NamedAttribute named(NodeContext &c, StringRef name, Attribute value) {
  return c.getBuilder().getNamedAttr(name, value);
}

inline Attribute i64Attr(NodeContext &c, int64_t v) {
  return c.getBuilder().getI64IntegerAttr(v);
}

inline Attribute arrayAttr(NodeContext &c, ArrayRef<int64_t> v) {
  return c.getBuilder().getDenseI64ArrayAttr(v);
}

/// Defines output 0 from a created single-result op.
inline LogicalResult defineFrom(NodeContext &c, FailureOr<Operation *> op,
                                int32_t dtype) {
  if (failed(op))
    return failure();
  c.setOutput(0, (*op)->getResult(0), dtype);
  return success();
}

/// The single result of a created op.
template <typename OpTy>
inline FailureOr<Value> createValue(NodeContext &c, ValueRange operands,
                                    ArrayRef<NamedAttribute> attrs = {}) {
  auto op = c.create<OpTy>(operands, attrs);
  if (failed(op))
    return failure();
  return (*op)->getResult(0);
}

/// Defines output 0 as `folded` when there is one. False otherwise: the
/// caller builds ops.
inline bool setFolded(NodeContext &c, std::optional<ConstTensor> folded) {
  if (!folded)
    return false;
  c.setConst(0, std::move(*folded));
  return true;
}

/// The values of inputs [0, n), less omitted optional ones.
inline FailureOr<SmallVector<Value>> getValues(NodeContext &c, unsigned n) {
  SmallVector<Value> values;
  for (unsigned i = 0; i < n; ++i) {
    if (!c.hasInput(i))
      continue;
    auto v = c.getValue(i);
    if (failed(v))
      return failure();
    values.push_back(*v);
  }
  return values;
}

inline LogicalResult requireFloat(NodeContext &c, unsigned i) {
  if (!c.hasInput(i))
    return c.error("needs input " + Twine(i) + " (it has " +
                   Twine(c.getNumInputs()) + ")");
  if (!isFloatDType(c.getDType(i)))
    return c.error("input " + Twine(i) + " must be a float tensor, not " +
                   getDTypeName(c.getDType(i)));
  return success();
}

/// `v` reshaped to `shape` (same element type).
inline FailureOr<Value> reshapeValue(NodeContext &c, Value v,
                                     ArrayRef<int64_t> shape) {
  auto t = cast<RankedTensorType>(v.getType());
  if (t.getShape() == shape)
    return v;
  auto op = c.create<ReshapeOp>(
      {v}, {}, {RankedTensorType::get(shape, t.getElementType())});
  if (failed(op))
    return failure();
  return (*op)->getResult(0);
}

/// Normalises `axes` against `rank` and sorts them.
inline LogicalResult
normalizeAxes(NodeContext &c, SmallVectorImpl<int64_t> &axes, int64_t rank) {
  for (int64_t &a : axes) {
    auto n = c.normalizeAxis(a, rank, "axis");
    if (failed(n))
      return failure();
    a = *n;
  }
  llvm::sort(axes);
  return success();
}

/// `given` axes normalised against `rank`, in their order (Pad's and
/// Resize's `axes`), or every dim when there are none.
inline FailureOr<SmallVector<int64_t>>
axesOrAll(NodeContext &c, const std::optional<SmallVector<int64_t>> &given,
          int64_t rank) {
  SmallVector<int64_t> axes;
  if (!given) {
    for (int64_t d = 0; d < rank; ++d)
      axes.push_back(d);
    return axes;
  }
  for (int64_t axis : *given) {
    auto n = c.normalizeAxis(axis, rank, "axis");
    if (failed(n))
      return failure();
    axes.push_back(*n);
  }
  return axes;
}

/// The dims a Reduce* node reduces, sorted and unique: its `axes` input
/// (`axesFromInput`: ReduceSum from opset 13, the others from 18) or
/// attribute, every dim when it gives none; std::nullopt when it gives none
/// and sets noop_with_empty_axes (the node reduces nothing).
inline FailureOr<std::optional<SmallVector<int64_t>>>
getReduceAxes(NodeContext &c, bool axesFromInput) {
  int64_t rank = c.getRank(0);
  SmallVector<int64_t> axes;
  if (axesFromInput && c.hasInput(1)) {
    auto a = c.getConstInts(1, "axes");
    if (failed(a))
      return failure();
    axes = *a;
  } else if (!axesFromInput) {
    if (auto a = c.getInts("axes"))
      axes = *a;
  }
  if (axes.empty()) {
    if (axesFromInput && c.getInt("noop_with_empty_axes", 0))
      return std::optional<SmallVector<int64_t>>();
    for (int64_t k = 0; k < rank; ++k)
      axes.push_back(k);
  }
  if (failed(normalizeAxes(c, axes, rank)))
    return failure();
  axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
  return std::optional<SmallVector<int64_t>>(std::move(axes));
}

/// Whether `sizes` split dim `axis` of size `dim` (each in [0, dim], summing
/// to it); a node error naming them otherwise.
inline LogicalResult checkSplitSizes(NodeContext &c, ArrayRef<int64_t> sizes,
                                     int64_t dim, int64_t axis) {
  // Summed without overflow: every size in [0, what is left of dim].
  int64_t total = 0;
  for (int64_t s : sizes) {
    if (s < 0 || s > dim - total) {
      total = -1;
      break;
    }
    total += s;
  }
  if (total != dim)
    return c.error("split sizes " + formatShape(sizes) +
                   " do not add up to dim " + Twine(axis) + " (" + Twine(dim) +
                   ")");
  return success();
}

/// `x` split along `axis` into pieces of `sizes` (checked): one
/// tessel.split, or `x` itself for one piece; empty pieces are refused.
inline FailureOr<SmallVector<Value>>
splitValue(NodeContext &c, Value x, int64_t axis, ArrayRef<int64_t> sizes) {
  if (llvm::is_contained(sizes, 0))
    return c.error("empty split pieces " + formatShape(sizes) +
                   " are not supported");
  if (sizes.size() == 1)
    return SmallVector<Value>{x};
  auto op = c.create<SplitOp>({x},
                              {named(c, "dim", i64Attr(c, axis)),
                               named(c, "sizes", arrayAttr(c, sizes))},
                              {}, sizes.size());
  if (failed(op))
    return failure();
  return SmallVector<Value>((*op)->result_begin(), (*op)->result_end());
}

// Importers of ONNX ops composed of existing tessel ops
// (ComposedImporters.cpp); "Axes" ones take `axes` as an input (opset 18).
LogicalResult importPad(NodeContext &c);
LogicalResult importScatterND(NodeContext &c);
LogicalResult importScatterElements(NodeContext &c);
LogicalResult importInstanceNormalization(NodeContext &c);
LogicalResult importReduceL1(NodeContext &c);
LogicalResult importReduceL1Axes(NodeContext &c);
LogicalResult importReduceL2(NodeContext &c);
LogicalResult importReduceL2Axes(NodeContext &c);
LogicalResult importReduceSumSquare(NodeContext &c);
LogicalResult importReduceSumSquareAxes(NodeContext &c);
LogicalResult importReduceLogSum(NodeContext &c);
LogicalResult importReduceLogSumAxes(NodeContext &c);
LogicalResult importReduceLogSumExp(NodeContext &c);
LogicalResult importReduceLogSumExpAxes(NodeContext &c);
LogicalResult importReduceMin(NodeContext &c);
LogicalResult importReduceMinAxes(NodeContext &c);
LogicalResult importArgMax(NodeContext &c);
LogicalResult importArgMin(NodeContext &c);
LogicalResult importHardSigmoid(NodeContext &c);
LogicalResult importElu(NodeContext &c);
LogicalResult importCelu(NodeContext &c);
LogicalResult importSelu(NodeContext &c);
LogicalResult importResize(NodeContext &c);
LogicalResult importEinsum(NodeContext &c);
LogicalResult importTile(NodeContext &c);
LogicalResult importTopK(NodeContext &c);
LogicalResult importConvTranspose(NodeContext &c);

// Importers of ONNX's sequence ops (SequenceImporters.cpp).
LogicalResult importSplitToSequence(NodeContext &c);
LogicalResult importSequenceConstruct(NodeContext &c);
LogicalResult importSequenceAt(NodeContext &c);
LogicalResult importSequenceLength(NodeContext &c);
LogicalResult importConcatFromSequence(NodeContext &c);

} // namespace mlir::tessel::detail

#endif // TESSEL_LIB_IMPORT_IMPORTUTIL_H
