//===- SequenceImporters.cpp - ONNX sequences, element by element ---------===//
//
// torch.onnx.export(dynamo=True, optimize=False) writes split and chunk as
// SplitToSequence and reads the pieces with SequenceAt at constant
// positions (the exports that keep a training-mode batch norm's meaning are
// optimize=False ones: docs/training.md). Tessel has no sequence type: a
// sequence is known element by element at import (ValueInfo::sequence), and
// each element is an ordinary tensor value.
//
// - SplitToSequence: one tessel.split (sizes from `split`: none, one per
//   element of size 1, squeezed unless keepdims; a scalar, pieces of that
//   size, the last smaller; a 1-D tensor, the sizes).
// - SequenceConstruct: its inputs.
// - SequenceAt: the element at a position known at import.
// - SequenceLength: the element count, a constant.
// - ConcatFromSequence: a concat of the elements (new_axis: of the elements
//   unsqueezed).
//
// A sequence reaching any other op or a graph output is refused, naming it
// (OnnxImporter.cpp).
//
//===----------------------------------------------------------------------===//

#include "ImportUtil.h"

namespace mlir::tessel::detail {
namespace {

/// The most elements a SplitToSequence may make (an untrusted model's dim
/// may be huge; each element is an SSA value).
constexpr int64_t kMaxElements = int64_t(1) << 16;

/// The sequence's one element type and rank, or a node error.
LogicalResult sameTypes(NodeContext &c, const NodeContext::Elements &xs) {
  for (size_t k = 1; k < xs.size(); ++k)
    if (xs[k]->dtype != xs[0]->dtype ||
        xs[k]->type.getRank() != xs[0]->type.getRank())
      return c.error("sequence element " + Twine(k) +
                     " has another element type or rank than element 0");
  return success();
}

} // namespace

LogicalResult importSplitToSequence(NodeContext &c) {
  ArrayRef<int64_t> in = c.getShape(0);
  auto axis = c.normalizeAxis(c.getInt("axis", 0), in.size(), "axis");
  if (failed(axis))
    return failure();
  const int64_t dim = in[*axis];
  if (dim < 0)
    return c.error("dim " + Twine(*axis) + " has no static size");
  SmallVector<int64_t> sizes;
  bool squeeze = false;
  auto tooMany = [&](int64_t n) {
    return c.error("splits dim " + Twine(*axis) + " into " + Twine(n) +
                   " elements, more than " + Twine(kMaxElements));
  };
  if (!c.hasInput(1)) {
    if (dim > kMaxElements)
      return tooMany(dim);
    sizes.assign(dim, 1);
    squeeze = c.getInt("keepdims", 1) == 0;
  } else {
    const ConstTensor *split = c.getConst(1);
    if (!split || split->shape.size() > 1 || split->isFloat())
      return c.error("split must be a scalar or 1-D tensor known at import");
    if (split->shape.empty()) {
      const int64_t piece = split->getInt(0);
      if (piece <= 0)
        return c.error("split " + Twine(piece) + " must be positive");
      if (dim / piece + (dim % piece != 0) > kMaxElements)
        return tooMany(dim / piece + (dim % piece != 0));
      for (int64_t at = 0; at < dim; at += piece)
        sizes.push_back(std::min(piece, dim - at));
    } else {
      if (split->size() > kMaxElements)
        return tooMany(split->size());
      for (int64_t k = 0; k < split->size(); ++k)
        sizes.push_back(split->getInt(k));
      if (failed(checkSplitSizes(c, sizes, dim, *axis)))
        return failure();
    }
  }
  if (sizes.empty())
    return c.error("splits an empty dim " + Twine(*axis));
  auto x = c.getValue(0);
  if (failed(x))
    return failure();
  auto pieces = splitValue(c, *x, *axis, sizes);
  if (failed(pieces))
    return failure();
  NodeContext::Elements elements;
  for (Value piece : *pieces) {
    if (squeeze) {
      SmallVector<int64_t> shape(in);
      shape.erase(shape.begin() + *axis);
      auto r = reshapeValue(c, piece, shape);
      if (failed(r))
        return failure();
      piece = *r;
    }
    elements.push_back(c.makeInfo(piece, c.getDType(0)));
  }
  c.setSequence(0, std::move(elements));
  return success();
}

LogicalResult importSequenceConstruct(NodeContext &c) {
  NodeContext::Elements elements;
  for (unsigned k = 0; k < c.getNumInputs(); ++k)
    elements.push_back(c.getInputInfo(k));
  if (failed(sameTypes(c, elements)))
    return failure();
  c.setSequence(0, std::move(elements));
  return success();
}

LogicalResult importSequenceAt(NodeContext &c) {
  const NodeContext::Elements &xs = *c.getSequence(0);
  const ConstTensor *at = c.getConst(1);
  if (!at || at->size() != 1)
    return c.error("position must be a scalar known at import");
  const int64_t n = xs.size(), given = at->getInt(0);
  const int64_t k = given < 0 ? given + n : given;
  if (k < 0 || k >= n)
    return c.error("position " + Twine(given) + " is outside the sequence's " +
                   Twine(n) + " elements");
  c.setOutputInfo(0, xs[k]);
  return success();
}

LogicalResult importSequenceLength(NodeContext &c) {
  c.setConst(0, ConstTensor::fromInts(
                    {static_cast<int64_t>(c.getSequence(0)->size())}, {}));
  return success();
}

LogicalResult importConcatFromSequence(NodeContext &c) {
  const NodeContext::Elements &xs = *c.getSequence(0);
  if (xs.empty())
    return c.error("concatenates an empty sequence");
  if (failed(sameTypes(c, xs)))
    return failure();
  const bool newAxis = c.getInt("new_axis", 0) != 0;
  const int64_t rank = xs[0]->type.getRank() + (newAxis ? 1 : 0);
  auto axis = c.normalizeAxis(c.getInt("axis", 0), rank, "axis");
  if (failed(axis))
    return failure();
  SmallVector<Value> operands;
  for (const auto &x : xs) {
    auto v = c.getValue(*x);
    if (failed(v))
      return failure();
    if (newAxis) {
      SmallVector<int64_t> shape(x->type.getShape());
      shape.insert(shape.begin() + *axis, 1);
      v = reshapeValue(c, *v, shape);
      if (failed(v))
        return failure();
    }
    operands.push_back(*v);
  }
  if (operands.size() == 1) {
    c.setOutput(0, operands[0], xs[0]->dtype);
    return success();
  }
  return defineFrom(
      c, c.create<ConcatOp>(operands, {named(c, "dim", i64Attr(c, *axis))}),
      xs[0]->dtype);
}

} // namespace mlir::tessel::detail
