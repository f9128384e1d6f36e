//===- Propagate.cpp - sharding propagation over factor rules -------------===//
//
// From the specs a user gave (function arguments and results, `tessel.sharding`
// on ops, `tessel.shard_constraint`) to every value, forward and backward
// through every op by its #tessel.rule, to a fixed point. Factor based, as
// Shardy's basic factor propagation: the known dim shardings of an op's
// operands and results are projected onto the rule's factors, each factor
// picks its axes (by the cheaper resharding where candidates conflict), and
// the factors are projected back onto every dim that is still open. See
// docs/propagation.md.
//
//===----------------------------------------------------------------------===//

#include "tessel/Transforms/FactorSharding.h"
#include "tessel/Transforms/Passes.h"
#include "tessel/Transforms/SplitFusedProjections.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/MapVector.h"

#include <deque>

namespace mlir::tessel {
#define GEN_PASS_DEF_PROPAGATEPASS
#include "tessel/Transforms/Passes.h.inc"

namespace {

/// What propagation knows of one value.
struct ValueState {
  /// Per dim: the axes that split it; empty and not `fixed` means open.
  SmallVector<AxisList> dims;
  SmallVector<int64_t> pads;
  SmallVector<PartialAxisAttr> partials;
  /// A user's spec: never changed.
  bool fixed = false;
  /// The bytes of the global value.
  int64_t bytes = 0;
  /// When propagation last changed it (Propagator::epoch).
  uint64_t changedAt = 0;

  bool usesAxis(StringAttr a) const {
    for (const AxisList &d : dims)
      if (llvm::is_contained(d, a))
        return true;
    return llvm::any_of(partials,
                        [&](PartialAxisAttr p) { return p.getAxis() == a; });
  }
};

/// One operand or result of an op, as a rule sees it.
struct TensorView {
  ValueState *state;
  bool isResult;
  unsigned index;
  /// Per dim: its factors, major to minor.
  SmallVector<SmallVector<int64_t>> factors;
  /// For operands: the dims of this value that another user needs
  /// replicated (it is gathered there anyway).
  SmallVector<bool> gatheredElsewhere;
};

/// A candidate sharding of one factor, and who proposes it.
struct Candidate {
  AxisList axes;
  int64_t pad = 0;
  unsigned view;
  bool fixed;
};

std::string describe(const TensorView &v) {
  return ((v.isResult ? "result " : "operand ") + Twine(v.index)).str();
}

std::string factorName(int64_t f) {
  std::string s(1, static_cast<char>('i' + f % 18));
  if (f >= 18)
    s += std::to_string(f / 18);
  return s;
}

class Propagator {
public:
  Propagator(MeshOp mesh, FlatSymbolRefAttr meshRef)
      : mesh(mesh), meshRef(meshRef) {}

  LogicalResult run(func::FuncOp fn);

private:
  int64_t axisSize(StringAttr a) {
    return mesh.getAxisSize(a.getValue()).value_or(1);
  }
  ValueState &stateOf(Value v);
  void seed(ValueState &s, TensorShardingAttr spec);
  OpShardingRuleAttr ruleOf(Operation *op);
  bool needsReplicationElsewhere(Value v, Operation *except, int64_t dim);
  bool processOp(Operation *op, OpShardingRuleAttr rule,
                 SmallVectorImpl<TensorView> &views);
  bool processRuleOp(Operation *op);
  bool processReturn(func::ReturnOp ret, func::FuncOp fn);
  TensorShardingAttr toAttr(const ValueState &s, bool withPartials = true);

  MeshOp mesh;
  FlatSymbolRefAttr meshRef;
  /// Stable storage: views keep pointers to states while others are added.
  std::deque<ValueState> storage;
  DenseMap<Value, ValueState *> states;
  /// Fixed states of function results that have a user spec.
  SmallVector<std::optional<ValueState>> resultSpecs;
  DenseMap<Operation *, OpShardingRuleAttr> rules;
  llvm::DenseSet<std::pair<Operation *, int64_t>> remarked;
  /// Counts the changes to any state; an op's entry is the count when its
  /// rule last ran. A rule reads only its operands' and results' states,
  /// so while none changed since, running it again changes nothing: the
  /// sweeps skip it (the last sweep, which finds no change, costs a
  /// lookup per op).
  uint64_t epoch = 0;
  DenseMap<Operation *, uint64_t> processedAt;
  void touch(ValueState &s) { s.changedAt = ++epoch; }
};

ValueState &Propagator::stateOf(Value v) {
  auto it = states.find(v);
  if (it != states.end())
    return *it->second;
  ValueState &s = storage.emplace_back();
  states[v] = &s;
  auto t = cast<RankedTensorType>(v.getType());
  s.dims.resize(t.getRank());
  s.pads.assign(t.getRank(), 0);
  s.bytes = getSizeInBytes(t);
  return s;
}

void Propagator::seed(ValueState &s, TensorShardingAttr spec) {
  for (auto [d, dim] : llvm::enumerate(spec.getDims())) {
    s.dims[d].assign(dim.getAxes().begin(), dim.getAxes().end());
    s.pads[d] = dim.getPad();
  }
  s.partials.assign(spec.getPartials().begin(), spec.getPartials().end());
  s.fixed = true;
}

OpShardingRuleAttr Propagator::ruleOf(Operation *op) {
  auto it = rules.find(op);
  if (it != rules.end())
    return it->second;
  OpShardingRuleAttr rule;
  if (auto iface = dyn_cast<ShardingRuleOpInterface>(op))
    rule = iface.getShardingRule();
  return rules[op] = rule;
}

// True when a user of `v` other than `except` maps `dim` of `v` to a factor
// that needs replication: `v` is gathered there anyway, so the gathered copy
// is free for every other user and propagating `v`'s split onward would only
// add a second resharding later (the residual stream of a transformer).
bool Propagator::needsReplicationElsewhere(Value v, Operation *except,
                                           int64_t dim) {
  for (OpOperand &use : v.getUses()) {
    Operation *user = use.getOwner();
    if (user == except)
      continue;
    OpShardingRuleAttr rule = ruleOf(user);
    if (!rule)
      continue;
    TensorMappingAttr m = rule.getOperandMappings()[use.getOperandNumber()];
    for (int64_t f : m.getDims()[dim].getFactors())
      if (rule.isNeedReplicationFactor(f))
        return true;
  }
  return false;
}

bool Propagator::processRuleOp(Operation *op) {
  auto [last, first] = processedAt.try_emplace(op, epoch);
  if (!first) {
    auto newer = [&](Value v) { return stateOf(v).changedAt > last->second; };
    if (llvm::none_of(op->getOperands(), newer) &&
        llvm::none_of(op->getResults(), newer))
      return false;
    last->second = epoch;
  }
  OpShardingRuleAttr rule = ruleOf(op);
  SmallVector<TensorView> views;
  for (auto [i, v] : llvm::enumerate(op->getOperands())) {
    TensorView tv{&stateOf(v), false, static_cast<unsigned>(i), {}, {}};
    for (auto [d, dm] : llvm::enumerate(rule.getOperandMappings()[i].getDims())) {
      tv.factors.emplace_back(dm.getFactors().begin(), dm.getFactors().end());
      tv.gatheredElsewhere.push_back(needsReplicationElsewhere(v, op, d));
    }
    views.push_back(std::move(tv));
  }
  for (auto [i, v] : llvm::enumerate(op->getResults())) {
    TensorView tv{&stateOf(v), true, static_cast<unsigned>(i), {}, {}};
    for (DimMappingAttr dm : rule.getResultMappings()[i].getDims()) {
      tv.factors.emplace_back(dm.getFactors().begin(), dm.getFactors().end());
      tv.gatheredElsewhere.push_back(false);
    }
    views.push_back(std::move(tv));
  }
  return processOp(op, rule, views);
}

// The returned values and the function results are an identity rule.
bool Propagator::processReturn(func::ReturnOp ret, func::FuncOp fn) {
  bool changed = false;
  for (auto [i, v] : llvm::enumerate(ret.getOperands())) {
    if (!isa<RankedTensorType>(v.getType()) || !resultSpecs[i])
      continue;
    ValueState &s = stateOf(v);
    if (s.fixed)
      continue;
    for (auto [d, axes] : llvm::enumerate(resultSpecs[i]->dims)) {
      if (!s.dims[d].empty() || axes.empty())
        continue;
      if (llvm::any_of(axes, [&](StringAttr a) { return s.usesAxis(a); }))
        continue;
      s.dims[d] = axes;
      s.pads[d] = resultSpecs[i]->pads[d];
      touch(s);
      changed = true;
    }
  }
  return changed;
}

bool Propagator::processOp(Operation *op, OpShardingRuleAttr rule,
                           SmallVectorImpl<TensorView> &views) {
  int64_t numFactors = rule.getNumFactors();
  ArrayRef<int64_t> sizes = rule.getFactorSizes();
  auto sizeFn = [&](StringAttr a) { return axisSize(a); };

  // 1. Project every known dim sharding onto factors.
  SmallVector<SmallVector<Candidate>> cands(numFactors);
  SmallVector<bool> closedEmpty(numFactors, false);
  for (auto [vi, v] : llvm::enumerate(views)) {
    for (auto [d, fs] : llvm::enumerate(v.factors)) {
      if (fs.empty())
        continue;
      const AxisList &axes = v.state->dims[d];
      if (axes.empty()) {
        if (v.state->fixed)
          for (int64_t f : fs)
            closedEmpty[f] = true;
        continue;
      }
      if (v.gatheredElsewhere[d])
        continue;
      SmallVector<int64_t> fsizes;
      for (int64_t f : fs)
        fsizes.push_back(sizes[f]);
      // A padded dim carries its pad to its major factor: the factor
      // alone, or a padded batch merged with the minor factors (the pad
      // whole rows of them).
      int64_t pad = v.state->pads[d];
      if (pad) {
        if (std::optional<int64_t> fp = factorPadOfDim(fsizes, pad))
          cands[fs[0]].push_back({axes, *fp, static_cast<unsigned>(vi),
                                  v.state->fixed});
        continue;
      }
      SmallVector<AxisList> proj = projectDimToFactors(fsizes, axes, sizeFn);
      for (auto [k, f] : llvm::enumerate(fs))
        if (!proj[k].empty())
          cands[f].push_back({proj[k], 0, static_cast<unsigned>(vi),
                              v.state->fixed});
    }
  }

  // 2. Pick each factor's axes. Factors with a user-given candidate first,
  // so that they win an axis two factors want.
  SmallVector<int64_t> order;
  for (int64_t f = 0; f < numFactors; ++f)
    if (llvm::any_of(cands[f], [](const Candidate &c) { return c.fixed; }))
      order.push_back(f);
  for (int64_t f = 0; f < numFactors; ++f)
    if (!llvm::is_contained(order, f))
      order.push_back(f);

  SmallVector<AxisList> chosen(numFactors);
  SmallVector<int64_t> chosenPad(numFactors, 0);
  llvm::SmallDenseSet<StringAttr> used;
  for (int64_t f : order) {
    if (rule.isNeedReplicationFactor(f) || cands[f].empty())
      continue;
    // Distinct proposals.
    SmallVector<const Candidate *> distinct;
    for (const Candidate &c : cands[f])
      if (llvm::none_of(distinct, [&](const Candidate *d) {
            return d->axes == c.axes && d->pad == c.pad;
          }))
        distinct.push_back(&c);
    // The cost of settling on `axes`: the bytes of every tensor whose
    // current split of this factor must move (gathered or exchanged), plus
    // a fixed replicated result that would have to be gathered.
    auto cost = [&](ArrayRef<StringAttr> axes) {
      int64_t bytes = 0;
      for (const Candidate &c : cands[f])
        if (ArrayRef<StringAttr>(c.axes) != axes)
          bytes += views[c.view].state->bytes;
      if (closedEmpty[f] && !axes.empty())
        for (const TensorView &v : views)
          if (v.isResult && v.state->fixed)
            for (auto [d, fs] : llvm::enumerate(v.factors))
              if (llvm::is_contained(fs, f) && v.state->dims[d].empty())
                bytes += v.state->bytes;
      return bytes;
    };
    const Candidate *best = distinct.front();
    int64_t bestCost = cost(best->axes);
    for (const Candidate *c : ArrayRef(distinct).drop_front()) {
      int64_t k = cost(c->axes);
      if (k < bestCost || (k == bestCost && c->fixed && !best->fixed)) {
        best = c;
        bestCost = k;
      }
    }
    AxisList axes = best->axes;
    int64_t replicateCost = cost({});
    bool replicate = closedEmpty[f] && replicateCost < bestCost;
    if ((distinct.size() > 1 || (closedEmpty[f] && replicate)) &&
        remarked.insert({op, f}).second) {
      InFlightDiagnostic diag = op->emitRemark()
                                << "conflicting shardings of factor '"
                                << factorName(f) << "' (size " << sizes[f]
                                << "):";
      for (const Candidate *c : distinct)
        diag << " " << describe(views[c->view]) << " wants "
             << formatAxes(c->axes) << ";";
      if (replicate)
        diag << " chose to replicate it (" << replicateCost
             << " bytes resharded instead of " << bestCost << ")";
      else
        diag << " chose " << formatAxes(axes) << " (" << bestCost
             << " bytes resharded"
             << (distinct.size() > 1 || closedEmpty[f]
                     ? ", the cheapest candidate"
                     : "")
             << ")";
    }
    if (replicate)
      continue;
    // An axis splits one factor of an op at most.
    while (!axes.empty() &&
           llvm::any_of(axes, [&](StringAttr a) { return used.contains(a); }))
      axes.pop_back();
    if (axes.empty())
      continue;
    used.insert(axes.begin(), axes.end());
    chosen[f] = axes;
    chosenPad[f] = best->pad;
  }

  // 3. Project the factors back onto every open dim; a sharded reduction
  // factor leaves the results partial.
  bool changed = false;
  ReductionKind kind = getReductionKind(op);
  for (TensorView &v : views) {
    ValueState &s = *v.state;
    if (s.fixed)
      continue;
    for (auto [d, fs] : llvm::enumerate(v.factors)) {
      if (!s.dims[d].empty() || fs.empty())
        continue;
      SmallVector<int64_t> fsizes;
      SmallVector<AxisList> faxes;
      for (int64_t f : fs) {
        fsizes.push_back(sizes[f]);
        faxes.push_back(chosen[f]);
      }
      AxisList axes = projectFactorsToDim(fsizes, faxes,
                                          [&](StringAttr a) { return axisSize(a); });
      // Keep the prefix whose axes this value does not use yet.
      AxisList fresh;
      for (StringAttr a : axes) {
        if (s.usesAxis(a))
          break;
        fresh.push_back(a);
      }
      if (fresh.empty())
        continue;
      s.dims[d] = fresh;
      s.pads[d] = fresh == chosen[fs[0]]
                      ? dimPadOfFactor(fsizes, faxes, chosenPad[fs[0]])
                      : 0;
      touch(s);
      changed = true;
    }
    if (!v.isResult || !s.partials.empty())
      continue;
    for (int64_t f : rule.getReductionFactors())
      for (StringAttr a : chosen[f])
        if (!s.usesAxis(a)) {
          s.partials.push_back(PartialAxisAttr::get(op->getContext(), a, kind));
          touch(s);
          changed = true;
        }
  }
  return changed;
}

TensorShardingAttr Propagator::toAttr(const ValueState &s, bool withPartials) {
  MLIRContext *ctx = mesh.getContext();
  SmallVector<DimShardingAttr> dims;
  for (auto [axes, pad] : llvm::zip(s.dims, s.pads))
    dims.push_back(DimShardingAttr::get(ctx, axes, axes.empty() ? 0 : pad));
  return TensorShardingAttr::get(
      ctx, meshRef, dims,
      withPartials ? ArrayRef<PartialAxisAttr>(s.partials)
                   : ArrayRef<PartialAxisAttr>());
}

LogicalResult Propagator::run(func::FuncOp fn) {
  StringRef attrName = TesselDialect::kShardingAttrName;
  // Seed from user specs.
  for (BlockArgument arg : fn.getArguments())
    if (auto spec = fn.getArgAttrOfType<TensorShardingAttr>(arg.getArgNumber(),
                                                            attrName))
      seed(stateOf(arg), spec);
  resultSpecs.assign(fn.getNumResults(), std::nullopt);
  for (unsigned i = 0; i < fn.getNumResults(); ++i)
    if (auto spec = fn.getResultAttrOfType<TensorShardingAttr>(i, attrName)) {
      ValueState s;
      s.dims.resize(spec.getRank());
      s.pads.assign(spec.getRank(), 0);
      seed(s, spec);
      resultSpecs[i] = std::move(s);
    }
  SmallVector<Operation *> ops;
  fn.walk([&](Operation *op) {
    if (op == fn)
      return;
    ops.push_back(op);
    if (auto c = dyn_cast<ShardConstraintOp>(op)) {
      seed(stateOf(c.getResult()), c.getSharding());
      return;
    }
    Attribute spec = op->getAttr(attrName);
    if (auto single = dyn_cast_if_present<TensorShardingAttr>(spec))
      seed(stateOf(op->getResult(0)), single);
    else if (auto array = dyn_cast_if_present<ArrayAttr>(spec))
      for (auto [r, a] : llvm::zip(op->getResults(), array))
        seed(stateOf(r), cast<TensorShardingAttr>(a));
  });

  // Ops without a rule are barriers.
  auto isTensor = [](Type t) { return isa<RankedTensorType>(t); };
  for (Operation *op : ops) {
    if (ruleOf(op) || isa<func::ReturnOp>(op))
      continue;
    if (llvm::any_of(op->getOperandTypes(), isTensor) ||
        llvm::any_of(op->getResultTypes(), isTensor))
      op->emitWarning() << "'" << op->getName()
                        << "' declares no sharding rule; it is a propagation "
                           "barrier and its results stay replicated";
  }

  // Forward and backward sweeps to a fixed point. Every step only fills
  // open dims, so it ends.
  for (bool changed = true; changed;) {
    changed = false;
    for (Operation *op : ops)
      if (ruleOf(op))
        changed |= processRuleOp(op);
      else if (auto ret = dyn_cast<func::ReturnOp>(op))
        changed |= processReturn(ret, fn);
    for (Operation *op : llvm::reverse(ops))
      if (auto ret = dyn_cast<func::ReturnOp>(op))
        changed |= processReturn(ret, fn);
      else if (ruleOf(op))
        changed |= processRuleOp(op);
  }

  // Annotate every value; open dims are replicated.
  for (BlockArgument arg : fn.getArguments())
    if (isa<RankedTensorType>(arg.getType()))
      fn.setArgAttr(arg.getArgNumber(), attrName, toAttr(stateOf(arg)));
  for (Operation *op : ops) {
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      for (auto [i, v] : llvm::enumerate(ret.getOperands()))
        if (isTensor(v.getType()) && !resultSpecs[i])
          fn.setResultAttr(i, attrName, toAttr(stateOf(v), false));
      continue;
    }
    if (op->getNumResults() == 0 || !llvm::all_of(op->getResultTypes(), isTensor))
      continue;
    if (op->getNumResults() == 1) {
      op->setAttr(attrName, toAttr(stateOf(op->getResult(0))));
      continue;
    }
    SmallVector<Attribute> specs;
    for (Value r : op->getResults())
      specs.push_back(toAttr(stateOf(r)));
    op->setAttr(attrName, ArrayAttr::get(op->getContext(), specs));
  }
  return success();
}

/// The one mesh the specs of `module` refer to; emits and fails when they
/// name several. Null without any spec or mesh.
FailureOr<MeshOp> findMesh(ModuleOp module) {
  llvm::MapVector<StringAttr, Operation *> names;
  auto note = [&](Attribute a, Operation *where) {
    a.walk([&](TensorShardingAttr s) {
      names.insert({s.getMesh().getAttr(), where});
    });
  };
  module.walk<WalkOrder::PreOrder>([&](Operation *op) {
    for (NamedAttribute a : op->getAttrs())
      note(a.getValue(), op);
  });
  SmallVector<MeshOp> meshes(module.getOps<MeshOp>());
  if (names.size() > 1) {
    auto it = names.begin();
    InFlightDiagnostic diag =
        std::next(it)->second->emitError()
        << "specs refer to several meshes (@" << it->first.getValue()
        << " and @" << std::next(it)->first.getValue()
        << "); -tessel-propagate handles one mesh per module";
    return failure();
  }
  if (names.empty())
    return meshes.size() == 1 ? meshes.front() : MeshOp();
  auto mesh = SymbolTable::lookupNearestSymbolFrom<MeshOp>(
      module, FlatSymbolRefAttr::get(names.begin()->first));
  if (!mesh) {
    names.begin()->second->emitError()
        << "sharding refers to unknown mesh @"
        << names.begin()->first.getValue();
    return failure();
  }
  return mesh;
}

struct PropagatePass : public impl::PropagatePassBase<PropagatePass> {
  using Base::Base;

  void runOnOperation() final {
    ModuleOp module = getOperation();
    FailureOr<MeshOp> mesh = findMesh(module);
    if (failed(mesh))
      return signalPassFailure();
    if (!*mesh)
      return;
    for (auto fn : module.getOps<func::FuncOp>()) {
      if (fn.isExternal())
        continue;
      if (splitFused && failed(splitFusedProjections(fn)))
        return signalPassFailure();
      Propagator p(*mesh, FlatSymbolRefAttr::get(mesh->getSymNameAttr()));
      if (failed(p.run(fn)))
        return signalPassFailure();
    }
  }
};

} // namespace
} // namespace mlir::tessel
