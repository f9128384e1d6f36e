//===- TesselOps.cpp - tessel ops: formats, type inference, folders -------===//
//
// Result-type inference of every compute op (the shape rules of ONNX and
// numpy), custom assembly pieces, and folders. Verifiers of the remaining
// constraints are in Verifiers.cpp; sharding rules in ShardingRules.cpp.
//
//===----------------------------------------------------------------------===//

#include "dialects/tessel/TesselOps.h"
#include "dialects/tessel/Verifiers.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallSet.h"

using namespace mlir;
using namespace mlir::tessel;

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

FailureOr<SmallVector<int64_t>>
mlir::tessel::broadcastShapes(ArrayRef<ArrayRef<int64_t>> shapes) {
  size_t rank = 0;
  for (ArrayRef<int64_t> s : shapes)
    rank = std::max(rank, s.size());
  SmallVector<int64_t> out(rank, 1);
  for (ArrayRef<int64_t> s : shapes) {
    size_t offset = rank - s.size();
    for (auto [i, d] : llvm::enumerate(s)) {
      int64_t &o = out[offset + i];
      if (d == o || d == 1)
        continue;
      if (o != 1)
        return failure();
      o = d;
    }
  }
  return out;
}

static RankedTensorType tensorOf(Value v) {
  return cast<RankedTensorType>(v.getType());
}

// Emits an error at `loc` (when given) and returns failure.
static LogicalResult fail(std::optional<Location> loc, const Twine &msg) {
  return emitOptionalError(loc, msg);
}

static bool inRange(int64_t v, int64_t rank) { return v >= 0 && v < rank; }

//===----------------------------------------------------------------------===//
// Custom assembly
//===----------------------------------------------------------------------===//

// `["dp"=2, "tp"=4]`
static ParseResult parseMeshAxes(OpAsmParser &parser, ArrayAttr &names,
                                 DenseI64ArrayAttr &sizes) {
  SmallVector<Attribute> nameAttrs;
  SmallVector<int64_t> sizeVals;
  if (parser.parseCommaSeparatedList(AsmParser::Delimiter::Square, [&] {
        std::string name;
        int64_t size;
        if (parser.parseString(&name) || parser.parseEqual() ||
            parser.parseInteger(size))
          return failure();
        nameAttrs.push_back(parser.getBuilder().getStringAttr(name));
        sizeVals.push_back(size);
        return success();
      }))
    return failure();
  names = parser.getBuilder().getArrayAttr(nameAttrs);
  sizes = parser.getBuilder().getDenseI64ArrayAttr(sizeVals);
  return success();
}

static void printMeshAxes(OpAsmPrinter &printer, Operation *, ArrayAttr names,
                          DenseI64ArrayAttr sizes) {
  printer << "[";
  llvm::interleaveComma(llvm::zip(names, sizes.asArrayRef()), printer,
                        [&](auto it) {
                          printer << std::get<0>(it) << "=" << std::get<1>(it);
                        });
  printer << "]";
}

// `[0:2:1, 0:64:2]`: start:limit:stride per dim.
static ParseResult parseSliceRanges(OpAsmParser &parser,
                                    DenseI64ArrayAttr &starts,
                                    DenseI64ArrayAttr &limits,
                                    DenseI64ArrayAttr &strides) {
  SmallVector<int64_t> s, l, t;
  if (parser.parseCommaSeparatedList(AsmParser::Delimiter::Square, [&] {
        int64_t a, b, c;
        if (parser.parseInteger(a) || parser.parseColon() ||
            parser.parseInteger(b) || parser.parseColon() ||
            parser.parseInteger(c))
          return failure();
        s.push_back(a);
        l.push_back(b);
        t.push_back(c);
        return success();
      }))
    return failure();
  Builder b = parser.getBuilder();
  starts = b.getDenseI64ArrayAttr(s);
  limits = b.getDenseI64ArrayAttr(l);
  strides = b.getDenseI64ArrayAttr(t);
  return success();
}

static void printSliceRanges(OpAsmPrinter &printer, Operation *,
                             DenseI64ArrayAttr starts, DenseI64ArrayAttr limits,
                             DenseI64ArrayAttr strides) {
  printer << "[";
  for (int64_t i = 0; i < starts.size(); ++i) {
    if (i)
      printer << ", ";
    printer << starts[i] << ":" << (i < limits.size() ? limits[i] : 0) << ":"
            << (i < strides.size() ? strides[i] : 1);
  }
  printer << "]";
}

#include "dialects/tessel/TesselInterfaces.cpp.inc"

#define GET_OP_CLASSES
#include "dialects/tessel/TesselOps.cpp.inc"

#define GET_OP_CLASSES
#include "dialects/tessel/CollectiveOps.cpp.inc"

//===----------------------------------------------------------------------===//
// MeshOp
//===----------------------------------------------------------------------===//

std::optional<int64_t> MeshOp::getAxisSize(StringRef axis) {
  for (auto [name, size] : llvm::zip(getAxisNames(), getAxisSizes()))
    if (cast<StringAttr>(name).getValue() == axis)
      return size;
  return std::nullopt;
}

int64_t MeshOp::getNumDevices() {
  // A verified mesh has at most kMaxMeshDevices; 0 for one that is not.
  return checkedShardCount(getAxisSizes()).value_or(0);
}

//===----------------------------------------------------------------------===//
// Type inference
//===----------------------------------------------------------------------===//
//
// Each op with one result has a rule here: its result type from the
// adaptor, or failure reported at `loc`. TESSEL_RESULT_INFERENCE, after the
// rules, makes each rule its op's inferReturnTypes.

// C1 of the ops that name a dim or axis: `v`, `what`, indexes a dim of a
// tensor of rank `rank`.
static LogicalResult checkDimIndex(std::optional<Location> loc,
                                   const Twine &what, int64_t v, int64_t rank) {
  if (inRange(v, rank))
    return success();
  return fail(loc, what + " " + Twine(v) + " is out of range [0, " +
                       Twine(rank) + ")");
}

template <typename Adaptor>
static FailureOr<Type> inferSameType(std::optional<Location>, Adaptor adaptor) {
  return adaptor.getInput().getType();
}

// Broadcasts `values` (C2 of the elementwise ops); the element type of the
// result is `elementType`, or that of values[0] when null.
static FailureOr<Type> inferBroadcast(std::optional<Location> loc,
                                      ValueRange values, Type elementType) {
  SmallVector<ArrayRef<int64_t>> shapes;
  for (Value v : values)
    shapes.push_back(tensorOf(v).getShape());
  FailureOr<SmallVector<int64_t>> shape = broadcastShapes(shapes);
  if (failed(shape)) {
    std::string all;
    for (auto [i, s] : llvm::enumerate(shapes))
      all += (i ? " and " : "") + formatShape(s);
    return fail(loc, "operand shapes " + all + " do not broadcast");
  }
  return RankedTensorType::get(
      *shape, elementType ? elementType : tensorOf(values[0]).getElementType());
}

static LogicalResult sameElementType(std::optional<Location> loc, Value a,
                                     Value b, StringRef what) {
  Type ea = tensorOf(a).getElementType(), eb = tensorOf(b).getElementType();
  if (ea == eb)
    return success();
  std::string msg;
  llvm::raw_string_ostream os(msg);
  os << what << " have different element types: '" << ea << "' and '" << eb
     << "'";
  return fail(loc, msg);
}

// The binary elementwise ops and compare: `lhs` and `rhs` of one element
// type, broadcast; the result's element type is `elementType`, or theirs
// when null.
static FailureOr<Type> inferBinary(std::optional<Location> loc, Value lhs,
                                   Value rhs, Type elementType) {
  if (failed(sameElementType(loc, lhs, rhs, "operands")))
    return failure();
  return inferBroadcast(loc, {lhs, rhs}, elementType);
}

template <typename Adaptor>
static FailureOr<Type> inferElementwise(std::optional<Location> loc,
                                        Adaptor adaptor) {
  return inferBinary(loc, adaptor.getLhs(), adaptor.getRhs(), {});
}

static FailureOr<Type> inferCompare(std::optional<Location> loc,
                                    CompareOp::Adaptor adaptor) {
  return inferBinary(loc, adaptor.getLhs(), adaptor.getRhs(),
                     IntegerType::get(adaptor.getLhs().getContext(), 1));
}

static FailureOr<Type> inferWhere(std::optional<Location> loc,
                                  WhereOp::Adaptor adaptor) {
  if (failed(sameElementType(loc, adaptor.getOnTrue(), adaptor.getOnFalse(),
                             "on_true and on_false")))
    return failure();
  return inferBroadcast(
      loc, {adaptor.getCondition(), adaptor.getOnTrue(), adaptor.getOnFalse()},
      tensorOf(adaptor.getOnTrue()).getElementType());
}

static FailureOr<Type> inferMatmul(std::optional<Location> loc,
                                   MatmulOp::Adaptor adaptor) {
  RankedTensorType lhs = tensorOf(adaptor.getLhs());
  RankedTensorType rhs = tensorOf(adaptor.getRhs());
  // C1
  if (lhs.getRank() < 1 || rhs.getRank() < 1)
    return fail(loc, "matmul operands must have rank at least 1");
  if (failed(sameElementType(loc, adaptor.getLhs(), adaptor.getRhs(),
                             "operands")))
    return failure();
  SmallVector<int64_t> a(lhs.getShape()), b(rhs.getShape());
  bool lhsVector = a.size() == 1, rhsVector = b.size() == 1;
  if (lhsVector)
    a.insert(a.begin(), 1);
  if (rhsVector)
    b.push_back(1);
  int64_t m = a[a.size() - 2], k = a.back(), k2 = b[b.size() - 2],
          n = b.back();
  // C2
  if (k != k2)
    return fail(loc, "contracting dims differ: lhs " +
                         formatShape(lhs.getShape()) + " has " + Twine(k) +
                         ", rhs " + formatShape(rhs.getShape()) + " has " +
                         Twine(k2));
  // C3
  FailureOr<SmallVector<int64_t>> batch = broadcastShapes(
      {ArrayRef(a).drop_back(2), ArrayRef(b).drop_back(2)});
  if (failed(batch))
    return fail(loc, "batch dims of " + formatShape(lhs.getShape()) + " and " +
                         formatShape(rhs.getShape()) + " do not broadcast");
  SmallVector<int64_t> shape(*batch);
  if (!lhsVector)
    shape.push_back(m);
  if (!rhsVector)
    shape.push_back(n);
  return RankedTensorType::get(shape, lhs.getElementType());
}

static FailureOr<Type> inferGemm(std::optional<Location> loc,
                                 GemmOp::Adaptor adaptor) {
  RankedTensorType a = tensorOf(adaptor.getA()), b = tensorOf(adaptor.getB());
  // C1
  if (a.getRank() != 2 || b.getRank() != 2)
    return fail(loc, "gemm operands a and b must have rank 2, got " +
                         Twine(a.getRank()) + " and " + Twine(b.getRank()));
  bool ta = adaptor.getTransA(), tb = adaptor.getTransB();
  int64_t m = a.getDimSize(ta ? 1 : 0), k = a.getDimSize(ta ? 0 : 1);
  int64_t k2 = b.getDimSize(tb ? 1 : 0), n = b.getDimSize(tb ? 0 : 1);
  // C2
  if (k != k2)
    return fail(loc, "contracting dims differ: a gives " + Twine(k) +
                         ", b gives " + Twine(k2));
  // C3
  if (Value c = adaptor.getC()) {
    ArrayRef<int64_t> cs = tensorOf(c).getShape();
    FailureOr<SmallVector<int64_t>> bc = broadcastShapes({cs, {m, n}});
    if (cs.size() > 2 || failed(bc) || (*bc)[0] != m || (*bc)[1] != n)
      return fail(loc, "c of shape " + formatShape(cs) +
                           " does not broadcast to [" + Twine(m) + ", " +
                           Twine(n) + "]");
  }
  return RankedTensorType::get({m, n}, a.getElementType());
}

// C1 of the reductions, then the reduced shape.
template <typename Adaptor>
static FailureOr<Type> inferReduce(std::optional<Location> loc,
                                   Adaptor adaptor) {
  RankedTensorType in = tensorOf(adaptor.getInput());
  llvm::SmallSet<int64_t, 4> dims;
  for (int64_t d : adaptor.getDims()) {
    if (failed(checkDimIndex(loc, "reduced dim", d, in.getRank())))
      return failure();
    if (!dims.insert(d).second)
      return fail(loc, "reduced dim " + Twine(d) + " appears twice");
  }
  SmallVector<int64_t> shape;
  for (int64_t i = 0; i < in.getRank(); ++i) {
    if (!dims.contains(i))
      shape.push_back(in.getDimSize(i));
    else if (adaptor.getKeepDims())
      shape.push_back(1);
  }
  return RankedTensorType::get(shape, in.getElementType());
}

static FailureOr<Type> inferGather(std::optional<Location> loc,
                                   GatherOp::Adaptor adaptor) {
  RankedTensorType data = tensorOf(adaptor.getData());
  ArrayRef<int64_t> idx = tensorOf(adaptor.getIndices()).getShape();
  int64_t axis = adaptor.getAxis();
  // C1
  if (failed(checkDimIndex(loc, "gather axis", axis, data.getRank())))
    return failure();
  // C2
  if (std::optional<int64_t> pad = adaptor.getPaddingIdx()) {
    if (axis != 0)
      return fail(loc, "gather padding_idx needs axis 0, got axis " +
                           std::to_string(axis));
    if (*pad < 0 || *pad >= data.getDimSize(0))
      return fail(loc, "gather padding_idx " + std::to_string(*pad) +
                           " is out of range for dim 0 of size " +
                           std::to_string(data.getDimSize(0)));
  }
  SmallVector<int64_t> shape(data.getShape().take_front(axis));
  llvm::append_range(shape, idx);
  llvm::append_range(shape, data.getShape().drop_front(axis + 1));
  return RankedTensorType::get(shape, data.getElementType());
}

static FailureOr<Type> inferGatherElements(std::optional<Location> loc,
                                           GatherElementsOp::Adaptor adaptor) {
  RankedTensorType data = tensorOf(adaptor.getData());
  ArrayRef<int64_t> idx = tensorOf(adaptor.getIndices()).getShape();
  int64_t axis = adaptor.getAxis();
  // C1
  if (failed(checkDimIndex(loc, "gather_elements axis", axis, data.getRank())))
    return failure();
  // C2
  if (static_cast<int64_t>(idx.size()) != data.getRank())
    return fail(loc, "gather_elements indices " + formatShape(idx) +
                         " and data " + formatShape(data.getShape()) +
                         " have different ranks");
  for (int64_t d = 0; d < data.getRank(); ++d)
    if (d != axis && idx[d] > data.getDimSize(d))
      return fail(loc, "gather_elements indices " + formatShape(idx) +
                           " are larger than data " +
                           formatShape(data.getShape()) + " in dim " +
                           Twine(d));
  return RankedTensorType::get(idx, data.getElementType());
}

static FailureOr<Type> inferTranspose(std::optional<Location> loc,
                                      TransposeOp::Adaptor adaptor) {
  RankedTensorType in = tensorOf(adaptor.getInput());
  ArrayRef<int64_t> perm = adaptor.getPerm();
  // C1
  SmallVector<bool> seen(in.getRank(), false);
  bool ok = static_cast<int64_t>(perm.size()) == in.getRank();
  for (int64_t p : perm) {
    if (!ok || !inRange(p, in.getRank()) || seen[p]) {
      ok = false;
      break;
    }
    seen[p] = true;
  }
  if (!ok)
    return fail(loc, "perm " + formatShape(perm) +
                         " is not a permutation of [0, " + Twine(in.getRank()) +
                         ")");
  SmallVector<int64_t> shape;
  for (int64_t p : perm)
    shape.push_back(in.getDimSize(p));
  return RankedTensorType::get(shape, in.getElementType());
}

static FailureOr<Type> inferSlice(std::optional<Location> loc,
                                  SliceOp::Adaptor adaptor) {
  RankedTensorType in = tensorOf(adaptor.getInput());
  ArrayRef<int64_t> starts = adaptor.getStarts(), limits = adaptor.getLimits(),
                    strides = adaptor.getStrides();
  int64_t rank = in.getRank();
  // C1
  if (static_cast<int64_t>(starts.size()) != rank ||
      static_cast<int64_t>(limits.size()) != rank ||
      static_cast<int64_t>(strides.size()) != rank)
    return fail(loc, "slice needs one start:limit:stride per dim (rank " +
                         Twine(rank) + ")");
  SmallVector<int64_t> shape;
  for (int64_t i = 0; i < rank; ++i) {
    int64_t s = starts[i], l = limits[i], t = strides[i],
            size = in.getDimSize(i);
    // C2
    if (s < 0 || s > l || l > size || t < 1)
      return fail(loc, "slice of dim " + Twine(i) + " (size " + Twine(size) +
                           ") needs 0 <= start <= limit <= size and stride >= "
                           "1, got " + Twine(s) + ":" + Twine(l) + ":" +
                           Twine(t));
    // ceil((l - s) / t) without l - s + t - 1, which overflows for a huge
    // stride (the importer fuzzer's find).
    shape.push_back(l == s ? 0 : (l - s - 1) / t + 1);
  }
  return RankedTensorType::get(shape, in.getElementType());
}

static FailureOr<Type> inferConcat(std::optional<Location> loc,
                                   ConcatOp::Adaptor adaptor) {
  ValueRange inputs = adaptor.getInputs();
  // C1
  if (inputs.empty())
    return fail(loc, "concat needs at least one operand");
  RankedTensorType first = tensorOf(inputs[0]);
  int64_t rank = first.getRank(), dim = adaptor.getDim();
  // C2
  if (failed(checkDimIndex(loc, "concat dim", dim, rank)))
    return failure();
  SmallVector<int64_t> shape(first.getShape());
  for (auto [i, v] : llvm::enumerate(inputs.drop_front())) {
    RankedTensorType t = tensorOf(v);
    if (t.getRank() != rank || t.getElementType() != first.getElementType())
      return fail(loc, "concat operand " + Twine(i + 1) +
                           " differs in rank or element type from operand 0");
    // C3
    for (int64_t d = 0; d < rank; ++d)
      if (d != dim && t.getDimSize(d) != shape[d])
        return fail(loc, "concat operand " + Twine(i + 1) + " has size " +
                             Twine(t.getDimSize(d)) + " in dim " + Twine(d) +
                             ", operand 0 has " + Twine(shape[d]));
    // Sizes from an untrusted model: a sum past 2^62 is refused, not
    // wrapped.
    const int64_t add = t.getDimSize(dim);
    if (ShapedType::isDynamic(shape[dim]) || ShapedType::isDynamic(add))
      shape[dim] = ShapedType::kDynamic;
    else if (add > (int64_t(1) << 62) - shape[dim])
      return fail(loc, "concat operands' sizes in dim " + Twine(dim) +
                           " add up past 2^62");
    else
      shape[dim] += add;
  }
  return RankedTensorType::get(shape, first.getElementType());
}

LogicalResult SplitOp::inferReturnTypes(MLIRContext *,
                                        std::optional<Location> loc,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &types) {
  RankedTensorType in = tensorOf(adaptor.getInput());
  int64_t dim = adaptor.getDim();
  // C1
  if (failed(checkDimIndex(loc, "split dim", dim, in.getRank())))
    return failure();
  // C2
  int64_t total = 0;
  for (int64_t s : adaptor.getSizes()) {
    if (s <= 0)
      return fail(loc, "split sizes must be positive, got " +
                           formatShape(adaptor.getSizes()));
    total += s;
  }
  if (total != in.getDimSize(dim))
    return fail(loc, "split sizes " + formatShape(adaptor.getSizes()) +
                         " sum to " + Twine(total) + ", dim " + Twine(dim) +
                         " has size " + Twine(in.getDimSize(dim)));
  for (int64_t s : adaptor.getSizes()) {
    SmallVector<int64_t> shape(in.getShape());
    shape[dim] = s;
    types.push_back(RankedTensorType::get(shape, in.getElementType()));
  }
  return success();
}

// In 128 bits: sizes, pads, strides and dilations come from the model, and
// their sums and products may not fit in 64; a result that does not fit is
// INT64_MAX, which the shape's own checks refuse.
int64_t mlir::tessel::windowOutput(int64_t size, int64_t lo, int64_t hi,
                                   int64_t k, int64_t stride, int64_t dilation,
                                   bool ceil, bool *droppedLast) {
  using Wide = __int128;
  Wide span = (Wide(k) - 1) * dilation + 1;
  Wide num = Wide(size) + lo + hi - span;
  if (droppedLast)
    *droppedLast = false;
  if (num < 0)
    return 0;
  Wide out = (ceil ? (num + stride - 1) / stride : num / stride) + 1;
  // A last window that would start in the right padding is dropped (ONNX).
  if (ceil && (out - 1) * stride >= Wide(size) + lo) {
    --out;
    if (droppedLast)
      *droppedLast = true;
  }
  return out > Wide(INT64_MAX) ? INT64_MAX : int64_t(out);
}

static LogicalResult checkWindowAttrs(std::optional<Location> loc,
                                      ArrayRef<int64_t> pairA, StringRef nameA,
                                      ArrayRef<int64_t> pairB, StringRef nameB,
                                      ArrayRef<int64_t> pads) {
  for (auto [vals, name] : {std::pair{pairA, nameA}, std::pair{pairB, nameB}})
    if (vals.size() != 2 || llvm::any_of(vals, [](int64_t v) { return v < 1; }))
      return fail(loc, name + " must have 2 positive entries, got " +
                           formatShape(vals));
  if (pads.size() != 4 || llvm::any_of(pads, [](int64_t v) { return v < 0; }))
    return fail(loc, "pads must have 4 non-negative entries [top, left, "
                     "bottom, right], got " + formatShape(pads));
  return success();
}

/// The result shape of a conv2d of `x` with `w` (ranked types) and these
/// attributes, or failure with the reason (C1-C4 of conv2d).
static FailureOr<SmallVector<int64_t>>
convOutputShape(std::optional<Location> loc, RankedTensorType x,
                RankedTensorType w, ArrayRef<int64_t> st, ArrayRef<int64_t> pd,
                ArrayRef<int64_t> dl, int64_t g) {
  // C1
  if (x.getRank() != 4 || w.getRank() != 4)
    return fail(loc, "conv2d input and weight must have rank 4, got " +
                         Twine(x.getRank()) + " and " + Twine(w.getRank()));
  // C2
  if (failed(checkWindowAttrs(loc, st, "strides", dl, "dilations", pd)))
    return failure();
  // C3
  int64_t o = w.getDimSize(0), c = x.getDimSize(1);
  if (g < 1 || c % g || o % g || w.getDimSize(1) != c / g)
    return fail(loc, "conv2d with group " + Twine(g) + " over " + Twine(c) +
                         " input channels needs weight dim 1 = " +
                         Twine(g >= 1 ? c / g : 0) + " and " + Twine(o) +
                         " output channels divisible by the group, got weight " +
                         formatShape(w.getShape()));
  int64_t h = windowOutput(x.getDimSize(2), pd[0], pd[2], w.getDimSize(2),
                           st[0], dl[0], false);
  int64_t wd = windowOutput(x.getDimSize(3), pd[1], pd[3], w.getDimSize(3),
                            st[1], dl[1], false);
  // C4
  if (h < 1 || wd < 1)
    return fail(loc, "conv2d output spatial size would be " + Twine(h) + "x" +
                         Twine(wd));
  return SmallVector<int64_t>{x.getDimSize(0), o, h, wd};
}

static FailureOr<Type> inferConv2D(std::optional<Location> loc,
                                   Conv2DOp::Adaptor adaptor) {
  RankedTensorType x = tensorOf(adaptor.getInput());
  RankedTensorType w = tensorOf(adaptor.getWeight());
  if (Value b = adaptor.getBias())
    if (w.getRank() >= 1 &&
        tensorOf(b).getShape() != ArrayRef<int64_t>{w.getDimSize(0)})
      return fail(loc, "conv2d bias must be [" + Twine(w.getDimSize(0)) +
                           "], got " + formatShape(tensorOf(b).getShape()));
  FailureOr<SmallVector<int64_t>> shape =
      convOutputShape(loc, x, w, adaptor.getStrides(), adaptor.getPads(),
                      adaptor.getDilations(), adaptor.getGroup());
  if (failed(shape))
    return failure();
  return RankedTensorType::get(*shape, x.getElementType());
}

/// The result shape of a pooling of `x` with these attributes (C1-C3).
static FailureOr<SmallVector<int64_t>>
poolOutputShape(std::optional<Location> loc, RankedTensorType x,
                ArrayRef<int64_t> k, ArrayRef<int64_t> st, ArrayRef<int64_t> pd,
                bool ceil) {
  // C1
  if (x.getRank() != 4)
    return fail(loc, "pooling input must have rank 4, got " +
                         Twine(x.getRank()));
  // C2
  if (failed(checkWindowAttrs(loc, k, "kernel", st, "strides", pd)))
    return failure();
  int64_t h = windowOutput(x.getDimSize(2), pd[0], pd[2], k[0], st[0], 1, ceil);
  int64_t w = windowOutput(x.getDimSize(3), pd[1], pd[3], k[1], st[1], 1, ceil);
  // C3
  if (h < 1 || w < 1)
    return fail(loc, "pooling output spatial size would be " + Twine(h) + "x" +
                         Twine(w));
  return SmallVector<int64_t>{x.getDimSize(0), x.getDimSize(1), h, w};
}

template <typename Adaptor>
static FailureOr<Type> inferPool(std::optional<Location> loc, Adaptor adaptor) {
  RankedTensorType x = tensorOf(adaptor.getInput());
  FailureOr<SmallVector<int64_t>> shape =
      poolOutputShape(loc, x, adaptor.getKernel(), adaptor.getStrides(),
                      adaptor.getPads(), adaptor.getCeilMode());
  if (failed(shape))
    return failure();
  return RankedTensorType::get(*shape, x.getElementType());
}

static FailureOr<Type> inferGlobalAvgPool(std::optional<Location> loc,
                                          GlobalAvgPoolOp::Adaptor adaptor) {
  RankedTensorType x = tensorOf(adaptor.getInput());
  // C1
  if (x.getRank() < 3)
    return fail(loc, "global_avg_pool input must have rank at least 3, got " +
                         Twine(x.getRank()));
  SmallVector<int64_t> shape(x.getShape().take_front(2));
  shape.append(x.getRank() - 2, 1);
  return RankedTensorType::get(shape, x.getElementType());
}

#define TESSEL_RESULT_INFERENCE(OP, RULE)                                      \
  LogicalResult OP::inferReturnTypes(                                          \
      MLIRContext *, std::optional<Location> loc, OP::Adaptor adaptor,         \
      SmallVectorImpl<Type> &types) {                                          \
    FailureOr<Type> type = RULE(loc, adaptor);                                 \
    if (failed(type))                                                          \
      return failure();                                                        \
    types.push_back(*type);                                                    \
    return success();                                                          \
  }
TESSEL_RESULT_INFERENCE(LayerNormOp, inferSameType)
TESSEL_RESULT_INFERENCE(RmsNormOp, inferSameType)
TESSEL_RESULT_INFERENCE(BatchNormOp, inferSameType)
TESSEL_RESULT_INFERENCE(AddOp, inferElementwise)
TESSEL_RESULT_INFERENCE(SubOp, inferElementwise)
TESSEL_RESULT_INFERENCE(MulOp, inferElementwise)
TESSEL_RESULT_INFERENCE(DivOp, inferElementwise)
TESSEL_RESULT_INFERENCE(PowOp, inferElementwise)
TESSEL_RESULT_INFERENCE(MaxOp, inferElementwise)
TESSEL_RESULT_INFERENCE(MinOp, inferElementwise)
TESSEL_RESULT_INFERENCE(ModOp, inferElementwise)
TESSEL_RESULT_INFERENCE(FModOp, inferElementwise)
TESSEL_RESULT_INFERENCE(CompareOp, inferCompare)
TESSEL_RESULT_INFERENCE(WhereOp, inferWhere)
TESSEL_RESULT_INFERENCE(MatmulOp, inferMatmul)
TESSEL_RESULT_INFERENCE(GemmOp, inferGemm)
TESSEL_RESULT_INFERENCE(ReduceSumOp, inferReduce)
TESSEL_RESULT_INFERENCE(ReduceMeanOp, inferReduce)
TESSEL_RESULT_INFERENCE(ReduceMaxOp, inferReduce)
TESSEL_RESULT_INFERENCE(GatherOp, inferGather)
TESSEL_RESULT_INFERENCE(GatherElementsOp, inferGatherElements)
TESSEL_RESULT_INFERENCE(TransposeOp, inferTranspose)
TESSEL_RESULT_INFERENCE(SliceOp, inferSlice)
TESSEL_RESULT_INFERENCE(ConcatOp, inferConcat)
TESSEL_RESULT_INFERENCE(Conv2DOp, inferConv2D)
TESSEL_RESULT_INFERENCE(MaxPoolOp, inferPool)
TESSEL_RESULT_INFERENCE(AvgPoolOp, inferPool)
TESSEL_RESULT_INFERENCE(GlobalAvgPoolOp, inferGlobalAvgPool)
#undef TESSEL_RESULT_INFERENCE

/// `expected` (a forward op's result shape, or failure already reported)
/// must be `grad`'s shape (C2 of the backward ops).
static LogicalResult gradShapeIs(Operation *op, FailureOr<SmallVector<int64_t>> expected,
                                 Value grad) {
  if (failed(expected))
    return failure();
  if (ArrayRef<int64_t>(*expected) != tensorOf(grad).getShape())
    return op->emitOpError() << "grad has shape "
                             << formatShape(tensorOf(grad).getShape())
                             << ", the forward op's result would be "
                             << formatShape(*expected);
  return success();
}

/// C2 of the conv2d backward ops: `grad` is what conv2d of `x` by `w` gives
/// (C1, the operands' ranks, in convOutputShape).
template <typename OpT>
static LogicalResult verifyConvGrad(OpT op, Value x, Value w) {
  if (tensorOf(op.getGrad()).getRank() != 4)
    return op.emitOpError() << "grad must have rank 4";
  return gradShapeIs(op, convOutputShape(op.getLoc(), tensorOf(x), tensorOf(w),
                                         op.getStrides(), op.getPads(),
                                         op.getDilations(), op.getGroup()),
                     op.getGrad());
}

/// C2 of the pooling backward ops: `grad` is what pooling `x` gives.
template <typename OpT>
static LogicalResult verifyPoolGrad(OpT op, Value x) {
  return gradShapeIs(op, poolOutputShape(op.getLoc(), tensorOf(x),
                                         op.getKernel(), op.getStrides(),
                                         op.getPads(), op.getCeilMode()),
                     op.getGrad());
}

LogicalResult Conv2DBackwardDataOp::verify() {
  return verifyConvGrad(*this, getResult(), getWeight());
}

LogicalResult Conv2DBackwardWeightOp::verify() {
  return verifyConvGrad(*this, getInput(), getResult());
}

LogicalResult MaxPoolBackwardOp::verify() {
  if (getInput().getType() != getResult().getType())
    return emitOpError() << "result must have the input's type";
  return verifyPoolGrad(*this, getInput());
}

LogicalResult AvgPoolBackwardOp::verify() {
  return verifyPoolGrad(*this, getResult());
}

//===----------------------------------------------------------------------===//
// Folders
//===----------------------------------------------------------------------===//

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValue(); }

OpFoldResult ReshapeOp::fold(FoldAdaptor adaptor) {
  if (getInput().getType() == getType())
    return getInput();
  if (auto dense = dyn_cast_if_present<DenseElementsAttr>(adaptor.getInput()))
    return dense.reshape(getType());
  return {};
}

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

// The group size of a verified collective (or local_slice): the product of
// its axis sizes.
template <typename OpT> static int64_t groupSizeOf(OpT op) {
  auto mesh =
      SymbolTable::lookupNearestSymbolFrom<MeshOp>(op, op.getMeshAttr());
  if (!mesh)
    return 1;
  SmallVector<int64_t> sizes;
  for (Attribute a : op.getAxes())
    sizes.push_back(mesh.getAxisSize(cast<StringAttr>(a).getValue()).value_or(1));
  return checkedShardCount(sizes).value_or(1);
}

#define TESSEL_GROUP_SIZE(OP)                                                  \
  int64_t OP::getGroupSize() { return groupSizeOf(*this); }
TESSEL_GROUP_SIZE(AllReduceOp)
TESSEL_GROUP_SIZE(AllGatherOp)
TESSEL_GROUP_SIZE(ReduceScatterOp)
TESSEL_GROUP_SIZE(AllToAllOp)
TESSEL_GROUP_SIZE(CollectivePermuteOp)
TESSEL_GROUP_SIZE(BroadcastOp)
TESSEL_GROUP_SIZE(SendOp)
TESSEL_GROUP_SIZE(RecvOp)
TESSEL_GROUP_SIZE(LocalSliceOp)
#undef TESSEL_GROUP_SIZE
