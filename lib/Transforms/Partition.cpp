//===- Partition.cpp - SPMD partitioning of an annotated program ----------===//
//
// Rewrites the output of -tessel-propagate into the program every rank runs:
// global shapes become local shapes, each op computes in the sharding its
// #tessel.rule derives from its results' specs, and each use of a value in
// another sharding than the one it has gets the collectives that reshard it
// (all_reduce / reduce_scatter for partials, all_to_all, all_gather,
// local_slice). See docs/propagation.md.
//
//===----------------------------------------------------------------------===//

#include "dialects/tessel/TesselOps.h"
#include "tessel/Transforms/FactorSharding.h"
#include "tessel/Transforms/PadContent.h"
#include "tessel/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"

namespace mlir::tessel {
#define GEN_PASS_DEF_PARTITIONPASS
#include "tessel/Transforms/Passes.h.inc"

namespace {

// The global specs the exporter needs (IR contracts, TesselDialect.td).
constexpr StringLiteral kGlobalShardingAttrName =
    TesselDialect::kGlobalShardingAttrName;
constexpr StringLiteral kGlobalArgShardingsAttrName =
    TesselDialect::kGlobalArgShardingsAttrName;
constexpr StringLiteral kGlobalResultShardingsAttrName =
    TesselDialect::kGlobalResultShardingsAttrName;

/// A mutable sharding.
struct Layout {
  SmallVector<AxisList> dims;
  SmallVector<int64_t> pads;
  SmallVector<PartialAxisAttr> partials;

  static Layout of(TensorShardingAttr s) {
    Layout l;
    for (DimShardingAttr d : s.getDims()) {
      l.dims.emplace_back(d.getAxes().begin(), d.getAxes().end());
      l.pads.push_back(d.getPad());
    }
    l.partials.assign(s.getPartials().begin(), s.getPartials().end());
    return l;
  }
  static Layout replicated(int64_t rank) {
    Layout l;
    l.dims.resize(rank);
    l.pads.assign(rank, 0);
    return l;
  }
};

std::string describeValue(Value v) {
  if (auto arg = dyn_cast<BlockArgument>(v))
    return ("argument " + Twine(arg.getArgNumber())).str();
  Operation *def = v.getDefiningOp();
  if (auto w = dyn_cast<WeightOp>(def))
    return ("weight \"" + w.getName() + "\"").str();
  return ("result " + Twine(cast<OpResult>(v).getResultNumber()) + " of '" +
          def->getName().getStringRef() + "'")
      .str();
}

bool isPrefix(ArrayRef<StringAttr> a, ArrayRef<StringAttr> b) {
  return a.size() <= b.size() && a == b.take_front(a.size());
}

class Partitioner {
public:
  Partitioner(MeshOp mesh) : mesh(mesh) {
    meshRef = FlatSymbolRefAttr::get(mesh.getSymNameAttr());
  }
  LogicalResult run(func::FuncOp fn);

private:
  int64_t axisSize(StringAttr a) {
    return mesh.getAxisSize(a.getValue()).value_or(1);
  }
  int64_t shards(ArrayRef<StringAttr> axes) {
    return getNumShards(axes, [&](StringAttr a) { return axisSize(a); });
  }
  RankedTensorType localType(Value v, const Layout &l);
  TensorShardingAttr toAttr(const Layout &l);
  ArrayAttr axesAttr(ArrayRef<StringAttr> axes);
  FailureOr<Value> reshard(Value v, const Layout &target, Operation *user);
  FailureOr<Value> reshardThroughFactors(ReshapeOp op, OpShardingRuleAttr rule,
                                         const Layout &result);
  void warnLostMinorSplit(ReshapeOp op, OpShardingRuleAttr rule,
                          ArrayRef<AxisList> chosen);
  LogicalResult partitionOp(Operation *op);
  bool exactOverPad(Operation *op, OpShardingRuleAttr rule, int64_t factor);
  LogicalResult refusePaddedReduction(Operation *op, Value v, int64_t d,
                                      const Layout &want);
  bool hasPad(Value v) const {
    auto it = layouts.find(v);
    return it != layouts.end() &&
           llvm::any_of(it->second.pads, [](int64_t p) { return p != 0; });
  }
  SmallVector<int64_t> padsOf(Value v) const {
    auto it = layouts.find(v);
    return it == layouts.end() ? SmallVector<int64_t>() : it->second.pads;
  }
  PadContentAnalysis padContent{[this](Value v) { return hasPad(v); },
                                [this](Value v) { return padsOf(v); }};

  MeshOp mesh;
  FlatSymbolRefAttr meshRef;
  /// Global types and the layout each (local) value currently has.
  DenseMap<Value, RankedTensorType> globalTypes;
  DenseMap<Value, Layout> layouts;
  DenseMap<std::pair<Value, Attribute>, Value> reshards;
  /// Rules are read from the global types, before any op changes.
  DenseMap<Operation *, OpShardingRuleAttr> rules;
};

RankedTensorType Partitioner::localType(Value v, const Layout &l) {
  RankedTensorType g = globalTypes.lookup(v);
  SmallVector<int64_t> shape(g.getShape());
  for (auto [d, axes] : llvm::enumerate(l.dims))
    shape[d] = (shape[d] + l.pads[d]) / shards(axes);
  return g.clone(shape);
}

TensorShardingAttr Partitioner::toAttr(const Layout &l) {
  MLIRContext *ctx = mesh.getContext();
  SmallVector<DimShardingAttr> dims;
  for (auto [axes, pad] : llvm::zip(l.dims, l.pads))
    dims.push_back(DimShardingAttr::get(ctx, axes, axes.empty() ? 0 : pad));
  return TensorShardingAttr::get(ctx, meshRef, dims, l.partials);
}

ArrayAttr Partitioner::axesAttr(ArrayRef<StringAttr> axes) {
  return ArrayAttr::get(mesh.getContext(),
                        SmallVector<Attribute>(axes.begin(), axes.end()));
}

// Reshards the local value `v` from its layout to `target`, once per target;
// the collectives go right after `v`'s definition so that every use shares
// them.
FailureOr<Value> Partitioner::reshard(Value v, const Layout &target,
                                      Operation *user) {
  TensorShardingAttr key = toAttr(target);
  Layout cur = layouts.lookup(v);
  if (toAttr(cur) == key)
    return v;
  auto it = reshards.find({v, key});
  if (it != reshards.end())
    return it->second;

  OpBuilder b(v.getContext());
  b.setInsertionPointAfterValue(v);
  Location loc = v.getLoc();
  RankedTensorType global = globalTypes.lookup(v);
  Value x = v;
  auto type = [&]() { return cast<RankedTensorType>(x.getType()); };
  auto i64 = [&](int64_t n) { return b.getI64IntegerAttr(n); };
  auto kindAttr = [&](ReductionKind k) {
    return ReductionKindAttr::get(b.getContext(), k);
  };
  auto withDim = [&](int64_t d, int64_t size) {
    SmallVector<int64_t> shape(type().getShape());
    shape[d] = size;
    return type().clone(shape);
  };
  auto refuse = [&](int64_t d, ArrayRef<StringAttr> axes, StringRef why) {
    return user->emitOpError()
           << "cannot reshard " << describeValue(v) << " dim " << d
           << " of size " << global.getDimSize(d) << " with pad "
           << cur.pads[d] << " over axes " << formatAxes(axes) << ": " << why;
  };

  // 1. Pending partials: reduce_scatter into a dim the target splits next
  // over the same axis, all_reduce otherwise.
  SmallVector<PartialAxisAttr> toReduce;
  for (PartialAxisAttr p : cur.partials) {
    if (llvm::is_contained(target.partials, p))
      continue;
    bool scattered = false;
    for (auto [d, axes] : llvm::enumerate(cur.dims)) {
      const AxisList &want = target.dims[d];
      if (cur.pads[d] || target.pads[d] || !isPrefix(axes, want) ||
          want.size() == axes.size() || want[axes.size()] != p.getAxis())
        continue;
      int64_t n = axisSize(p.getAxis());
      x = ReduceScatterOp::create(b, loc, withDim(d, type().getDimSize(d) / n),
                                  kindAttr(p.getKind()), x, meshRef,
                                  axesAttr({p.getAxis()}), i64(d));
      axes.push_back(p.getAxis());
      scattered = true;
      break;
    }
    if (!scattered)
      toReduce.push_back(p);
  }
  for (ReductionKind kind : {ReductionKind::Sum, ReductionKind::Max,
                             ReductionKind::Min, ReductionKind::Mean}) {
    AxisList axes;
    for (PartialAxisAttr p : toReduce)
      if (p.getKind() == kind)
        axes.push_back(p.getAxis());
    if (!axes.empty())
      x = AllReduceOp::create(b, loc, type(), kindAttr(kind), x, meshRef,
                              axesAttr(axes));
  }
  for (PartialAxisAttr p : target.partials)
    if (!llvm::is_contained(cur.partials, p))
      return user->emitOpError()
             << "cannot make " << describeValue(v) << " partial over axis \""
             << p.getAxis().getValue() << "\"";
  cur.partials = target.partials;

  // 2. A minor axis that moves to another dim: all_to_all.
  for (bool moved = true; moved;) {
    moved = false;
    for (int64_t d1 = 0; d1 < static_cast<int64_t>(cur.dims.size()); ++d1) {
      if (cur.dims[d1].empty() || isPrefix(cur.dims[d1], target.dims[d1]) ||
          cur.pads[d1])
        continue;
      StringAttr a = cur.dims[d1].back();
      for (int64_t d2 = 0; d2 < static_cast<int64_t>(cur.dims.size()); ++d2) {
        const AxisList &want = target.dims[d2];
        AxisList &have = cur.dims[d2];
        if (d2 == d1 || cur.pads[d2] || target.pads[d2] ||
            !isPrefix(have, want) || want.size() == have.size() ||
            want[have.size()] != a)
          continue;
        int64_t n = axisSize(a);
        SmallVector<int64_t> shape(type().getShape());
        if (shape[d2] % n)
          continue;
        shape[d2] /= n;
        shape[d1] *= n;
        x = AllToAllOp::create(b, loc, type().clone(shape), x, meshRef,
                               axesAttr({a}), i64(d2), i64(d1));
        cur.dims[d1].pop_back();
        have.push_back(a);
        moved = true;
        break;
      }
    }
  }

  // 3. Axes the target does not have at that place: all_gather.
  for (auto [d, axes] : llvm::enumerate(cur.dims)) {
    const AxisList &want = target.dims[d];
    size_t k = 0;
    while (k < axes.size() && k < want.size() && axes[k] == want[k])
      ++k;
    if (k == axes.size())
      continue;
    ArrayRef<StringAttr> gathered = ArrayRef<StringAttr>(axes).drop_front(k);
    if (cur.pads[d] && k != 0)
      return refuse(d, gathered, "a padded dim is gathered only whole");
    int64_t n = shards(gathered);
    x = AllGatherOp::create(b, loc, withDim(d, type().getDimSize(d) * n), x,
                            meshRef, axesAttr(gathered), i64(d));
    axes.resize(k);
    if (cur.pads[d] && !target.pads[d]) {
      // Drop the pad.
      RankedTensorType t = type();
      SmallVector<int64_t> starts(t.getRank(), 0), limits(t.getShape()),
          strides(t.getRank(), 1);
      limits[d] = global.getDimSize(d);
      x = SliceOp::create(b, loc, withDim(d, limits[d]), x,
                          b.getDenseI64ArrayAttr(starts),
                          b.getDenseI64ArrayAttr(limits),
                          b.getDenseI64ArrayAttr(strides));
      cur.pads[d] = 0;
    }
  }

  // 4. Axes the target adds: keep this rank's block, no communication.
  for (auto [d, axes] : llvm::enumerate(cur.dims)) {
    const AxisList &want = target.dims[d];
    if (want.size() == axes.size())
      continue;
    ArrayRef<StringAttr> added = ArrayRef<StringAttr>(want).drop_front(axes.size());
    if (target.pads[d] != cur.pads[d])
      return refuse(d, added,
                    ("splitting a dim locally with a pad is not supported "
                     "yet (a plan's `pad:` split meets a value its pad did "
                     "not reach, e.g. attention heads reshaped out of the "
                     "padded dim): give the axes a size that divides " +
                     Twine(global.getDimSize(d)) +
                     " (--mesh AXIS=K), or leave that weight unsplit")
                        .str());
    int64_t n = shards(added);
    x = LocalSliceOp::create(b, loc, withDim(d, type().getDimSize(d) / n), x,
                             meshRef, axesAttr(added), i64(d));
    axes.assign(want.begin(), want.end());
  }

  globalTypes[x] = global;
  layouts[x] = target;
  reshards[{v, key}] = x;
  return x;
}

// A reshape whose result splits a factor that is not the major sharded
// factor of its operand dim (the batch of [seq*batch, d] -> [seq, batch, d]):
// one rank's operand rows are strided, which no dim sharding of the operand
// describes. The operand is reshaped locally into one dim per factor, where
// every factor sharding is a dim sharding, resharded there (local_slice,
// all_to_all, all_gather) to the factor shardings of the result, and the op
// then reshapes that local value into the local result.
FailureOr<Value> Partitioner::reshardThroughFactors(ReshapeOp op,
                                                    OpShardingRuleAttr rule,
                                                    const Layout &result) {
  auto sizeFn = [&](StringAttr a) { return axisSize(a); };
  ArrayRef<int64_t> sizes = rule.getFactorSizes();
  Value in = op.getInput();
  TensorMappingAttr inMap = rule.getOperandMappings()[0];
  TensorMappingAttr outMap = rule.getResultMappings()[0];

  // The operand's own layout, on its factors; axes that do not project onto
  // them (a minor factor already split, a pad) are gathered first.
  // A dim that is one factor alone keeps its pad.
  Layout cur = layouts.lookup(in);
  Layout keep = cur;
  SmallVector<AxisList> inFactorAxes(sizes.size());
  SmallVector<int64_t> inPads(sizes.size(), 0), outPads(sizes.size(), 0);
  SmallVector<int64_t> expandedShape, expandedFactors;
  for (auto [d, dm] : llvm::enumerate(inMap.getDims())) {
    SmallVector<int64_t> fsizes;
    for (int64_t f : dm.getFactors())
      fsizes.push_back(sizes[f]);
    if (fsizes.size() == 1 && cur.pads[d]) {
      int64_t f = dm.getFactors()[0];
      inFactorAxes[f] = cur.dims[d];
      inPads[f] = cur.pads[d];
      expandedShape.push_back(sizes[f]);
      expandedFactors.push_back(f);
      continue;
    }
    bool complete = false;
    SmallVector<AxisList> proj =
        projectDimToFactors(fsizes, cur.dims[d], sizeFn, &complete);
    if (!complete || cur.pads[d]) {
      if (!cur.dims[d].empty())
        op.emitWarning() << "gathers dim " << d << " of " << describeValue(in)
                         << " (size " << globalTypes.lookup(in).getDimSize(d)
                         << ", pad " << cur.pads[d] << ", split over "
                         << formatAxes(cur.dims[d])
                         << "): its blocks are not blocks of the factors "
                            "the reshape splits";
      keep.dims[d].clear();
      keep.pads[d] = 0;
      proj.assign(fsizes.size(), AxisList());
    }
    for (auto [k, f] : llvm::enumerate(dm.getFactors())) {
      inFactorAxes[f] = proj[k];
      expandedShape.push_back(sizes[f]);
      expandedFactors.push_back(f);
    }
  }
  FailureOr<Value> kept = reshard(in, keep, op);
  if (failed(kept))
    return failure();

  // The result's layout on its factors: where the expanded value must go.
  SmallVector<AxisList> outFactorAxes(sizes.size());
  for (auto [d, dm] : llvm::enumerate(outMap.getDims())) {
    SmallVector<int64_t> fsizes;
    for (int64_t f : dm.getFactors())
      fsizes.push_back(sizes[f]);
    if (fsizes.size() == 1 && result.pads[d]) {
      outFactorAxes[dm.getFactors()[0]] = result.dims[d];
      outPads[dm.getFactors()[0]] = result.pads[d];
      continue;
    }
    SmallVector<AxisList> proj =
        projectDimToFactors(fsizes, result.dims[d], sizeFn);
    for (auto [k, f] : llvm::enumerate(dm.getFactors()))
      outFactorAxes[f] = proj[k];
  }

  auto global = cast<RankedTensorType>(globalTypes.lookup(in))
                    .clone(expandedShape);
  Layout from = Layout::replicated(expandedShape.size());
  Layout to = Layout::replicated(expandedShape.size());
  from.partials = keep.partials;
  for (auto [e, f] : llvm::enumerate(expandedFactors)) {
    from.dims[e] = inFactorAxes[f];
    from.pads[e] = inPads[f];
    to.dims[e] = outFactorAxes[f];
    to.pads[e] = outPads[f];
  }
  SmallVector<int64_t> local(expandedShape);
  for (auto [e, axes] : llvm::enumerate(from.dims))
    local[e] = (local[e] + from.pads[e]) / shards(axes);
  OpBuilder b(op);
  Value expanded =
      ReshapeOp::create(b, op.getLoc(), global.clone(local), *kept);
  globalTypes[expanded] = global;
  layouts[expanded] = from;
  return reshard(expanded, to, op);
}

// A reshape that merges a split factor into a result dim after an unsplit
// one ([seq, batch, d] -> [seq*batch, d] with the batch split) cannot keep the
// split: a dim splits only in blocks. The operand is gathered and the ops
// that follow run on the whole tensor; say so rather than do it silently.
void Partitioner::warnLostMinorSplit(ReshapeOp op, OpShardingRuleAttr rule,
                                     ArrayRef<AxisList> chosen) {
  auto sizeFn = [&](StringAttr a) { return axisSize(a); };
  ArrayRef<int64_t> sizes = rule.getFactorSizes();
  const Layout &cur = layouts[op.getInput()];
  for (auto [d, dm] : llvm::enumerate(rule.getOperandMappings()[0].getDims())) {
    SmallVector<int64_t> fsizes;
    for (int64_t f : dm.getFactors())
      fsizes.push_back(sizes[f]);
    SmallVector<AxisList> proj =
        projectDimToFactors(fsizes, cur.dims[d], sizeFn);
    for (auto [k, f] : llvm::enumerate(dm.getFactors())) {
      if (proj[k].empty() || !chosen[f].empty())
        continue;
      for (auto [rd, rdm] :
           llvm::enumerate(rule.getResultMappings()[0].getDims())) {
        ArrayRef<int64_t> rfs = rdm.getFactors();
        if (rfs.empty() || rfs.front() == f || !llvm::is_contained(rfs, f))
          continue;
        op.emitWarning() << "gathers dim " << d << " of "
                         << describeValue(op.getInput()) << " (split over "
                         << formatAxes(proj[k]) << "): result dim " << rd
                         << " (size " << op.getType().getDimSize(rd)
                         << ") holds that factor (size " << sizes[f]
                         << ") after an unsplit one, and a dim splits only in "
                            "blocks, so the ops that follow run on the whole "
                            "tensor";
        return;
      }
    }
  }
}

bool Partitioner::exactOverPad(Operation *op, OpShardingRuleAttr rule,
                               int64_t factor) {
  // The operands that carry the padded factor; one zero and all finite.
  bool zero = false;
  for (auto [i, m] : llvm::enumerate(rule.getOperandMappings())) {
    Value v = op->getOperand(i);
    PadContent c = padContent.get(v);
    if (c == PadContent::Unknown)
      return false;
    bool carries = llvm::any_of(m.getDims(), [&](auto dm) {
      return llvm::is_contained(dm.getFactors(), factor);
    });
    zero |= carries && c == PadContent::Zero;
  }
  // gather_grad sums the gradient rows of equal indices: a zero padded row
  // adds nothing, whichever row its index names.
  return zero && isa<MatmulOp, GemmOp, ReduceSumOp, GatherGradOp>(op);
}

LogicalResult Partitioner::refusePaddedReduction(Operation *op, Value v,
                                                 int64_t d,
                                                 const Layout &want) {
  int64_t size = globalTypes[v].getDimSize(d);
  InFlightDiagnostic diag = op->emitOpError()
      << "reduces over dim " << d << " of " << describeValue(v) << " (size "
      << size << ", pad " << want.pads[d] << ") split over axes "
      << formatAxes(want.dims[d]) << "; the pad would enter the reduction: ";
  if (!isa<MatmulOp, GemmOp, ReduceSumOp, GatherGradOp>(op)) {
    diag << "only sums and matmuls over a padded dim are exact";
  } else {
    Operation *why = nullptr;
    for (Value o : op->getOperands())
      if (!why)
        why = padContent.culprit(o);
    diag << "its padded entries are not known to be zero";
    if (why)
      diag << " ('" << why->getName() << "' at " << why->getLoc()
           << " makes them f(0) != 0 or not finite)";
  }
  // The padded dim is the batch when an input's dim 0 has its size: a
  // training step cannot sum over padded rows.
  bool batch = false;
  if (auto fn = op->getParentOfType<func::FuncOp>())
    for (BlockArgument a : fn.getArguments()) {
      RankedTensorType t = globalTypes.lookup(a);
      if (!t)
        t = dyn_cast<RankedTensorType>(a.getType());
      batch |= t && t.getRank() > 0 && t.getDimSize(0) == size;
    }
  if (batch) {
    const int64_t n = shards(want.dims[d]);
    diag << ". The batch of " << size << " does not divide over "
         << formatAxes(want.dims[d]) << " (" << n
         << " shards), and a training step sums its gradients over the "
            "batch's rows: export the model at a batch of a multiple of "
         << n << ", or give those axes sizes that divide " << size;
    return diag;
  }
  diag << ". In the plan, split a dim the axes divide (`split: {dim: N, "
          "axes: [AXIS]}` on a weight whose dim divides), or give the mesh "
          "axis a size that divides "
       << size << " (--mesh AXIS=K)";
  return diag;
}

LogicalResult Partitioner::partitionOp(Operation *op) {
  StringRef attrName = TesselDialect::kShardingAttrName;
  auto isTensor = [](Type t) { return isa<RankedTensorType>(t); };
  auto resultSpec = [&](unsigned i) -> TensorShardingAttr {
    Attribute a = op->getAttr(attrName);
    if (auto s = dyn_cast_if_present<TensorShardingAttr>(a))
      return s;
    if (auto arr = dyn_cast_if_present<ArrayAttr>(a))
      return cast<TensorShardingAttr>(arr[i]);
    return {};
  };

  // A constraint has done its work once its operand is resharded.
  if (auto c = dyn_cast<ShardConstraintOp>(op)) {
    FailureOr<Value> v = reshard(c.getInput(), Layout::of(c.getSharding()), op);
    if (failed(v))
      return failure();
    c.getResult().replaceAllUsesWith(*v);
    c.erase();
    return success();
  }

  // An assigned weight keeps its layout: the new value is resharded to it.
  if (auto a = dyn_cast<AssignOp>(op)) {
    Layout want = layouts.lookup(a.getWeight());
    FailureOr<Value> v = reshard(a.getValue(), want, op);
    if (failed(v))
      return failure();
    a.getValueMutable().assign(*v);
    layouts[a.getResult()] = want;
    a.getResult().setType(localType(a.getResult(), want));
    op->removeAttr(attrName);
    return success();
  }

  auto iface = dyn_cast<ShardingRuleOpInterface>(op);
  if (!iface) {
    // A barrier runs on replicated values.
    for (OpOperand &o : op->getOpOperands()) {
      if (!isTensor(o.get().getType()))
        continue;
      FailureOr<Value> v = reshard(
          o.get(), Layout::replicated(globalTypes[o.get()].getRank()), op);
      if (failed(v))
        return failure();
      o.set(*v);
    }
    for (Value r : op->getResults())
      if (isTensor(r.getType()))
        layouts[r] = Layout::replicated(globalTypes[r].getRank());
    op->removeAttr(attrName);
    return success();
  }

  OpShardingRuleAttr rule = rules.lookup(op);
  ArrayRef<int64_t> sizes = rule.getFactorSizes();
  int64_t numFactors = rule.getNumFactors();
  SmallVector<AxisList> chosen(numFactors);
  SmallVector<int64_t> pads(numFactors, 0);
  llvm::SmallDenseSet<StringAttr> used;
  auto sizeFn = [&](StringAttr a) { return axisSize(a); };
  auto take = [&](ArrayRef<int64_t> fs, ArrayRef<StringAttr> axes,
                  int64_t pad, bool reductionOnly) {
    SmallVector<int64_t> fsizes;
    for (int64_t f : fs)
      fsizes.push_back(sizes[f]);
    // A padded dim: its major factor takes the axes and the pad
    // (FactorSharding.h).
    if (pad) {
      std::optional<int64_t> fp = factorPadOfDim(fsizes, pad);
      if (fp && chosen[fs[0]].empty() &&
          !rule.isNeedReplicationFactor(fs[0]) &&
          llvm::none_of(axes, [&](StringAttr a) { return used.contains(a); })) {
        chosen[fs[0]].assign(axes.begin(), axes.end());
        pads[fs[0]] = *fp;
        used.insert(axes.begin(), axes.end());
      }
      return;
    }
    SmallVector<AxisList> proj = projectDimToFactors(fsizes, axes, sizeFn);
    for (auto [k, f] : llvm::enumerate(fs)) {
      if (!chosen[f].empty() || proj[k].empty() ||
          rule.isNeedReplicationFactor(f) ||
          reductionOnly != rule.isReductionFactor(f) ||
          llvm::any_of(proj[k], [&](StringAttr a) { return used.contains(a); }))
        continue;
      chosen[f] = proj[k];
      used.insert(proj[k].begin(), proj[k].end());
    }
  };

  // Pass factors follow the results' specs; reduction factors follow the
  // operands (the result then holds a pending reduction).
  bool isConstant = false;
  if (auto c = dyn_cast<ConstantOp>(op)) {
    auto dense = dyn_cast<DenseElementsAttr>(c.getValue());
    isConstant = !dense || !dense.isSplat();
  }
  for (auto [i, m] : llvm::enumerate(rule.getResultMappings())) {
    TensorShardingAttr spec = resultSpec(i);
    if (!spec || isConstant)
      continue;
    for (auto [d, dm] : llvm::enumerate(m.getDims()))
      take(dm.getFactors(), spec.getDims()[d].getAxes(),
           spec.getDims()[d].getPad(), false);
  }
  for (auto [i, m] : llvm::enumerate(rule.getOperandMappings())) {
    const Layout &l = layouts[op->getOperand(i)];
    for (auto [d, dm] : llvm::enumerate(m.getDims()))
      take(dm.getFactors(), l.dims[d], l.pads[d], true);
  }

  // The layout a tensor has under the chosen factor shardings.
  auto layoutOf = [&](TensorMappingAttr m) {
    Layout l = Layout::replicated(m.getDims().size());
    for (auto [d, dm] : llvm::enumerate(m.getDims())) {
      ArrayRef<int64_t> fs = dm.getFactors();
      SmallVector<int64_t> fsizes;
      SmallVector<AxisList> faxes;
      for (int64_t f : fs) {
        fsizes.push_back(sizes[f]);
        faxes.push_back(chosen[f]);
      }
      l.dims[d] = projectFactorsToDim(fsizes, faxes, sizeFn);
      if (!fs.empty() && !l.dims[d].empty())
        l.pads[d] = dimPadOfFactor(fsizes, faxes, pads[fs[0]]);
    }
    return l;
  };

  // A reshape that splits a factor its operand dim cannot show goes through
  // one dim per factor.
  auto countAxes = [](const Layout &l) {
    size_t n = 0;
    for (const AxisList &axes : l.dims)
      n += axes.size();
    return n;
  };
  bool throughFactors = false;
  if (auto reshape = dyn_cast<ReshapeOp>(op)) {
    warnLostMinorSplit(reshape, rule, chosen);
    Layout result = layoutOf(rule.getResultMappings()[0]);
    if (countAxes(layoutOf(rule.getOperandMappings()[0])) != countAxes(result)) {
      FailureOr<Value> v = reshardThroughFactors(reshape, rule, result);
      if (failed(v))
        return failure();
      reshape.getInputMutable().assign(*v);
      throughFactors = true;
    }
  }

  // A sum of two partial sums over the same axes stays partial: each rank
  // adds its addends and one reduction follows the last add (a weight's
  // gradient accumulated over microbatches is reduced once, not once per
  // microbatch). So does a reshape of a partial sum (it moves elements,
  // combines none). Only for a result with one user (the reduction is then
  // one, wherever it lands), and not where the result is split over one of
  // those axes.
  SmallVector<PartialAxisAttr> sumPartials;
  auto keepsSum = [&](ArrayRef<PartialAxisAttr> partials) {
    return !partials.empty() &&
           llvm::all_of(partials, [&](PartialAxisAttr p) {
             return p.getKind() == ReductionKind::Sum &&
                    !used.contains(p.getAxis());
           });
  };
  if (!throughFactors && op->getNumResults() == 1 &&
      op->getResult(0).hasOneUse()) {
    if (isa<ReshapeOp>(op)) {
      const Layout &a = layouts[op->getOperand(0)];
      if (keepsSum(a.partials))
        sumPartials = a.partials;
    } else if (isa<AddOp>(op) && op->getNumOperands() == 2) {
      const Layout &a = layouts[op->getOperand(0)];
      const Layout &b = layouts[op->getOperand(1)];
      if (a.partials == b.partials && keepsSum(a.partials))
        sumPartials = a.partials;
    }
  }
  for (auto [i, m] : llvm::enumerate(rule.getOperandMappings())) {
    OpOperand &o = op->getOpOperand(i);
    if (throughFactors)
      break;
    Layout want = layoutOf(m);
    want.partials = sumPartials;
    // A reduction over a padded dim sums the pad in: exact when each padded
    // term is zero (a matmul with a zero-padded factor, the others finite;
    // a sum of a zero pad), refused otherwise.
    for (auto [d, dm] : llvm::enumerate(m.getDims()))
      for (int64_t f : dm.getFactors())
        if (rule.isReductionFactor(f) && want.pads[d] &&
            !exactOverPad(op, rule, f))
          return refusePaddedReduction(op, o.get(), d, want);
    FailureOr<Value> v = reshard(o.get(), want, op);
    if (failed(v))
      return failure();
    o.set(*v);
  }

  ReductionKind kind = getReductionKind(op);
  for (auto [i, m] : llvm::enumerate(rule.getResultMappings())) {
    Value r = op->getResult(i);
    Layout l = layoutOf(m);
    l.partials = sumPartials;
    for (int64_t f : rule.getReductionFactors())
      for (StringAttr a : chosen[f])
        l.partials.push_back(PartialAxisAttr::get(op->getContext(), a, kind));
    RankedTensorType local = localType(r, l);
    r.setType(local);
    layouts[r] = l;
  }

  // Attributes that spell out shapes follow the local shapes.
  if (auto slice = dyn_cast<SliceOp>(op)) {
    SmallVector<int64_t> limits(slice.getLimits());
    ArrayRef<int64_t> out = slice.getType().getShape();
    for (auto [d, lim] : llvm::enumerate(limits))
      if (slice.getStarts()[d] == 0 && slice.getStrides()[d] == 1)
        lim = out[d];
    slice.setLimits(limits);
  }
  if (auto c = dyn_cast<ConstantOp>(op))
    if (auto dense = dyn_cast<DenseElementsAttr>(c.getValue());
        dense && dense.isSplat())
      c.setValueAttr(DenseElementsAttr::get(
          cast<ShapedType>(c.getType()), dense.getSplatValue<Attribute>()));
  if (auto w = dyn_cast<WeightOp>(op))
    if (TensorShardingAttr spec = resultSpec(0))
      w->setAttr(kGlobalShardingAttrName, spec);
  op->removeAttr(attrName);
  return success();
}

LogicalResult Partitioner::run(func::FuncOp fn) {
  StringRef attrName = TesselDialect::kShardingAttrName;
  auto isTensor = [](Type t) { return isa<RankedTensorType>(t); };
  auto needSpec = [&](Operation *where, StringRef what) {
    return where->emitOpError()
           << what << " has no 'tessel.sharding'; run -tessel-propagate first";
  };

  // Every value must be annotated.
  for (BlockArgument arg : fn.getArguments()) {
    if (!isTensor(arg.getType()))
      continue;
    auto spec = fn.getArgAttrOfType<TensorShardingAttr>(arg.getArgNumber(),
                                                        attrName);
    if (!spec)
      return needSpec(fn, ("argument " + Twine(arg.getArgNumber())).str());
    globalTypes[arg] = cast<RankedTensorType>(arg.getType());
    layouts[arg] = Layout::of(spec);
  }
  SmallVector<Operation *> ops;
  WalkResult walk = fn.walk([&](Operation *op) {
    if (op == fn)
      return WalkResult::advance();
    ops.push_back(op);
    if (auto iface = dyn_cast<ShardingRuleOpInterface>(op))
      rules[op] = iface.getShardingRule();
    for (Value r : op->getResults())
      if (isTensor(r.getType()))
        globalTypes[r] = cast<RankedTensorType>(r.getType());
    if (isa<func::ReturnOp>(op) || op->getNumResults() == 0 ||
        !llvm::any_of(op->getResultTypes(), isTensor))
      return WalkResult::advance();
    if (!op->getAttr(attrName)) {
      (void)needSpec(op, "result");
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  if (walk.wasInterrupted())
    return failure();
  for (unsigned i = 0; i < fn.getNumResults(); ++i)
    if (isTensor(fn.getResultTypes()[i]) &&
        !fn.getResultAttrOfType<TensorShardingAttr>(i, attrName))
      return needSpec(fn, ("function result " + Twine(i)).str());

  // Arguments take their local types; the function keeps the global specs
  // of its arguments and results for the exporter.
  SmallVector<Attribute> argSpecs, resultSpecs;
  for (BlockArgument arg : fn.getArguments()) {
    if (!isTensor(arg.getType())) {
      argSpecs.push_back(UnitAttr::get(fn.getContext()));
      continue;
    }
    arg.setType(localType(arg, layouts[arg]));
    argSpecs.push_back(fn.getArgAttr(arg.getArgNumber(), attrName));
    fn.removeArgAttr(arg.getArgNumber(), attrName);
  }
  if (llvm::any_of(argSpecs, [](Attribute a) { return !isa<UnitAttr>(a); }))
    fn->setAttr(kGlobalArgShardingsAttrName,
                ArrayAttr::get(fn.getContext(), argSpecs));

  for (Operation *op : ops) {
    auto ret = dyn_cast<func::ReturnOp>(op);
    if (!ret) {
      if (failed(partitionOp(op)))
        return failure();
      continue;
    }
    for (OpOperand &o : ret->getOpOperands()) {
      if (!isTensor(o.get().getType())) {
        resultSpecs.push_back(UnitAttr::get(fn.getContext()));
        continue;
      }
      unsigned i = o.getOperandNumber();
      auto spec = fn.getResultAttrOfType<TensorShardingAttr>(i, attrName);
      Layout want = Layout::of(spec);
      want.partials.clear();
      FailureOr<Value> v = reshard(o.get(), want, ret);
      if (failed(v))
        return failure();
      o.set(*v);
      resultSpecs.push_back(spec);
      fn.removeResultAttr(i, StringAttr::get(fn.getContext(), attrName));
    }
    if (llvm::any_of(resultSpecs,
                     [](Attribute a) { return !isa<UnitAttr>(a); }))
      fn->setAttr(kGlobalResultShardingsAttrName,
                  ArrayAttr::get(fn.getContext(), resultSpecs));
    fn.setType(FunctionType::get(fn.getContext(),
                                 fn.getBody().front().getArgumentTypes(),
                                 ret.getOperandTypes()));
  }
  return success();
}

struct PartitionPass : public impl::PartitionPassBase<PartitionPass> {
  using Base::Base;

  void runOnOperation() final {
    ModuleOp module = getOperation();
    SmallVector<MeshOp> meshes(module.getOps<MeshOp>());
    for (auto fn : module.getOps<func::FuncOp>()) {
      if (fn.isExternal())
        continue;
      // The mesh of the first spec in the function.
      MeshOp mesh;
      fn.walk([&](Operation *op) {
        for (NamedAttribute a : op->getAttrs())
          a.getValue().walk([&](TensorShardingAttr s) {
            if (!mesh)
              mesh = SymbolTable::lookupNearestSymbolFrom<MeshOp>(
                  module, s.getMesh());
          });
      });
      if (!mesh && meshes.size() == 1)
        mesh = meshes.front();
      if (!mesh) {
        fn.emitOpError() << "has no sharding specs over a known mesh; run "
                            "-tessel-propagate first";
        return signalPassFailure();
      }
      if (failed(Partitioner(mesh).run(fn)))
        return signalPassFailure();
    }
  }
};

} // namespace
} // namespace mlir::tessel
