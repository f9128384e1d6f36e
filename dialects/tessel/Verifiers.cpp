//===- Verifiers.cpp - verifiers of tessel ops and sharding specs ---------===//
//
// Each check carries the constraint label (C1, C2, ...) of the ODS
// description it enforces; tests/Dialect/invalid.mlir names its cases after
// the same labels.
//
//===----------------------------------------------------------------------===//

#include "dialects/tessel/Verifiers.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallSet.h"
#include "tessel/support/Checked.h"

using namespace mlir;
using namespace mlir::tessel;

std::string mlir::tessel::formatShape(ArrayRef<int64_t> shape) {
  std::string s = "[";
  llvm::raw_string_ostream os(s);
  llvm::interleaveComma(shape, os, [&](int64_t d) {
    if (ShapedType::isDynamic(d))
      os << "?";
    else
      os << d;
  });
  os << "]";
  return s;
}

std::optional<int64_t> mlir::tessel::checkedShardCount(ArrayRef<int64_t> sizes) {
  if (llvm::any_of(sizes, [](int64_t s) { return s < 1; }))
    return std::nullopt;
  return ::tessel::checkedProduct(sizes, kMaxMeshDevices);
}

static std::string axesOf(MeshOp mesh) {
  std::string s;
  for (auto [i, a] : llvm::enumerate(mesh.getAxisNames()))
    s += (i ? ", " : "") + cast<StringAttr>(a).getValue().str();
  return s;
}

//===----------------------------------------------------------------------===//
// Sharding specs on values
//===----------------------------------------------------------------------===//

LogicalResult mlir::tessel::verifyShardingForType(TensorShardingAttr sharding,
                                                  Type type, Operation *anchor,
                                                  StringRef valueDesc) {
  auto err = [&]() {
    return anchor->emitOpError() << valueDesc << ": ";
  };
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor)
    return err() << "a sharding needs a ranked tensor, got " << type;
  // C2
  MeshOp mesh =
      SymbolTable::lookupNearestSymbolFrom<MeshOp>(anchor, sharding.getMesh());
  if (!mesh)
    return err() << "sharding refers to unknown mesh " << sharding.getMesh();
  // C3
  if (sharding.getRank() != tensor.getRank())
    return err() << "sharding has " << sharding.getRank()
                 << " dim specs but the tensor " << tensor << " has rank "
                 << tensor.getRank();
  for (auto [d, dim] : llvm::enumerate(sharding.getDims())) {
    SmallVector<int64_t> sizes;
    for (StringAttr axis : dim.getAxes()) {
      std::optional<int64_t> size = mesh.getAxisSize(axis.getValue());
      // C2
      if (!size)
        return err() << "dim " << d << " is split over axis \""
                     << axis.getValue() << "\", which mesh @"
                     << mesh.getSymName() << " lacks (it has " << axesOf(mesh)
                     << ")";
      sizes.push_back(*size);
    }
    std::optional<int64_t> count = checkedShardCount(sizes);
    if (!count)
      return err() << "dim " << d << " is split over axes of sizes "
                   << formatShape(sizes)
                   << ", whose product is not a shard count (each must be "
                      "positive, the product at most "
                   << kMaxMeshDevices << ")";
    int64_t shards = *count;
    // C4
    int64_t size = tensor.getDimSize(d), pad = dim.getPad();
    if (ShapedType::isDynamic(size))
      continue;
    std::optional<int64_t> padded = ::tessel::checkedAdd(size, pad);
    if (!padded || pad < 0)
      return err() << "dim " << d << " of size " << size << " has pad " << pad
                   << ", which does not give a valid size";
    if (*padded % shards != 0) {
      std::string axes;
      for (auto [i, a] : llvm::enumerate(dim.getAxes()))
        axes += (i ? ", \"" : "\"") + a.getValue().str() + "\"";
      InFlightDiagnostic diag = err();
      diag << "dim " << d << " of size " << size;
      if (pad)
        diag << " with pad " << pad;
      diag << " is not divisible by axis " << axes << " (" << shards
           << " shards)";
      if (!pad)
        diag << "; add pad = " << (shards - size % shards)
             << " to the dim or choose another axis";
      return diag;
    }
    // The pad lies in the last shards; the first holds none. (A padded
    // batch merged with the sequence pads whole rows of it: more than one
    // entry per shard, FactorSharding.h.)
    const int64_t perShard = *padded / shards;
    if (pad > (shards - 1) * perShard)
      return err() << "dim " << d << " has pad " << pad << ", more than the "
                   << "shards after the first hold (" << shards - 1 << " of "
                   << perShard << ")";
  }
  for (PartialAxisAttr p : sharding.getPartials())
    if (!mesh.getAxisSize(p.getAxis().getValue()))
      return err() << "partial axis \"" << p.getAxis().getValue()
                   << "\" is not in mesh @" << mesh.getSymName() << " (it has "
                   << axesOf(mesh) << ")";
  return success();
}

// A readable name for result `i` of `op`: weights are named by their name.
static std::string describeResult(Operation *op, unsigned i) {
  if (auto w = dyn_cast<WeightOp>(op))
    return ("weight \"" + w.getName() + "\"").str();
  return ("result " + Twine(i)).str();
}

LogicalResult mlir::tessel::verifyResultShardings(Operation *op,
                                                  Attribute value) {
  if (auto single = dyn_cast<TensorShardingAttr>(value)) {
    if (op->getNumResults() != 1)
      return op->emitOpError()
             << "has " << op->getNumResults()
             << " results; 'tessel.sharding' must be an array of one "
                "#tessel.sharding per result";
    return verifyShardingForType(single, op->getResult(0).getType(), op,
                                 describeResult(op, 0));
  }
  auto array = dyn_cast<ArrayAttr>(value);
  if (!array)
    return op->emitOpError()
           << "'tessel.sharding' must be a #tessel.sharding or an array of them";
  if (array.size() != op->getNumResults())
    return op->emitOpError() << "has " << op->getNumResults()
                             << " results but 'tessel.sharding' lists "
                             << array.size() << " specs";
  for (auto [i, a] : llvm::enumerate(array)) {
    auto s = dyn_cast<TensorShardingAttr>(a);
    if (!s)
      return op->emitOpError() << "'tessel.sharding' entry " << i
                               << " is not a #tessel.sharding";
    if (failed(verifyShardingForType(s, op->getResult(i).getType(), op,
                                     describeResult(op, i))))
      return failure();
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Ops
//===----------------------------------------------------------------------===//

LogicalResult MeshOp::verify() {
  if (getAxisNames().size() != getAxisSizes().size())
    return emitOpError() << "has " << getAxisNames().size() << " axis names but "
                         << getAxisSizes().size() << " sizes";
  llvm::SmallSet<StringRef, 8> seen;
  for (auto [name, size] : llvm::zip(getAxisNames(), getAxisSizes())) {
    StringRef axis = cast<StringAttr>(name).getValue();
    // C1
    if (size <= 0)
      return emitOpError() << "axis \"" << axis << "\" has size " << size
                           << "; sizes must be positive";
    // C2
    if (axis.empty())
      return emitOpError() << "has an axis with an empty name";
    if (!seen.insert(axis).second)
      return emitOpError() << "axis \"" << axis << "\" is declared twice";
  }
  // C1: every product of axis sizes (shard counts, group sizes) fits.
  if (!checkedShardCount(getAxisSizes()))
    return emitOpError() << "has axes of sizes " << formatShape(getAxisSizes())
                         << ", more than " << kMaxMeshDevices
                         << " devices in all";
  return success();
}

LogicalResult WeightOp::verify() {
  // C1
  if (getName().empty())
    return emitOpError() << "needs a non-empty name";
  return success();
}

LogicalResult AssignOp::verify() {
  // C1
  auto w = getWeight().getDefiningOp<WeightOp>();
  if (!w)
    return emitOpError() << "assigns a value that is not a tessel.weight";
  // C3
  for (Operation *user : getWeight().getUsers())
    if (auto other = dyn_cast<AssignOp>(user);
        other && other != *this && other.getWeight() == getWeight())
      return emitOpError() << "assigns weight \"" << w.getName()
                           << "\" a second time";
  return success();
}

LogicalResult ShardConstraintOp::verify() {
  // C1
  return verifyShardingForType(getSharding(), getType(), *this, "constraint");
}

LogicalResult CastOp::verify() {
  // C1
  if (getInput().getType().getShape() != getType().getShape())
    return emitOpError() << "operand shape "
                         << formatShape(getInput().getType().getShape())
                         << " differs from result shape "
                         << formatShape(getType().getShape());
  return success();
}

static LogicalResult verifyAxis(Operation *op, int64_t axis, int64_t rank) {
  if (axis < 0 || axis >= rank)
    return op->emitOpError() << "axis " << axis << " is out of range [0, "
                             << rank << ")";
  return success();
}

LogicalResult SoftmaxOp::verify() {
  return verifyAxis(*this, getAxis(), getType().getRank()); // C1
}

LogicalResult CumSumOp::verify() {
  return verifyAxis(*this, getAxis(), getType().getRank()); // C1
}

LogicalResult LogSoftmaxOp::verify() {
  return verifyAxis(*this, getAxis(), getType().getRank()); // C1
}

// C2 of layer_norm and rms_norm: `param` has the shape of dims [axis, rank).
static LogicalResult verifyNormParam(Operation *op, Value param, StringRef name,
                                     ArrayRef<int64_t> inShape, int64_t axis) {
  ArrayRef<int64_t> want = inShape.drop_front(axis);
  ArrayRef<int64_t> got = cast<RankedTensorType>(param.getType()).getShape();
  if (got != want)
    return op->emitOpError() << name << " has shape " << formatShape(got)
                             << " but the normalised dims are "
                             << formatShape(want);
  return success();
}

LogicalResult LayerNormOp::verify() {
  ArrayRef<int64_t> shape = getInput().getType().getShape();
  if (failed(verifyAxis(*this, getAxis(), shape.size()))) // C1
    return failure();
  if (failed(verifyNormParam(*this, getScale(), "scale", shape, getAxis())))
    return failure();
  if (getBias())
    return verifyNormParam(*this, getBias(), "bias", shape, getAxis());
  return success();
}

LogicalResult RmsNormOp::verify() {
  ArrayRef<int64_t> shape = getInput().getType().getShape();
  if (failed(verifyAxis(*this, getAxis(), shape.size()))) // C1
    return failure();
  return verifyNormParam(*this, getScale(), "scale", shape, getAxis()); // C2
}

/// C1 and C2 of batch_norm and batch_norm_train: the input (operand 0) has
/// rank >= 2 and each parameter (operands 1-4, named `params`) is [C].
static LogicalResult verifyBatchNormParams(Operation *op,
                                           ArrayRef<StringRef> params) {
  auto x = cast<RankedTensorType>(op->getOperand(0).getType());
  // C1
  if (x.getRank() < 2)
    return op->emitOpError() << "input must have rank at least 2, got "
                             << x.getRank();
  // C2
  int64_t c = x.getDimSize(1);
  for (auto [i, name] : llvm::enumerate(params)) {
    ArrayRef<int64_t> s =
        cast<RankedTensorType>(op->getOperand(i + 1).getType()).getShape();
    if (s != ArrayRef<int64_t>{c})
      return op->emitOpError() << name << " has shape " << formatShape(s)
                               << " but the input has " << c << " channels";
  }
  return success();
}

LogicalResult BatchNormOp::verify() {
  return verifyBatchNormParams(*this, {"scale", "bias", "mean", "variance"});
}

LogicalResult BatchNormTrainOp::verify() {
  return verifyBatchNormParams(
      *this, {"scale", "bias", "running_mean", "running_var"});
}

LogicalResult ReshapeOp::verify() {
  RankedTensorType in = getInput().getType(), out = getType();
  // C1
  if (in.getElementType() != out.getElementType())
    return emitOpError() << "changes the element type from "
                         << in.getElementType() << " to "
                         << out.getElementType();
  if (in.getNumElements() != out.getNumElements())
    return emitOpError() << "cannot reshape " << formatShape(in.getShape())
                         << " (" << in.getNumElements() << " elements) to "
                         << formatShape(out.getShape()) << " ("
                         << out.getNumElements() << " elements)";
  return success();
}

LogicalResult ExpandOp::verify() {
  RankedTensorType in = getInput().getType(), out = getType();
  // C1
  FailureOr<SmallVector<int64_t>> b =
      broadcastShapes({in.getShape(), out.getShape()});
  if (in.getElementType() != out.getElementType() || failed(b) ||
      ArrayRef<int64_t>(*b) != out.getShape())
    return emitOpError() << "cannot broadcast " << in << " to " << out;
  return success();
}

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

// C1 and C2 of every collective; returns the group size, or failure.
template <typename OpT>
static FailureOr<int64_t> verifyMeshAxes(OpT op,
                                         SymbolTableCollection &symbols) {
  auto mesh =
      symbols.lookupNearestSymbolFrom<MeshOp>(op, op.getMeshAttr());
  if (!mesh)
    return op.emitOpError() << "refers to unknown mesh " << op.getMeshAttr();
  if (op.getAxes().empty())
    return op.emitOpError() << "needs at least one mesh axis";
  llvm::SmallSet<StringRef, 4> seen;
  SmallVector<int64_t> sizes;
  for (Attribute a : op.getAxes()) {
    StringRef axis = cast<StringAttr>(a).getValue();
    std::optional<int64_t> size = mesh.getAxisSize(axis);
    if (!size)
      return op.emitOpError() << "axis \"" << axis << "\" is not in mesh @"
                              << mesh.getSymName() << " (it has "
                              << axesOf(mesh) << ")";
    if (!seen.insert(axis).second)
      return op.emitOpError() << "axis \"" << axis << "\" appears twice";
    sizes.push_back(*size);
  }
  std::optional<int64_t> count = checkedShardCount(sizes);
  if (!count)
    return op.emitOpError() << "axes of sizes " << formatShape(sizes)
                            << " do not give a group size (each must be "
                               "positive, the product at most "
                            << kMaxMeshDevices << ")";
  return *count;
}

static LogicalResult verifyDimInRange(Operation *op, StringRef name,
                                      int64_t dim, int64_t rank) {
  if (dim < 0 || dim >= rank)
    return op->emitOpError() << name << " " << dim << " is out of range [0, "
                             << rank << ")";
  return success();
}

static LogicalResult verifySameRankAndElement(Operation *op, RankedTensorType a,
                                              RankedTensorType b) {
  if (a.getRank() != b.getRank() || a.getElementType() != b.getElementType())
    return op->emitOpError() << "operand " << a << " and result " << b
                             << " differ in rank or element type";
  return success();
}

// Checks that `in` and `out` agree on every dim but `except`.
static LogicalResult verifyOtherDims(Operation *op, RankedTensorType in,
                                     RankedTensorType out,
                                     ArrayRef<int64_t> except) {
  for (int64_t d = 0; d < in.getRank(); ++d)
    if (!llvm::is_contained(except, d) && in.getDimSize(d) != out.getDimSize(d))
      return op->emitOpError() << "dim " << d << " changes from "
                               << in.getDimSize(d) << " to "
                               << out.getDimSize(d);
  return success();
}

LogicalResult AllReduceOp::verify() { return success(); }

LogicalResult AllReduceOp::verifySymbolUses(SymbolTableCollection &symbols) {
  return success(succeeded(verifyMeshAxes(*this, symbols)));
}

// C1-C3 of all_gather and reduce_scatter: only dim `dim` changes size.
template <typename OpT> static LogicalResult verifyOneDimChanges(OpT op) {
  auto in = op.getInput().getType(), out = op.getType();
  if (failed(verifySameRankAndElement(op, in, out)) ||
      failed(verifyDimInRange(op, "dim", op.getDim(), in.getRank())))
    return failure();
  return verifyOtherDims(op, in, out, {static_cast<int64_t>(op.getDim())});
}

LogicalResult AllGatherOp::verify() { return verifyOneDimChanges(*this); }

LogicalResult AllGatherOp::verifySymbolUses(SymbolTableCollection &symbols) {
  FailureOr<int64_t> n = verifyMeshAxes(*this, symbols);
  if (failed(n))
    return failure();
  int64_t d = getDim(), in = getInput().getType().getDimSize(d),
          out = getType().getDimSize(d);
  // C4
  if (out != in * *n)
    return emitOpError() << "result dim " << d << " must be " << in << " x "
                         << *n << " (group size) = " << in * *n << ", got "
                         << out;
  return success();
}

LogicalResult ReduceScatterOp::verify() { return verifyOneDimChanges(*this); }

LogicalResult
ReduceScatterOp::verifySymbolUses(SymbolTableCollection &symbols) {
  FailureOr<int64_t> n = verifyMeshAxes(*this, symbols);
  if (failed(n))
    return failure();
  int64_t d = getDim(), in = getInput().getType().getDimSize(d),
          out = getType().getDimSize(d);
  // C4
  if (in % *n != 0)
    return emitOpError() << "operand dim " << d << " of size " << in
                         << " is not divisible by the group size " << *n;
  if (out != in / *n)
    return emitOpError() << "result dim " << d << " must be " << in << " / "
                         << *n << " (group size) = " << in / *n << ", got "
                         << out;
  return success();
}

LogicalResult AllToAllOp::verify() {
  auto in = getInput().getType(), out = getType();
  if (failed(verifySameRankAndElement(*this, in, out)) ||
      failed(verifyDimInRange(*this, "split_dim", getSplitDim(), in.getRank())) ||
      failed(verifyDimInRange(*this, "concat_dim", getConcatDim(),
                              in.getRank())))
    return failure();
  return verifyOtherDims(*this, in, out,
                         {static_cast<int64_t>(getSplitDim()),
                          static_cast<int64_t>(getConcatDim())});
}

LogicalResult AllToAllOp::verifySymbolUses(SymbolTableCollection &symbols) {
  FailureOr<int64_t> n = verifyMeshAxes(*this, symbols);
  if (failed(n))
    return failure();
  auto in = getInput().getType(), out = getType();
  int64_t s = getSplitDim(), c = getConcatDim();
  // C4
  if (in.getDimSize(s) % *n != 0)
    return emitOpError() << "split_dim " << s << " of size " << in.getDimSize(s)
                         << " is not divisible by the group size " << *n;
  SmallVector<int64_t> want(in.getShape());
  want[s] /= *n;
  std::optional<int64_t> gathered = ::tessel::checkedMul(want[c], *n);
  if (!gathered)
    return emitOpError() << "concat_dim " << c << " of size " << want[c]
                         << " times the group size " << *n
                         << " overflows 64 bits";
  want[c] = *gathered;
  if (out.getShape() != ArrayRef<int64_t>(want))
    return emitOpError() << "result shape must be " << formatShape(want)
                         << ", got " << formatShape(out.getShape());
  return success();
}

LogicalResult CollectivePermuteOp::verify() {
  // C4 (the part that needs no mesh)
  if (getPairs().size() % 2 != 0)
    return emitOpError() << "pairs must list (source, target) pairs, got "
                         << getPairs().size() << " entries";
  return success();
}

LogicalResult
CollectivePermuteOp::verifySymbolUses(SymbolTableCollection &symbols) {
  FailureOr<int64_t> n = verifyMeshAxes(*this, symbols);
  if (failed(n))
    return failure();
  // C4
  llvm::SmallSet<int64_t, 8> sources, targets;
  ArrayRef<int64_t> pairs = getPairs();
  for (size_t i = 0; i + 1 < pairs.size(); i += 2) {
    int64_t s = pairs[i], t = pairs[i + 1];
    if (s < 0 || s >= *n || t < 0 || t >= *n)
      return emitOpError() << "pair (" << s << ", " << t
                           << ") is out of range for group size " << *n;
    if (!sources.insert(s).second)
      return emitOpError() << "source " << s << " appears twice";
    if (!targets.insert(t).second)
      return emitOpError() << "target " << t << " appears twice";
  }
  return success();
}

LogicalResult BroadcastOp::verify() { return success(); }

LogicalResult BroadcastOp::verifySymbolUses(SymbolTableCollection &symbols) {
  FailureOr<int64_t> n = verifyMeshAxes(*this, symbols);
  if (failed(n))
    return failure();
  // C4 (I64Attr reads back unsigned: -1 is 2^64 - 1.)
  int64_t root = static_cast<int64_t>(getRoot());
  if (root < 0 || root >= *n)
    return emitOpError() << "root " << root
                         << " is out of range for group size " << *n;
  return success();
}

// C1-C3 of send and recv: `peer`, the `name` rank, is in the group.
template <typename OpT>
static LogicalResult verifyPeer(OpT op, SymbolTableCollection &symbols,
                                StringRef name, int64_t peer) {
  FailureOr<int64_t> n = verifyMeshAxes(op, symbols);
  if (failed(n))
    return failure();
  if (peer < 0 || peer >= *n)
    return op.emitOpError() << name << " " << peer
                            << " is out of range for group size " << *n;
  // I64Attr reads back unsigned: -1 is 2^64 - 1.
  int64_t tag = static_cast<int64_t>(op.getTag());
  if (tag < 0)
    return op.emitOpError() << "tag must be non-negative, got " << tag;
  return success();
}

LogicalResult SendOp::verify() { return success(); }

LogicalResult SendOp::verifySymbolUses(SymbolTableCollection &symbols) {
  return verifyPeer(*this, symbols, "target", getTarget());
}

LogicalResult RecvOp::verify() { return success(); }

LogicalResult RecvOp::verifySymbolUses(SymbolTableCollection &symbols) {
  return verifyPeer(*this, symbols, "source", getSource());
}

// local_slice checks C1 and C2 itself: it is no collective, and its messages
// do not list the mesh axes.
LogicalResult
LocalSliceOp::verifySymbolUses(SymbolTableCollection &symbols) {
  auto mesh = symbols.lookupNearestSymbolFrom<MeshOp>(*this, getMeshAttr());
  // C1
  if (!mesh)
    return emitOpError() << "refers to unknown mesh " << getMeshAttr();
  // C2
  if (getAxes().empty())
    return emitOpError() << "needs at least one mesh axis";
  llvm::SmallSet<StringRef, 4> seen;
  SmallVector<int64_t> sizes;
  for (Attribute a : getAxes()) {
    StringRef axis = cast<StringAttr>(a).getValue();
    std::optional<int64_t> size = mesh.getAxisSize(axis);
    if (!size)
      return emitOpError() << "axis \"" << axis << "\" is not in mesh @"
                           << mesh.getSymName();
    if (!seen.insert(axis).second)
      return emitOpError() << "axis \"" << axis << "\" appears twice";
    sizes.push_back(*size);
  }
  std::optional<int64_t> count = checkedShardCount(sizes);
  if (!count)
    return emitOpError() << "axes of sizes " << formatShape(sizes)
                         << " do not give a rank count (each must be "
                            "positive, the product at most "
                         << kMaxMeshDevices << ")";
  int64_t n = *count;
  // C4
  auto in = cast<RankedTensorType>(getInput().getType());
  auto out = cast<RankedTensorType>(getType());
  int64_t d = getDim();
  std::optional<int64_t> whole = ::tessel::checkedMul(out.getDimSize(d), n);
  if (in.getDimSize(d) % n != 0 || !whole || *whole != in.getDimSize(d))
    return emitOpError() << "dim " << d << " of size " << in.getDimSize(d)
                         << " over " << n << " ranks must give "
                         << in.getDimSize(d) / n << " per rank, not "
                         << out.getDimSize(d);
  return success();
}

LogicalResult LocalSliceOp::verify() {
  auto in = cast<RankedTensorType>(getInput().getType());
  auto out = cast<RankedTensorType>(getType());
  int64_t d = getDim();
  // C3
  if (d < 0 || d >= in.getRank())
    return emitOpError() << "dim " << d << " is out of range [0, "
                         << in.getRank() << ")";
  if (in.getRank() != out.getRank() ||
      in.getElementType() != out.getElementType())
    return emitOpError() << "operand " << in << " and result " << out
                         << " differ in rank or element type";
  // C4 (other dims)
  for (int64_t i = 0; i < in.getRank(); ++i)
    if (i != d && in.getDimSize(i) != out.getDimSize(i))
      return emitOpError() << "dim " << i << " differs: " << in.getDimSize(i)
                           << " != " << out.getDimSize(i);
  return success();
}
