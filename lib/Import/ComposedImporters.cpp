//===- ComposedImporters.cpp - ONNX ops built from existing tessel ops ----===//
//
// ONNX operators that need no op of their own: each is written with tessel
// ops that already have sharding rules, gradients and kernels on both
// backends, so the operator gets all three.
//
// - Pad: slices (negative pads), concats of an expanded fill (constant) or a
//   gather of constant indices along each padded dim (reflect, edge, wrap).
// - ScatterND and ScatterElements with indices known at import: one gather
//   from the data and the updates concatenated, whose constant index map
//   takes each element from the data or from the update that writes it.
// - InstanceNormalization: layer_norm over the spatial dims, then the
//   per-channel scale and bias.
// - ReduceL1, ReduceL2, ReduceSumSquare, ReduceLogSum, ReduceLogSumExp,
//   ReduceMin: reduce_sum / reduce_max around elementwise ops.
// - ArgMax and ArgMin: the first (or last) index where the input equals its
//   reduce_max (reduce min), from a compare, a where and a reduce_max.
// - HardSigmoid, Elu, Celu, Selu: elementwise ops (which the elementwise
//   fusion makes one kernel again).
// - Einsum: per operand, a reduce_sum of the labels nothing else needs; per
//   pair, transposes and reshapes around one matmul.
// - ConvTranspose (1-D, 2-D): conv2d_backward_data, the gradient of the
//   convolution it transposes, and the bias.
// - Resize with scales or sizes known at import: per resized dim, gathers
//   of constant source indices times constant weights (1, 2 or 4 taps).
//
//===----------------------------------------------------------------------===//

#include "ImportUtil.h"

#include "dialects/tessel/Verifiers.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/Sequence.h"
#include "llvm/Support/FormatVariadic.h"

#include <cctype>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>

using namespace mlir;
using namespace mlir::tessel;
using namespace mlir::tessel::detail;

namespace {

/// An i64 constant (a weight named `name` when it is large).
FailureOr<Value> constantI64(NodeContext &c, ArrayRef<int64_t> values,
                             ArrayRef<int64_t> shape, const Twine &name) {
  return c.materialize(ConstTensor::fromInts(values, shape), name.str());
}

FailureOr<Value> compareValues(NodeContext &c, Value a, Value b,
                               ComparePredicate p) {
  return createValue<CompareOp>(
      c, {a, b},
      {named(c, "predicate", ComparePredicateAttr::get(c.getContext(), p))});
}

FailureOr<Value> reduceValue(NodeContext &c, bool isMax, Value x,
                             ArrayRef<int64_t> dims, bool keep) {
  SmallVector<NamedAttribute> attrs = {named(c, "dims", arrayAttr(c, dims))};
  if (keep)
    attrs.push_back(named(c, "keep_dims", c.getBuilder().getUnitAttr()));
  return isMax ? createValue<ReduceMaxOp>(c, {x}, attrs)
               : createValue<ReduceSumOp>(c, {x}, attrs);
}

/// -x: neg for floats, 0 - x for integers (neg is a float op).
FailureOr<Value> negate(NodeContext &c, Value x) {
  Type et = cast<RankedTensorType>(x.getType()).getElementType();
  if (isa<FloatType>(et))
    return createValue<NegOp>(c, {x});
  return createValue<SubOp>(c, {c.scalarConstant(0, et), x});
}

/// |x|: abs for floats, max(x, -x) for integers (abs is a float op).
FailureOr<Value> absolute(NodeContext &c, Value x) {
  if (isa<FloatType>(cast<RankedTensorType>(x.getType()).getElementType()))
    return createValue<AbsOp>(c, {x});
  auto neg = negate(c, x);
  if (failed(neg))
    return failure();
  return createValue<MaxOp>(c, {x, *neg});
}

/// -max(-x): the reduce min of floats and integers.
FailureOr<Value> reduceMinValue(NodeContext &c, Value x, ArrayRef<int64_t> dims,
                                bool keep) {
  auto neg = negate(c, x);
  if (failed(neg))
    return failure();
  auto max = reduceValue(c, true, *neg, dims, keep);
  if (failed(max))
    return failure();
  return negate(c, *max);
}

//===----------------------------------------------------------------------===//
// Pad
//===----------------------------------------------------------------------===//

/// The source index of padded position `j` (in [-before, n + after)) of a
/// dim of `n` elements, numpy.pad's for each mode.
int64_t padSource(StringRef mode, int64_t j, int64_t n) {
  if (mode == "edge")
    return std::clamp<int64_t>(j, 0, n - 1);
  if (mode == "wrap")
    return ((j % n) + n) % n;
  // reflect: the dim mirrored about its first and last elements, periodic
  // with period 2 (n - 1).
  if (n == 1)
    return 0;
  const int64_t period = 2 * (n - 1);
  int64_t m = ((j % period) + period) % period;
  return m >= n ? period - m : m;
}

LogicalResult pad(NodeContext &c) {
  ArrayRef<int64_t> in = c.getShape(0);
  const int64_t rank = in.size();
  const std::string mode = c.getString("mode", "constant");
  if (mode != "constant" && mode != "reflect" && mode != "edge" &&
      mode != "wrap")
    return c.error("mode '" + mode +
                   "' is not one of constant, reflect, edge, wrap");
  auto pads = c.getConstInts(1, "pads");
  if (failed(pads))
    return failure();
  std::optional<SmallVector<int64_t>> given;
  if (c.hasInput(3)) {
    auto a = c.getConstInts(3, "axes");
    if (failed(a))
      return failure();
    given = std::move(*a);
  }
  auto normalized = axesOrAll(c, given, rank);
  if (failed(normalized))
    return failure();
  const SmallVector<int64_t> axes = std::move(*normalized);
  if (pads->size() != 2 * axes.size())
    return c.error(Twine(pads->size()) + " pads for " + Twine(axes.size()) +
                   " axes (it needs two per axis)");
  SmallVector<int64_t> before(rank, 0), after(rank, 0);
  SmallVector<bool> seen(rank, false);
  for (size_t k = 0; k < axes.size(); ++k) {
    if (seen[axes[k]])
      return c.error("axis " + Twine(axes[k]) + " is padded twice");
    seen[axes[k]] = true;
    before[axes[k]] = (*pads)[k];
    after[axes[k]] = (*pads)[k + axes.size()];
  }
  Type et = c.getType(0).getElementType();
  auto x = c.getValue(0);
  if (failed(x))
    return failure();
  Value cur = *x, fill;
  if (mode == "constant") {
    if (c.hasInput(2)) {
      if (c.getType(2).getNumElements() != 1)
        return c.error("constant_value " + formatShape(c.getShape(2)) +
                       " is not one element");
      if (const ConstTensor *known = c.getOperandConst(2)) {
        fill = c.scalarConstant(known->getDouble(0), et);
      } else {
        auto v = c.getValue(2);
        if (failed(v))
          return failure();
        auto scalar = reshapeValue(c, *v, {});
        if (failed(scalar))
          return failure();
        fill = *scalar;
      }
    } else {
      fill = c.scalarConstant(0, et);
    }
  }
  const std::string base = c.getNode().output(0);
  SmallVector<int64_t> shape(in);
  for (int64_t d = 0; d < rank; ++d) {
    int64_t b = before[d], e = after[d];
    if (b == 0 && e == 0)
      continue;
    if (b < 0 || e < 0) {
      const int64_t lo = std::max<int64_t>(-b, 0),
                    cut = std::max<int64_t>(-e, 0);
      if (lo > shape[d] - cut)
        return c.error("pads " + Twine(b) + ", " + Twine(e) + " on axis " +
                       Twine(d) + " remove more than its " + Twine(shape[d]) +
                       " elements");
      SmallVector<int64_t> starts(rank, 0), limits(shape), strides(rank, 1);
      starts[d] = lo;
      limits[d] = shape[d] - cut;
      auto s =
          createValue<SliceOp>(c, {cur},
                               {named(c, "starts", arrayAttr(c, starts)),
                                named(c, "limits", arrayAttr(c, limits)),
                                named(c, "strides", arrayAttr(c, strides))});
      if (failed(s))
        return failure();
      cur = *s;
      shape[d] = limits[d] - lo;
      b = std::max<int64_t>(b, 0);
      e = std::max<int64_t>(e, 0);
      if (b == 0 && e == 0)
        continue;
    }
    const int64_t n = shape[d];
    if (mode == "constant") {
      SmallVector<Value> pieces;
      auto piece = [&](int64_t size) -> LogicalResult {
        SmallVector<int64_t> s(shape);
        s[d] = size;
        auto op =
            c.create<ExpandOp>({fill}, {}, {RankedTensorType::get(s, et)});
        if (failed(op))
          return failure();
        pieces.push_back((*op)->getResult(0));
        return success();
      };
      if (b > 0 && failed(piece(b)))
        return failure();
      if (n > 0)
        pieces.push_back(cur);
      if (e > 0 && failed(piece(e)))
        return failure();
      if (pieces.size() == 1) {
        cur = pieces.front();
      } else {
        auto cat =
            createValue<ConcatOp>(c, pieces, {named(c, "dim", i64Attr(c, d))});
        if (failed(cat))
          return failure();
        cur = *cat;
      }
    } else {
      if (n == 0)
        return c.error("cannot pad axis " + Twine(d) + " of size 0 in mode '" +
                       mode + "'");
      SmallVector<int64_t> idx;
      for (int64_t j = -b; j < n + e; ++j)
        idx.push_back(padSource(mode, j, n));
      auto indices = constantI64(c, idx, {int64_t(idx.size())},
                                 base + ".pad_index" + Twine(d));
      if (failed(indices))
        return failure();
      auto g = createValue<GatherOp>(c, {cur, *indices},
                                     {named(c, "axis", i64Attr(c, d))});
      if (failed(g))
        return failure();
      cur = *g;
    }
    shape[d] = n + b + e;
  }
  c.setOutput(0, cur, c.getDType(0));
  return success();
}

//===----------------------------------------------------------------------===//
// ScatterND, ScatterElements
//===----------------------------------------------------------------------===//

/// Output 0 = gather(concat(data as [rows, rest...], updates as
/// [count, rest...]), map) reshaped to data's shape: map[r] is r, or rows + j
/// where update j writes row r (the last one when several do).
LogicalResult scatterByMap(NodeContext &c, ArrayRef<int64_t> map, int64_t rows,
                           int64_t count, ArrayRef<int64_t> rest) {
  ArrayRef<int64_t> dataShape = c.getShape(0);
  if (count == 0) {
    c.forward(0, 0);
    return success();
  }
  auto data = c.getValue(0), updates = c.getValue(2);
  if (failed(data) || failed(updates))
    return failure();
  SmallVector<int64_t> dataRows = {rows}, updateRows = {count};
  llvm::append_range(dataRows, rest);
  llvm::append_range(updateRows, rest);
  auto d = reshapeValue(c, *data, dataRows);
  auto u = reshapeValue(c, *updates, updateRows);
  if (failed(d) || failed(u))
    return failure();
  auto cat =
      createValue<ConcatOp>(c, {*d, *u}, {named(c, "dim", i64Attr(c, 0))});
  if (failed(cat))
    return failure();
  auto indices =
      constantI64(c, map, {rows}, c.getNode().output(0) + ".scatter_map");
  if (failed(indices))
    return failure();
  auto g = createValue<GatherOp>(c, {*cat, *indices},
                                 {named(c, "axis", i64Attr(c, 0))});
  if (failed(g))
    return failure();
  auto out = reshapeValue(c, *g, dataShape);
  if (failed(out))
    return failure();
  c.setOutput(0, *out, c.getDType(0));
  return success();
}

/// The indices of a scatter, which must be known at import.
FailureOr<const ConstTensor *> scatterIndices(NodeContext &c) {
  if (c.getString("reduction", "none") != "none")
    return c.error("reduction '" + c.getString("reduction", "none") +
                   "' is not supported (only 'none')");
  const ConstTensor *indices = c.getConst(1);
  if (!indices)
    return c.error("indices '" + c.getNode().input(1) +
                   "' must be known at compile time; here they are computed "
                   "from a graph input");
  if (c.getType(0).getNumElements() > kMaxFoldElements)
    return c.error("data " + formatShape(c.getShape(0)) + " has more than " +
                   Twine(kMaxFoldElements) +
                   " elements, the most a scatter's index map holds");
  return indices;
}

LogicalResult scatterND(NodeContext &c) {
  ArrayRef<int64_t> data = c.getShape(0), idx = c.getShape(1),
                    upd = c.getShape(2);
  const int64_t r = data.size(), q = idx.size();
  if (q < 1 || idx.back() < 1 || idx.back() > r)
    return c.error("indices " + formatShape(idx) + " do not index data " +
                   formatShape(data));
  const int64_t k = idx.back();
  SmallVector<int64_t> want(idx.drop_back());
  llvm::append_range(want, data.drop_front(k));
  if (upd != ArrayRef<int64_t>(want))
    return c.error("updates " + formatShape(upd) + " should be " +
                   formatShape(want) + " for indices " + formatShape(idx) +
                   " into data " + formatShape(data));
  auto indices = scatterIndices(c);
  if (failed(indices))
    return failure();
  const int64_t rows = getNumElements(data.take_front(k));
  const int64_t count = getNumElements(idx.drop_back());
  SmallVector<int64_t> map(rows);
  std::iota(map.begin(), map.end(), int64_t(0));
  for (int64_t j = 0; j < count; ++j) {
    int64_t row = 0;
    for (int64_t m = 0; m < k; ++m) {
      int64_t i = (*indices)->getInt(j * k + m), dim = data[m];
      if (i < -dim || i >= dim)
        return c.error("index " + Twine(i) + " is out of range for dim " +
                       Twine(m) + " of size " + Twine(dim));
      row = row * dim + (i < 0 ? i + dim : i);
    }
    map[row] = rows + j;
  }
  return scatterByMap(c, map, rows, count, data.drop_front(k));
}

LogicalResult scatterElements(NodeContext &c) {
  ArrayRef<int64_t> data = c.getShape(0), idx = c.getShape(1),
                    upd = c.getShape(2);
  const int64_t r = data.size();
  auto axis = c.normalizeAxis(c.getInt("axis", 0), r, "axis");
  if (failed(axis))
    return failure();
  if (int64_t(idx.size()) != r || idx != upd)
    return c.error("indices " + formatShape(idx) + " and updates " +
                   formatShape(upd) + " must have one shape of data's rank " +
                   Twine(r));
  for (int64_t d = 0; d < r; ++d)
    if (d != *axis && idx[d] > data[d])
      return c.error("indices " + formatShape(idx) + " exceed data " +
                     formatShape(data) + " on dim " + Twine(d));
  auto indices = scatterIndices(c);
  if (failed(indices))
    return failure();
  const int64_t rows = getNumElements(data), count = getNumElements(idx);
  SmallVector<int64_t> map(rows);
  std::iota(map.begin(), map.end(), int64_t(0));
  SmallVector<int64_t> pos(r, 0);
  for (int64_t j = 0; j < count; ++j) {
    // pos: the multi-index of element j of indices.
    for (int64_t d = r - 1, rem = j; d >= 0; --d) {
      pos[d] = rem % idx[d];
      rem /= idx[d];
    }
    const int64_t dim = data[*axis];
    int64_t i = (*indices)->getInt(j);
    if (i < -dim || i >= dim)
      return c.error("index " + Twine(i) + " is out of range for dim " +
                     Twine(*axis) + " of size " + Twine(dim));
    int64_t target = 0;
    for (int64_t d = 0; d < r; ++d)
      target = target * data[d] + (d == *axis ? (i < 0 ? i + dim : i) : pos[d]);
    map[target] = rows + j;
  }
  return scatterByMap(c, map, rows, count, {});
}

//===----------------------------------------------------------------------===//
// InstanceNormalization
//===----------------------------------------------------------------------===//

/// Whether `t` is known and every element equals `v`.
bool allEqual(const ConstTensor *t, double v) {
  if (!t)
    return false;
  for (int64_t k = 0; k < t->size(); ++k)
    if (t->getDouble(k) != v)
      return false;
  return true;
}

LogicalResult instanceNormalization(NodeContext &c) {
  for (unsigned i = 0; i < 3; ++i)
    if (failed(requireFloat(c, i)))
      return failure();
  ArrayRef<int64_t> in = c.getShape(0);
  const int64_t rank = in.size();
  if (rank < 3)
    return c.error("input " + formatShape(in) +
                   " needs a batch, a channel and spatial dims");
  const int64_t channels = in[1];
  for (unsigned i = 1; i < 3; ++i)
    if (c.getShape(i) != ArrayRef<int64_t>{channels})
      return c.error(StringRef(i == 1 ? "scale " : "bias ") +
                     formatShape(c.getShape(i)) + " is not one per channel (" +
                     Twine(channels) + ")");
  Type et = c.getType(0).getElementType();
  auto x = c.getValue(0);
  if (failed(x))
    return failure();
  // layer_norm over dims [2, rank) with a unit scale, no bias.
  SmallVector<int64_t> spatial(in.drop_front(2));
  auto unitType = RankedTensorType::get(spatial, et);
  Value unit = ConstantOp::create(
      c.getBuilder(), c.getLoc(), unitType,
      DenseElementsAttr::get(unitType, FloatAttr::get(et, 1.0)));
  auto y = createValue<LayerNormOp>(
      c, {*x, unit},
      {named(c, "axis", i64Attr(c, 2)),
       named(c, "epsilon",
             c.getBuilder().getF32FloatAttr(c.getFloat("epsilon", 1e-5f)))});
  if (failed(y))
    return failure();
  Value out = *y;
  SmallVector<int64_t> perChannel(rank, 1);
  perChannel[1] = channels;
  for (unsigned i = 1; i < 3; ++i) {
    if (allEqual(c.getConst(i), i == 1 ? 1.0 : 0.0))
      continue; // torch's group_norm export: ones and zeros.
    auto v = c.getValue(i);
    if (failed(v))
      return failure();
    auto shaped = reshapeValue(c, *v, perChannel);
    if (failed(shaped))
      return failure();
    auto r = i == 1 ? createValue<MulOp>(c, {out, *shaped})
                    : createValue<AddOp>(c, {out, *shaped});
    if (failed(r))
      return failure();
    out = *r;
  }
  c.setOutput(0, out, c.getDType(0));
  return success();
}

//===----------------------------------------------------------------------===//
// Reductions built from reduce_sum and reduce_max
//===----------------------------------------------------------------------===//

enum class Composed { L1, L2, SumSquare, LogSum, LogSumExp, Min };

template <Composed K, bool AxesFromInput>
LogicalResult reduceComposed(NodeContext &c) {
  const bool floatOnly =
      K == Composed::L2 || K == Composed::LogSum || K == Composed::LogSumExp;
  if (floatOnly && failed(requireFloat(c, 0)))
    return failure();
  if (!floatOnly && c.getDType(0) != kInt64 && c.getDType(0) != kInt32 &&
      failed(requireFloat(c, 0)))
    return failure();
  auto axes = getReduceAxes(c, AxesFromInput);
  if (failed(axes))
    return failure();
  auto x = c.getValue(0);
  if (failed(x))
    return failure();
  const bool keep = c.getInt("keepdims", 1) != 0;
  // No axes with noop_with_empty_axes: the elementwise part alone
  // (ONNX's reference reduces over no dims).
  const bool noop = !*axes;
  SmallVector<int64_t> dims = noop ? SmallVector<int64_t>() : **axes;
  Type et = c.getType(0).getElementType();
  FailureOr<Value> r = failure();
  switch (K) {
  case Composed::L1:
  case Composed::L2:
  case Composed::SumSquare: {
    auto e =
        K == Composed::L1 ? absolute(c, *x) : createValue<MulOp>(c, {*x, *x});
    if (failed(e))
      return failure();
    r = noop ? e : reduceValue(c, false, *e, dims, keep);
    if (succeeded(r) && K == Composed::L2)
      r = createValue<SqrtOp>(c, {*r});
    break;
  }
  case Composed::LogSum:
    r = noop ? *x : reduceValue(c, false, *x, dims, keep);
    if (succeeded(r))
      r = createValue<LogOp>(c, {*r});
    break;
  case Composed::Min:
    r = noop ? *x : reduceMinValue(c, *x, dims, keep);
    break;
  case Composed::LogSumExp: {
    if (noop) {
      r = *x;
      break;
    }
    // m + log(sum(exp(x - m))), m the row's max where finite, else 0 (a
    // row of -inf gives -inf, one with +inf gives +inf, as log(sum(exp(x)))).
    auto m = reduceValue(c, true, *x, dims, /*keep=*/true);
    if (failed(m))
      return failure();
    auto diff = createValue<SubOp>(c, {*m, *m});
    if (failed(diff))
      return failure();
    auto finite =
        compareValues(c, *diff, c.scalarConstant(0, et), ComparePredicate::EQ);
    if (failed(finite))
      return failure();
    auto shift =
        createValue<WhereOp>(c, {*finite, *m, c.scalarConstant(0, et)});
    if (failed(shift))
      return failure();
    auto centred = createValue<SubOp>(c, {*x, *shift});
    if (failed(centred))
      return failure();
    auto ex = createValue<ExpOp>(c, {*centred});
    if (failed(ex))
      return failure();
    auto sum = reduceValue(c, false, *ex, dims, /*keep=*/true);
    if (failed(sum))
      return failure();
    auto lg = createValue<LogOp>(c, {*sum});
    if (failed(lg))
      return failure();
    r = createValue<AddOp>(c, {*lg, *shift});
    if (succeeded(r) && !keep) {
      SmallVector<int64_t> shape;
      for (int64_t d = 0; d < c.getRank(0); ++d)
        if (!llvm::is_contained(dims, d))
          shape.push_back(c.getShape(0)[d]);
      r = reshapeValue(c, *r, shape);
    }
    break;
  }
  }
  if (failed(r))
    return failure();
  c.setOutput(0, *r, c.getDType(0));
  return success();
}

//===----------------------------------------------------------------------===//
// ArgMax, ArgMin
//===----------------------------------------------------------------------===//

/// The index of the first (select_last_index: last) extreme element along
/// `axis`: where x equals its reduce_max (reduce min), its index, elsewhere
/// dim (-1), reduced by min (max). A NaN is the extreme of its row, as in
/// PyTorch and numpy.
template <bool IsMax> LogicalResult importArgExtreme(NodeContext &c) {
  if (c.getDType(0) != kInt64 && c.getDType(0) != kInt32 &&
      failed(requireFloat(c, 0)))
    return failure();
  ArrayRef<int64_t> in = c.getShape(0);
  auto axis = c.normalizeAxis(c.getInt("axis", 0), in.size(), "axis");
  if (failed(axis))
    return failure();
  const int64_t dim = in[*axis];
  if (dim == 0)
    return c.error("axis " + Twine(*axis) + " has no elements");
  const bool last = c.getInt("select_last_index", 0) != 0;
  const bool keep = c.getInt("keepdims", 1) != 0;
  auto x = c.getValue(0);
  if (failed(x))
    return failure();
  auto m = IsMax ? reduceValue(c, true, *x, {*axis}, true)
                 : reduceMinValue(c, *x, {*axis}, true);
  if (failed(m))
    return failure();
  auto hit = compareValues(c, *x, *m, ComparePredicate::EQ);
  if (failed(hit))
    return failure();
  Type i64 = c.getBuilder().getI64Type();
  Value isHit = *hit;
  if (isFloatDType(c.getDType(0))) {
    // reduce_max skips NaNs: in a row that has one, the NaNs are the hits.
    auto nan = compareValues(c, *x, *x, ComparePredicate::NE);
    if (failed(nan))
      return failure();
    auto flag = createValue<WhereOp>(
        c, {*nan, c.scalarConstant(1, i64), c.scalarConstant(0, i64)});
    if (failed(flag))
      return failure();
    auto any = reduceValue(c, true, *flag, {*axis}, true);
    if (failed(any))
      return failure();
    auto rowHasNan =
        compareValues(c, *any, c.scalarConstant(0, i64), ComparePredicate::GT);
    if (failed(rowHasNan))
      return failure();
    auto hits = createValue<WhereOp>(c, {*rowHasNan, *nan, isHit});
    if (failed(hits))
      return failure();
    isHit = *hits;
  }
  SmallVector<int64_t> iotaShape(in.size(), 1), iota(dim);
  iotaShape[*axis] = dim;
  std::iota(iota.begin(), iota.end(), int64_t(0));
  auto positions =
      constantI64(c, iota, iotaShape, c.getNode().output(0) + ".arg_index");
  if (failed(positions))
    return failure();
  auto cand = createValue<WhereOp>(
      c, {isHit, *positions, c.scalarConstant(last ? -1 : dim, i64)});
  if (failed(cand))
    return failure();
  auto idx = last ? reduceValue(c, true, *cand, {*axis}, keep)
                  : reduceMinValue(c, *cand, {*axis}, keep);
  if (failed(idx))
    return failure();
  c.setOutput(0, *idx, kInt64);
  return success();
}

//===----------------------------------------------------------------------===//
// Activations
//===----------------------------------------------------------------------===//

/// max(0, min(1, alpha x + beta)).
LogicalResult hardSigmoid(NodeContext &c, float alpha, float beta) {
  if (failed(requireFloat(c, 0)))
    return failure();
  Type et = c.getType(0).getElementType();
  auto x = c.getValue(0);
  if (failed(x))
    return failure();
  auto ax = createValue<MulOp>(c, {*x, c.scalarConstant(alpha, et)});
  if (failed(ax))
    return failure();
  auto lin = createValue<AddOp>(c, {*ax, c.scalarConstant(beta, et)});
  if (failed(lin))
    return failure();
  auto hi = createValue<MinOp>(c, {*lin, c.scalarConstant(1, et)});
  if (failed(hi))
    return failure();
  auto y = createValue<MaxOp>(c, {*hi, c.scalarConstant(0, et)});
  if (failed(y))
    return failure();
  c.setOutput(0, *y, c.getDType(0));
  return success();
}

/// where(x > 0, x, alpha (exp(min(x, 0) / theta) - 1)) times gamma: Elu
/// (theta 1, gamma 1), Celu (theta alpha), Selu. exp reads min(x, 0), so
/// that the branch where does not take never overflows (its gradient would
/// be 0 * inf).
LogicalResult exponentialUnit(NodeContext &c, float alpha, float theta,
                              float gamma) {
  if (failed(requireFloat(c, 0)))
    return failure();
  Type et = c.getType(0).getElementType();
  auto x = c.getValue(0);
  if (failed(x))
    return failure();
  Value zero = c.scalarConstant(0, et);
  auto neg = createValue<MinOp>(c, {*x, zero});
  if (failed(neg))
    return failure();
  Value t = *neg;
  if (theta != 1.0f) {
    auto d = createValue<DivOp>(c, {t, c.scalarConstant(theta, et)});
    if (failed(d))
      return failure();
    t = *d;
  }
  auto e = createValue<ExpOp>(c, {t});
  if (failed(e))
    return failure();
  auto em1 = createValue<SubOp>(c, {*e, c.scalarConstant(1, et)});
  if (failed(em1))
    return failure();
  auto scaled = createValue<MulOp>(c, {*em1, c.scalarConstant(alpha, et)});
  if (failed(scaled))
    return failure();
  auto pos = compareValues(c, *x, zero, ComparePredicate::GT);
  if (failed(pos))
    return failure();
  auto y = createValue<WhereOp>(c, {*pos, *x, *scaled});
  if (succeeded(y) && gamma != 1.0f)
    y = createValue<MulOp>(c, {*y, c.scalarConstant(gamma, et)});
  if (failed(y))
    return failure();
  c.setOutput(0, *y, c.getDType(0));
  return success();
}

//===----------------------------------------------------------------------===//
// Resize
//===----------------------------------------------------------------------===//

/// One output coordinate's source position along a dim resized from `in` to
/// `out` elements by `scale` (ONNX's coordinate_transformation_mode).
/// align_corners divides by the resized length less one, which ONNX takes
/// as `in * scale` when the node gives scales (not the floored `out`).
double resizeSource(StringRef mode, double x, int64_t in, int64_t out,
                    double scale, bool fromScales) {
  if (mode == "align_corners") {
    const double length = fromScales ? double(in) * scale : double(out);
    return length <= 1 ? 0.0 : x * double(in - 1) / (length - 1);
  }
  if (mode == "asymmetric")
    return x / scale;
  if (mode == "pytorch_half_pixel")
    return out > 1 ? (x + 0.5) / scale - 0.5 : 0.0;
  return (x + 0.5) / scale - 0.5; // half_pixel
}

int64_t nearestIndex(StringRef mode, double v) {
  if (mode == "floor")
    return int64_t(std::floor(v));
  if (mode == "ceil")
    return int64_t(std::ceil(v));
  const double f = std::floor(v);
  if (v - f != 0.5)
    return int64_t(std::round(v));
  // A tie: round_prefer_ceil goes up, round_prefer_floor down.
  return int64_t(mode == "round_prefer_ceil" ? f + 1 : f);
}

/// Cubic convolution weight of distance t (Keys, coefficient a).
double cubicWeight(double t, double a) {
  t = std::fabs(t);
  if (t <= 1)
    return ((a + 2) * t - (a + 3)) * t * t + 1;
  if (t < 2)
    return ((a * t - 5 * a) * t + 8 * a) * t - 4 * a;
  return 0;
}

LogicalResult resize(NodeContext &c) {
  if (failed(requireFloat(c, 0)))
    return failure();
  ArrayRef<int64_t> in = c.getShape(0);
  const int64_t rank = in.size();
  const std::string mode = c.getString("mode", "nearest");
  const std::string coord =
      c.getString("coordinate_transformation_mode", "half_pixel");
  const std::string nearest = c.getString("nearest_mode", "round_prefer_floor");
  if (mode != "nearest" && mode != "linear" && mode != "cubic")
    return c.error("mode '" + mode + "' is not one of nearest, linear, cubic");
  if (coord != "half_pixel" && coord != "pytorch_half_pixel" &&
      coord != "align_corners" && coord != "asymmetric")
    return c.error("coordinate_transformation_mode '" + coord +
                   "' is not supported (half_pixel, pytorch_half_pixel, "
                   "align_corners, asymmetric are)");
  if (nearest != "round_prefer_floor" && nearest != "round_prefer_ceil" &&
      nearest != "floor" && nearest != "ceil")
    return c.error("nearest_mode '" + nearest + "' is not supported");
  if (c.getInt("antialias", 0))
    return c.error("antialias is not supported");
  if (c.getString("keep_aspect_ratio_policy", "stretch") != "stretch")
    return c.error("keep_aspect_ratio_policy '" +
                   c.getString("keep_aspect_ratio_policy", "stretch") +
                   "' is not supported (stretch is)");
  const bool excludeOutside = c.getInt("exclude_outside", 0) != 0;
  const double cubicA = c.getFloat("cubic_coeff_a", -0.75f);
  auto normalized = axesOrAll(c, c.getInts("axes"), rank);
  if (failed(normalized))
    return failure();
  const SmallVector<int64_t> axes = std::move(*normalized);
  // Scales (input 2) or sizes (input 3), one per axis, known at import.
  SmallVector<double> scale(rank, 1.0);
  SmallVector<int64_t> outShape(in);
  const bool hasSizes = c.hasInput(3) && c.getType(3).getNumElements() > 0;
  const bool hasScales = c.hasInput(2) && c.getType(2).getNumElements() > 0;
  if (hasSizes == hasScales)
    return c.error("needs exactly one of scales and sizes");
  if (hasSizes) {
    auto sizes = c.getConstInts(3, "sizes");
    if (failed(sizes))
      return failure();
    if (sizes->size() != axes.size())
      return c.error(Twine(sizes->size()) + " sizes for " + Twine(axes.size()) +
                     " axes");
    for (size_t k = 0; k < axes.size(); ++k) {
      if ((*sizes)[k] <= 0)
        return c.error("size " + Twine((*sizes)[k]) + " for axis " +
                       Twine(axes[k]) + " is not positive");
      outShape[axes[k]] = (*sizes)[k];
      scale[axes[k]] = double((*sizes)[k]) / double(in[axes[k]]);
    }
  } else {
    const ConstTensor *scales = c.getOperandConst(2);
    if (!scales)
      return c.error("scales must be known at import time; it depends on "
                     "values computed at run time");
    if (size_t(scales->size()) != axes.size())
      return c.error(Twine(scales->size()) + " scales for " +
                     Twine(axes.size()) + " axes");
    for (size_t k = 0; k < axes.size(); ++k) {
      const double s = scales->getDouble(k);
      if (!(s > 0) || !std::isfinite(s))
        return c.error("scale " + llvm::formatv("{0}", s).str() + " for axis " +
                       Twine(axes[k]) + " is not positive");
      scale[axes[k]] = s;
      outShape[axes[k]] = int64_t(std::floor(double(in[axes[k]]) * s));
      if (outShape[axes[k]] <= 0)
        return c.error("scale " + llvm::formatv("{0}", s).str() +
                       " leaves axis " + Twine(axes[k]) + " empty");
    }
  }
  auto x = c.getValue(0);
  if (failed(x))
    return failure();
  Value cur = *x;
  const std::string base = c.getNode().output(0);
  for (int64_t d : axes) {
    const int64_t n = in[d], m = outShape[d];
    if (n == m && scale[d] == 1.0)
      continue;
    // taps[k][j]: source index and weight of tap k of output j.
    const int taps = mode == "nearest" ? 1 : mode == "linear" ? 2 : 4;
    SmallVector<SmallVector<int64_t>> index(taps, SmallVector<int64_t>(m));
    SmallVector<SmallVector<double>> weight(taps, SmallVector<double>(m));
    for (int64_t j = 0; j < m; ++j) {
      double v = resizeSource(coord, double(j), n, m, scale[d], !hasSizes);
      if (mode == "nearest") {
        index[0][j] = std::clamp<int64_t>(nearestIndex(nearest, v), 0, n - 1);
        weight[0][j] = 1;
      } else if (mode == "linear") {
        v = std::clamp(v, 0.0, double(n - 1));
        const int64_t i0 = int64_t(std::floor(v));
        const double f = v - double(i0);
        index[0][j] = i0;
        index[1][j] = std::min(i0 + 1, n - 1);
        weight[0][j] = 1 - f;
        weight[1][j] = f;
      } else {
        const int64_t i0 = int64_t(std::floor(v));
        const double f = v - double(i0);
        double total = 0;
        for (int k = 0; k < 4; ++k) {
          const int64_t i = i0 - 1 + k;
          double w = cubicWeight(f - (k - 1), cubicA);
          if (excludeOutside && (i < 0 || i >= n))
            w = 0;
          index[k][j] = std::clamp<int64_t>(i, 0, n - 1);
          weight[k][j] = w;
          total += w;
        }
        if (excludeOutside && total != 0)
          for (int k = 0; k < 4; ++k)
            weight[k][j] /= total;
      }
    }
    SmallVector<int64_t> wShape(rank, 1);
    wShape[d] = m;
    Value sum;
    for (int k = 0; k < taps; ++k) {
      auto idx = constantI64(
          c, index[k], {m}, base + ".resize_index" + Twine(d) + "_" + Twine(k));
      if (failed(idx))
        return failure();
      auto g = createValue<GatherOp>(c, {cur, *idx},
                                     {named(c, "axis", i64Attr(c, d))});
      if (failed(g))
        return failure();
      Value term = *g;
      if (mode != "nearest") {
        ConstTensor w = ConstTensor::zeros(c.getDType(0), wShape);
        for (int64_t j = 0; j < m; ++j)
          w.set(j, weight[k][j]);
        auto wv = c.materialize(w, base + ".resize_weight" + std::to_string(d) +
                                       "_" + std::to_string(k));
        if (failed(wv))
          return failure();
        auto p = createValue<MulOp>(c, {term, *wv});
        if (failed(p))
          return failure();
        term = *p;
      }
      if (sum) {
        auto a = createValue<AddOp>(c, {sum, term});
        if (failed(a))
          return failure();
        term = *a;
      }
      sum = term;
    }
    cur = sum;
  }
  c.setOutput(0, cur, c.getDType(0));
  return success();
}

//===----------------------------------------------------------------------===//
// Einsum
//===----------------------------------------------------------------------===//

/// One operand of an einsum while it is built: its value and one label per
/// dim.
struct Labeled {
  Value value;
  std::string labels;
};

ArrayRef<int64_t> shapeOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getShape();
}

/// `x` with its dims in the order of `want` (a permutation of its labels).
FailureOr<Labeled> permuteTo(NodeContext &c, Labeled x, StringRef want) {
  if (x.labels == want)
    return x;
  SmallVector<int64_t> perm;
  for (char l : want)
    perm.push_back(x.labels.find(l));
  auto t = createValue<TransposeOp>(c, {x.value},
                                    {named(c, "perm", arrayAttr(c, perm))});
  if (failed(t))
    return failure();
  return Labeled{*t, want.str()};
}

/// `x` with each label that repeats in it (a diagonal, "ii->i", "bii->bi")
/// taken once: the two dims moved last, flattened to n * n, every (n + 1)th
/// element kept (a strided slice), the label at the end; until no label
/// repeats. The repeated dims must have one size.
FailureOr<Labeled> diagonals(NodeContext &c, Labeled x, unsigned operand) {
  for (;;) {
    size_t first = 0, second = std::string::npos;
    for (size_t d = 0; d < x.labels.size() && second == std::string::npos; ++d)
      if (size_t e = x.labels.find(x.labels[d], d + 1);
          e != std::string::npos) {
        first = d;
        second = e;
      }
    if (second == std::string::npos)
      return x;
    ArrayRef<int64_t> shape = shapeOf(x.value);
    const char label = x.labels[first];
    const int64_t n = shape[first];
    if (shape[second] != n)
      return c.error("label '" + Twine(label) + "' repeats in operand " +
                     Twine(operand) + " with sizes " + Twine(n) + " and " +
                     Twine(shape[second]));
    SmallVector<int64_t> perm, flat;
    std::string rest;
    for (size_t d = 0; d < x.labels.size(); ++d)
      if (d != first && d != second) {
        perm.push_back(d);
        flat.push_back(shape[d]);
        rest += x.labels[d];
      }
    perm.push_back(first);
    perm.push_back(second);
    Value moved = x.value;
    if (!llvm::equal(perm, llvm::seq<int64_t>(0, perm.size()))) {
      auto t = createValue<TransposeOp>(c, {x.value},
                                        {named(c, "perm", arrayAttr(c, perm))});
      if (failed(t))
        return failure();
      moved = *t;
    }
    flat.push_back(n * n);
    auto r = reshapeValue(c, moved, flat);
    if (failed(r))
      return failure();
    SmallVector<int64_t> starts(flat.size(), 0), limits(flat),
        strides(flat.size(), 1);
    strides.back() = n + 1;
    auto d = createValue<SliceOp>(c, {*r},
                                  {named(c, "starts", arrayAttr(c, starts)),
                                   named(c, "limits", arrayAttr(c, limits)),
                                   named(c, "strides", arrayAttr(c, strides))});
    if (failed(d))
      return failure();
    x = Labeled{*d, rest + label};
  }
}

/// `x` summed over its labels that `keep` lacks.
FailureOr<Labeled> sumAway(NodeContext &c, Labeled x, StringRef keep) {
  SmallVector<int64_t> dims;
  std::string rest;
  for (size_t d = 0; d < x.labels.size(); ++d) {
    if (keep.contains(x.labels[d]))
      rest += x.labels[d];
    else
      dims.push_back(d);
  }
  if (dims.empty())
    return x;
  auto r = reduceValue(c, false, x.value, dims, false);
  if (failed(r))
    return failure();
  return Labeled{*r, rest};
}

/// a and b contracted over the labels they share that `keep` lacks: both
/// permuted to [batch, own, contracted] / [batch, contracted, own], the own
/// and contracted dims flattened, one matmul (which broadcasts the batch
/// dims), its result unflattened to [batch, a's own, b's own].
FailureOr<Labeled> contract(NodeContext &c, Labeled a, Labeled b,
                            StringRef keep) {
  std::string batch, aOwn, bOwn, summed;
  for (char l : a.labels) {
    if (b.labels.find(l) == std::string::npos)
      aOwn += l;
    else if (keep.contains(l))
      batch += l;
    else
      summed += l;
  }
  for (char l : b.labels)
    if (a.labels.find(l) == std::string::npos)
      bOwn += l;
  auto pa = permuteTo(c, a, batch + aOwn + summed);
  auto pb = permuteTo(c, b, batch + summed + bOwn);
  if (failed(pa) || failed(pb))
    return failure();
  ArrayRef<int64_t> sa = shapeOf(pa->value), sb = shapeOf(pb->value);
  const size_t nb = batch.size();
  auto product = [](ArrayRef<int64_t> dims) {
    int64_t n = 1;
    for (int64_t d : dims)
      n *= d;
    return n;
  };
  const int64_t m = product(sa.slice(nb, aOwn.size()));
  const int64_t k = product(sa.drop_front(nb + aOwn.size()));
  const int64_t n = product(sb.drop_front(nb + summed.size()));
  SmallVector<int64_t> shapeA(sa.take_front(nb)), shapeB(sb.take_front(nb));
  shapeA.append({m, k});
  shapeB.append({k, n});
  auto ra = reshapeValue(c, pa->value, shapeA);
  auto rb = reshapeValue(c, pb->value, shapeB);
  if (failed(ra) || failed(rb))
    return failure();
  auto mm = createValue<MatmulOp>(c, {*ra, *rb});
  if (failed(mm))
    return failure();
  SmallVector<int64_t> out(shapeOf(*mm).take_front(nb));
  llvm::append_range(out, sa.slice(nb, aOwn.size()));
  llvm::append_range(out, sb.drop_front(nb + summed.size()));
  auto r = reshapeValue(c, *mm, out);
  if (failed(r))
    return failure();
  return Labeled{*r, batch + aOwn + bOwn};
}

LogicalResult einsum(NodeContext &c) {
  const unsigned n = c.getNumInputs();
  if (n == 0)
    return c.error("has no inputs");
  for (unsigned i = 0; i < n; ++i)
    if (failed(requireFloat(c, i)))
      return failure();
  std::string eq;
  for (char ch : c.getString("equation", ""))
    if (ch != ' ')
      eq += ch;
  const size_t arrow = eq.find("->");
  const bool explicitOut = arrow != std::string::npos;
  SmallVector<std::string> terms;
  {
    StringRef lhs = StringRef(eq).take_front(explicitOut ? arrow : eq.size());
    SmallVector<StringRef> parts;
    lhs.split(parts, ',');
    for (StringRef p : parts)
      terms.push_back(p.str());
  }
  if (terms.size() != n)
    return c.error("equation '" + eq + "' has " + Twine(terms.size()) +
                   " operands for " + Twine(n) + " inputs");
  // "..." becomes one label per broadcast dim: the digits '0'.., aligned
  // from the right across operands, as numpy broadcasts them.
  int64_t ellipsis = 0;
  for (unsigned i = 0; i < n; ++i) {
    const size_t dots = terms[i].find("...");
    const int64_t named =
        int64_t(terms[i].size()) - (dots == std::string::npos ? 0 : 3);
    if (dots == std::string::npos ? named != c.getRank(i)
                                  : named > c.getRank(i))
      return c.error("operand " + Twine(i) + " ('" + terms[i] +
                     "') does not fit its " + Twine(c.getRank(i)) + " dims");
    if (dots != std::string::npos)
      ellipsis = std::max(ellipsis, c.getRank(i) - named);
  }
  if (ellipsis > 10)
    return c.error("'...' stands for more than 10 dims");
  auto expand = [&](std::string t, int64_t rank) {
    const size_t dots = t.find("...");
    if (dots == std::string::npos)
      return t;
    const int64_t k = rank - (int64_t(t.size()) - 3);
    std::string labels;
    for (int64_t j = ellipsis - k; j < ellipsis; ++j)
      labels += char('0' + j);
    return t.substr(0, dots) + labels + t.substr(dots + 3);
  };
  std::string allDots;
  for (int64_t j = 0; j < ellipsis; ++j)
    allDots += char('0' + j);
  SmallVector<Labeled> ops;
  std::map<char, int64_t> count;
  for (unsigned i = 0; i < n; ++i) {
    std::string labels = expand(terms[i], c.getRank(i));
    for (size_t d = 0; d < labels.size(); ++d) {
      const char l = labels[d];
      if (!std::isalpha(l) && !std::isdigit(l))
        return c.error("equation '" + eq + "' has '" + Twine(l) +
                       "', not a letter");
      // Every occurrence counts: an implicit output has the labels that
      // occur once ("ii" sums its diagonal: the trace, as numpy).
      ++count[l];
    }
    auto v = c.getValue(i);
    if (failed(v))
      return failure();
    auto x = diagonals(c, Labeled{*v, labels}, i);
    if (failed(x))
      return failure();
    ops.push_back(*x);
  }
  std::string out;
  if (explicitOut) {
    const std::string term = eq.substr(arrow + 2);
    const bool dots = term.find("...") != std::string::npos;
    out = expand(term, int64_t(term.size()) - (dots ? 3 : 0) + ellipsis);
  } else {
    out = allDots;
    for (auto &[l, k] : count)
      if (k == 1 && std::isalpha(l))
        out += l;
  }
  // Each label's size: equal wherever it appears, or 1 (broadcast).
  std::map<char, int64_t> size;
  for (const Labeled &x : ops) {
    ArrayRef<int64_t> shape = shapeOf(x.value);
    for (size_t d = 0; d < x.labels.size(); ++d) {
      int64_t &s = size.try_emplace(x.labels[d], shape[d]).first->second;
      if (s != shape[d] && s != 1 && shape[d] != 1)
        return c.error("label '" + Twine(x.labels[d]) + "' has sizes " +
                       Twine(s) + " and " + Twine(shape[d]));
      s = std::max(s, shape[d]);
    }
  }
  for (char l : out)
    if (!size.count(l))
      return c.error("output label '" + Twine(l) + "' is in no operand");
  // Left to right: each operand first sums the labels nothing else needs,
  // then contracts with the result so far.
  auto needed = [&](size_t from) {
    std::string keep = out;
    for (size_t j = from; j < ops.size(); ++j)
      keep += ops[j].labels;
    return keep;
  };
  auto acc = sumAway(c, ops[0], needed(1));
  if (failed(acc))
    return failure();
  for (size_t i = 1; i < ops.size(); ++i) {
    std::string keep = needed(i + 1);
    auto x = sumAway(c, ops[i], keep + acc->labels);
    if (failed(x))
      return failure();
    auto a = sumAway(c, *acc, keep + x->labels);
    if (failed(a))
      return failure();
    acc = contract(c, *a, *x, keep);
    if (failed(acc))
      return failure();
  }
  auto r = sumAway(c, *acc, out);
  if (failed(r))
    return failure();
  // A label of the output that broadcast to it (size 1 in every operand it
  // is in) keeps its size; the result's order is the output's.
  auto y = permuteTo(c, *r, out);
  if (failed(y))
    return failure();
  c.setOutput(0, y->value, c.getDType(0));
  return success();
}

//===----------------------------------------------------------------------===//
// ConvTranspose
//===----------------------------------------------------------------------===//

/// ConvTranspose is the gradient of a convolution with respect to its input:
/// conv2d_backward_data of X with W ([C, M / group, k...], the forward
/// conv's weight as it is), whose result type fixes the output size
/// s (in - 1) + output_padding + d (k - 1) + 1 - pads; then the bias. 1-D
/// runs as 2-D with a unit height.
LogicalResult convTranspose(NodeContext &c) {
  if (failed(requireFloat(c, 0)) || failed(requireFloat(c, 1)))
    return failure();
  const int64_t rank = c.getRank(0);
  if ((rank != 3 && rank != 4) || c.getRank(1) != rank)
    return c.error("only 1-D and 2-D transposed convolutions are supported "
                   "(input rank " +
                   Twine(rank) + ", weight rank " + Twine(c.getRank(1)) + ")");
  const size_t n = rank - 2;
  ArrayRef<int64_t> in = c.getShape(0), w = c.getShape(1);
  const int64_t group = c.getInt("group", 1);
  if (group < 1 || in[1] % group || w[0] != in[1])
    return c.error("weight " + formatShape(w) + " does not fit input " +
                   formatShape(in) + " with group " + Twine(group));
  const int64_t channels = w[1] * group;
  SmallVector<int64_t> kernel(w.drop_front(2));
  if (auto ks = c.getInts("kernel_shape");
      ks && ArrayRef<int64_t>(*ks) != ArrayRef<int64_t>(kernel))
    return c.error("kernel_shape " + formatShape(*ks) +
                   " does not match the weight " + formatShape(w));
  auto window = [&](StringRef name,
                    int64_t dflt) -> FailureOr<SmallVector<int64_t>> {
    SmallVector<int64_t> v =
        c.getInts(name).value_or(SmallVector<int64_t>(n, dflt));
    if (v.size() != n)
      return c.error(name + " must have " + Twine(n) + " entries");
    for (int64_t x : v)
      if (x < (dflt == 1 ? 1 : 0) || x > (int64_t(1) << 31))
        return c.error(name + " " + formatShape(v) + " is out of range");
    return v;
  };
  auto strides = window("strides", 1), dilations = window("dilations", 1),
       outPad = window("output_padding", 0);
  if (failed(strides) || failed(dilations) || failed(outPad))
    return failure();
  // extra[d]: rows beyond the last a window reaches (an output_shape larger
  // than the transposed convolution gives; they hold the bias alone).
  SmallVector<int64_t> pads(2 * n, 0), out(n), extra(n, 0);
  const std::string autoPad = c.getString("auto_pad", "NOTSET");
  auto outputShape = c.getInts("output_shape");
  if (outputShape && outputShape->size() == n + 2)
    outputShape =
        SmallVector<int64_t>(outputShape->begin() + 2, outputShape->end());
  if (outputShape && outputShape->size() != n)
    return c.error("output_shape " + formatShape(*outputShape) + " has not " +
                   Twine(n) + " spatial dims");
  for (size_t d = 0; d < n; ++d) {
    const int64_t s = (*strides)[d], k = (*dilations)[d] * (kernel[d] - 1) + 1,
                  full = s * (in[2 + d] - 1) + (*outPad)[d] + k;
    if ((*outPad)[d] >= std::max(s, (*dilations)[d]))
      return c.error("output_padding " + formatShape(*outPad) +
                     " must be below the stride or the dilation");
    if (outputShape || autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
      const int64_t want = outputShape ? (*outputShape)[d] : in[2 + d] * s;
      // ONNX's split of the total padding (floor division), a negative end
      // meaning rows added at the end.
      const int64_t total = full - want;
      const int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);
      const bool upper = autoPad == "SAME_UPPER";
      pads[d] = upper ? half : total - half;
      pads[d + n] = total - pads[d];
      if (pads[d + n] < 0) {
        extra[d] = -pads[d + n];
        pads[d + n] = 0;
      }
      if (pads[d] < 0 || extra[d] >= s)
        return c.error("output size " + Twine(want) + " on spatial dim " +
                       Twine(d) + " is not one a transposed convolution of " +
                       Twine(in[2 + d]) + " gives (" + Twine(full) +
                       " before padding)");
    } else if (autoPad == "NOTSET") {
      if (auto p = c.getInts("pads")) {
        if (p->size() != 2 * n)
          return c.error("pads must have " + Twine(2 * n) + " entries");
        pads = *p;
      }
    } else if (autoPad != "VALID") {
      return c.error("unknown auto_pad '" + autoPad + "'");
    }
  }
  for (size_t d = 0; d < n; ++d) {
    if (pads[d] < 0 || pads[d + n] < 0)
      return c.error("pads " + formatShape(pads) + " must not be negative");
    const int64_t s = (*strides)[d], k = (*dilations)[d] * (kernel[d] - 1) + 1;
    out[d] = s * (in[2 + d] - 1) + (*outPad)[d] + k - pads[d] - pads[d + n] +
             extra[d];
    if (out[d] <= 0)
      return c.error("pads " + formatShape(pads) + " leave spatial dim " +
                     Twine(d) + " empty");
  }
  auto x = c.getValue(0), weight = c.getValue(1);
  if (failed(x) || failed(weight))
    return failure();
  Value x4 = *x, w4 = *weight;
  SmallVector<int64_t> s2(*strides), d2(*dilations), p2(pads), o2(out);
  if (n == 1) {
    auto xr = reshapeValue(c, x4, {in[0], in[1], 1, in[2]});
    auto wr = reshapeValue(c, w4, {w[0], w[1], 1, w[2]});
    if (failed(xr) || failed(wr))
      return failure();
    x4 = *xr;
    w4 = *wr;
    s2 = {1, s2[0]};
    d2 = {1, d2[0]};
    p2 = {0, pads[0], 0, pads[1]};
    o2 = {1, out[0]};
  }
  SmallVector<int64_t> yShape = {in[0], channels};
  llvm::append_range(yShape, o2);
  auto y = c.create<Conv2DBackwardDataOp>(
      {x4, w4},
      {named(c, "strides", arrayAttr(c, s2)),
       named(c, "pads", arrayAttr(c, p2)),
       named(c, "dilations", arrayAttr(c, d2)),
       named(c, "group", i64Attr(c, group))},
      {RankedTensorType::get(yShape, c.getType(0).getElementType())});
  if (failed(y))
    return failure();
  Value result = (*y)->getResult(0);
  if (n == 1) {
    auto r = reshapeValue(c, result, {in[0], channels, out[0]});
    if (failed(r))
      return failure();
    result = *r;
  }
  if (c.hasInput(2)) {
    if (failed(requireFloat(c, 2)))
      return failure();
    if (c.getShape(2) != ArrayRef<int64_t>{channels})
      return c.error("bias " + formatShape(c.getShape(2)) +
                     " is not one per "
                     "output channel (" +
                     Twine(channels) + ")");
    auto b = c.getValue(2);
    if (failed(b))
      return failure();
    SmallVector<int64_t> bShape(rank, 1);
    bShape[1] = channels;
    auto br = reshapeValue(c, *b, bShape);
    if (failed(br))
      return failure();
    auto sum = createValue<AddOp>(c, {result, *br});
    if (failed(sum))
      return failure();
    result = *sum;
  }
  c.setOutput(0, result, c.getDType(0));
  return success();
}

/// Tile (torch's `repeat`) with constant repeats: x [d0, ...] reshaped to
/// [1, d0, 1, d1, ...], expanded to [r0, d0, r1, d1, ...] and reshaped to
/// [r0 d0, r1 d1, ...]: copy i of dim k is the kth pair's first index.
LogicalResult tile(NodeContext &c) {
  auto repeats = c.getConstInts(1, "the repeats");
  if (failed(repeats))
    return failure();
  ArrayRef<int64_t> in = c.getShape(0);
  if (repeats->size() != in.size())
    return c.error("has " + Twine(repeats->size()) +
                   " repeats for an input of rank " + Twine(in.size()));
  SmallVector<int64_t> pairs, paired, out;
  for (size_t k = 0; k < in.size(); ++k) {
    const int64_t r = (*repeats)[k];
    if (r < 1)
      return c.error(
          "repeats " + Twine(r) + " times along dim " + Twine(k) +
          " (zero-size tensors are not supported; a repeat is at least 1)");
    pairs.append({1, in[k]});
    paired.append({r, in[k]});
    out.push_back(r * in[k]);
  }
  if (const ConstTensor *x = c.getConst(0)) {
    std::optional<ConstTensor> e = foldExpand(foldReshape(*x, pairs), paired);
    if (e && setFolded(c, foldReshape(*e, out)))
      return success();
  }
  auto x = c.getValue(0);
  if (failed(x))
    return failure();
  if (ArrayRef<int64_t>(out) == in) {
    c.setOutput(0, *x, c.getDType(0));
    return success();
  }
  auto split = reshapeValue(c, *x, pairs);
  if (failed(split))
    return failure();
  auto type = RankedTensorType::get(paired, c.getType(0).getElementType());
  auto expanded = c.create<ExpandOp>({*split}, {}, {type});
  if (failed(expanded))
    return failure();
  auto r = reshapeValue(c, (*expanded)->getResult(0), out);
  if (failed(r))
    return failure();
  c.setOutput(0, *r, c.getDType(0));
  return success();
}

/// The most passes a TopK is composed of.
constexpr int64_t kMaxTopK = 64;

/// TopK with k known at import: k passes, each the index of the first
/// largest (largest=0: smallest) element that no earlier pass took, found
/// as ArgMax's composite finds it, and its value gathered from x, so that
/// the gradient reaches only the picked elements (torch.topk's). A NaN
/// counts as the largest, as in PyTorch: taken first with largest=1, last
/// with largest=0. The passes' results concatenate along the axis.
LogicalResult topK(NodeContext &c) {
  if (c.getDType(0) != kInt64 && c.getDType(0) != kInt32 &&
      failed(requireFloat(c, 0)))
    return failure();
  ArrayRef<int64_t> in = c.getShape(0);
  auto axis = c.normalizeAxis(c.getInt("axis", -1), in.size(), "axis");
  if (failed(axis))
    return failure();
  auto ks = c.getConstInts(1, "k");
  if (failed(ks))
    return failure();
  if (ks->size() != 1)
    return c.error("k has " + Twine(ks->size()) + " values, not one");
  const int64_t k = (*ks)[0], dim = in[*axis];
  if (k < 1 || k > dim)
    return c.error("k = " + Twine(k) + " is not in [1, " + Twine(dim) +
                   "], the size of axis " + Twine(*axis));
  if (k > kMaxTopK)
    return c.error("k = " + Twine(k) + " exceeds " + Twine(kMaxTopK) +
                   ": TopK is composed of one pass per k");
  const bool largest = c.getInt("largest", 1) != 0;
  const bool isFloat = isFloatDType(c.getDType(0));
  auto x = c.getValue(0);
  if (failed(x))
    return failure();
  Type et = c.getType(0).getElementType(), i64 = c.getBuilder().getI64Type();
  FailureOr<Value> cur = largest ? FailureOr<Value>(*x) : negate(c, *x);
  SmallVector<int64_t> iotaShape(in.size(), 1), iota(dim);
  iotaShape[*axis] = dim;
  std::iota(iota.begin(), iota.end(), int64_t(0));
  auto positions =
      constantI64(c, iota, iotaShape, c.getNode().output(1) + ".topk_index");
  if (failed(cur) || failed(positions))
    return failure();
  const Value none = c.scalarConstant(double(dim), i64);
  const Value lowest = c.scalarConstant(
      isFloat                   ? -std::numeric_limits<double>::infinity()
      : c.getDType(0) == kInt32 ? double(std::numeric_limits<int32_t>::min())
                                : double(std::numeric_limits<int64_t>::min()),
      et);
  // `taken` (i1, null before the first pass) marks the positions earlier
  // passes took.
  Value taken;
  auto where = [&](Value cond, Value a, Value b) {
    return createValue<WhereOp>(c, {cond, a, b});
  };
  // The first position of `hits` (i1; null: every position) that is not
  // taken, or `none`.
  auto firstFree = [&](Value hits) -> FailureOr<Value> {
    FailureOr<Value> cand = *positions;
    if (hits)
      cand = where(hits, *positions, none);
    if (succeeded(cand) && taken)
      cand = where(taken, none, *cand);
    if (failed(cand))
      return failure();
    return reduceMinValue(c, *cand, {*axis}, true);
  };
  // NaNs (the largest, which reduce_max skips) do not move between passes.
  FailureOr<Value> nan = Value();
  if (isFloat)
    nan = compareValues(c, *cur, *cur, ComparePredicate::NE);
  if (failed(nan))
    return failure();
  SmallVector<Value> values, indices;
  for (int64_t pass = 0; pass < k; ++pass) {
    FailureOr<Value> avail = taken ? where(taken, lowest, *cur) : *cur;
    if (failed(avail))
      return failure();
    auto m = reduceValue(c, true, *avail, {*axis}, true);
    if (failed(m))
      return failure();
    auto hit = compareValues(c, *avail, *m, ComparePredicate::EQ);
    if (failed(hit))
      return failure();
    auto idx = firstFree(*hit);
    if (failed(idx))
      return failure();
    if (isFloat) {
      // reduce_max skips NaNs: with largest, an untaken NaN is the pick;
      // where nothing is picked (only NaNs left, with largest=0), the first
      // untaken position.
      if (largest) {
        auto nanIdx = firstFree(*nan);
        if (failed(nanIdx))
          return failure();
        auto hasNan = compareValues(c, *nanIdx, none, ComparePredicate::LT);
        if (failed(hasNan) || failed(idx = where(*hasNan, *nanIdx, *idx)))
          return failure();
      } else {
        auto free = firstFree(Value());
        auto nothing = compareValues(c, *idx, none, ComparePredicate::EQ);
        if (failed(free) || failed(nothing) ||
            failed(idx = where(*nothing, *free, *idx)))
          return failure();
      }
    }
    auto v = createValue<GatherElementsOp>(
        c, {*x, *idx}, {named(c, "axis", i64Attr(c, *axis))});
    if (failed(v))
      return failure();
    values.push_back(*v);
    indices.push_back(*idx);
    if (pass + 1 == k)
      break;
    auto picked = compareValues(c, *positions, *idx, ComparePredicate::EQ);
    if (failed(picked))
      return failure();
    if (!taken) {
      taken = *picked;
      continue;
    }
    auto both = where(*picked, *picked, taken);
    if (failed(both))
      return failure();
    taken = *both;
  }
  const NamedAttribute along = named(c, "dim", i64Attr(c, *axis));
  FailureOr<Value> vs = values.size() == 1
                            ? FailureOr<Value>(values[0])
                            : createValue<ConcatOp>(c, values, along);
  FailureOr<Value> is = indices.size() == 1
                            ? FailureOr<Value>(indices[0])
                            : createValue<ConcatOp>(c, indices, along);
  if (failed(vs) || failed(is))
    return failure();
  c.setOutput(0, *vs, c.getDType(0));
  c.setOutput(1, *is, kInt64);
  return success();
}

} // namespace

namespace mlir::tessel::detail {

LogicalResult importPad(NodeContext &c) { return pad(c); }
LogicalResult importScatterND(NodeContext &c) { return scatterND(c); }
LogicalResult importScatterElements(NodeContext &c) {
  return scatterElements(c);
}
LogicalResult importInstanceNormalization(NodeContext &c) {
  return instanceNormalization(c);
}
LogicalResult importReduceL1(NodeContext &c) {
  return reduceComposed<Composed::L1, false>(c);
}
LogicalResult importReduceL1Axes(NodeContext &c) {
  return reduceComposed<Composed::L1, true>(c);
}
LogicalResult importReduceL2(NodeContext &c) {
  return reduceComposed<Composed::L2, false>(c);
}
LogicalResult importReduceL2Axes(NodeContext &c) {
  return reduceComposed<Composed::L2, true>(c);
}
LogicalResult importReduceSumSquare(NodeContext &c) {
  return reduceComposed<Composed::SumSquare, false>(c);
}
LogicalResult importReduceSumSquareAxes(NodeContext &c) {
  return reduceComposed<Composed::SumSquare, true>(c);
}
LogicalResult importReduceLogSum(NodeContext &c) {
  return reduceComposed<Composed::LogSum, false>(c);
}
LogicalResult importReduceLogSumAxes(NodeContext &c) {
  return reduceComposed<Composed::LogSum, true>(c);
}
LogicalResult importReduceLogSumExp(NodeContext &c) {
  return reduceComposed<Composed::LogSumExp, false>(c);
}
LogicalResult importReduceLogSumExpAxes(NodeContext &c) {
  return reduceComposed<Composed::LogSumExp, true>(c);
}
LogicalResult importReduceMin(NodeContext &c) {
  return reduceComposed<Composed::Min, false>(c);
}
LogicalResult importReduceMinAxes(NodeContext &c) {
  return reduceComposed<Composed::Min, true>(c);
}
LogicalResult importArgMax(NodeContext &c) { return importArgExtreme<true>(c); }
LogicalResult importHardSigmoid(NodeContext &c) {
  return hardSigmoid(c, c.getFloat("alpha", 0.2f), c.getFloat("beta", 0.5f));
}
LogicalResult importElu(NodeContext &c) {
  return exponentialUnit(c, c.getFloat("alpha", 1.0f), 1.0f, 1.0f);
}
LogicalResult importCelu(NodeContext &c) {
  float alpha = c.getFloat("alpha", 1.0f);
  if (alpha == 0)
    return c.error("alpha must not be 0");
  return exponentialUnit(c, alpha, alpha, 1.0f);
}
LogicalResult importSelu(NodeContext &c) {
  return exponentialUnit(c, c.getFloat("alpha", 1.67326319217681884765625f),
                         1.0f, c.getFloat("gamma", 1.05070102214813232421875f));
}
LogicalResult importResize(NodeContext &c) { return resize(c); }
LogicalResult importEinsum(NodeContext &c) { return einsum(c); }
LogicalResult importTile(NodeContext &c) { return tile(c); }
LogicalResult importTopK(NodeContext &c) { return topK(c); }
LogicalResult importConvTranspose(NodeContext &c) { return convTranspose(c); }
LogicalResult importArgMin(NodeContext &c) {
  return importArgExtreme<false>(c);
}

} // namespace mlir::tessel::detail
