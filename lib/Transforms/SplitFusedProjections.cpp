//===- SplitFusedProjections.cpp - split fused weights at a split ---------===//
//
// A split of a dim that the plan splits over mesh axes needs the dim
// replicated (its rule says need_replication): a column-parallel fused
// projection would be gathered whole. When the split dim is one pass factor
// all the way up to weights, the split moves above the chain instead: each
// piece is computed from slices of the weights, and each weight slice keeps
// the weight's spec. Only the rules are read to decide where the dim goes.
//
//===----------------------------------------------------------------------===//

#include "tessel/Transforms/SplitFusedProjections.h"

#include "dialects/tessel/TesselOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/BuiltinTypes.h"

using namespace mlir;
using namespace mlir::tessel;

namespace {

/// The operand dims that carry the factor of result dim `dim` of `op`, or
/// failure when the factor is not a plain pass factor of that dim alone.
FailureOr<SmallVector<std::pair<unsigned, int64_t>>>
traceDim(Operation *op, int64_t dim) {
  auto iface = dyn_cast<ShardingRuleOpInterface>(op);
  if (!iface || op->getNumResults() != 1)
    return failure();
  OpShardingRuleAttr rule = iface.getShardingRule();
  ArrayRef<int64_t> fs = rule.getResultMappings()[0].getDims()[dim].getFactors();
  if (fs.size() != 1 || rule.isNeedReplicationFactor(fs[0]) ||
      rule.isReductionFactor(fs[0]))
    return failure();
  SmallVector<std::pair<unsigned, int64_t>> dims;
  for (auto [i, m] : llvm::enumerate(rule.getOperandMappings())) {
    for (auto [d, dm] : llvm::enumerate(m.getDims())) {
      if (!llvm::is_contained(dm.getFactors(), fs[0]))
        continue;
      if (dm.getFactors().size() != 1)
        return failure();
      dims.push_back({static_cast<unsigned>(i), static_cast<int64_t>(d)});
    }
  }
  return dims;
}

/// Whether `v`'s dim `dim` can be computed piecewise from weight slices, and
/// whether some weight on the way splits it over mesh axes.
bool canSlice(Value v, int64_t dim, bool &sharded,
              SmallVectorImpl<std::pair<WeightOp, int64_t>> &splitWeights) {
  Operation *def = v.getDefiningOp();
  if (!def)
    return false;
  // A weight is a leaf: its pieces are new weights, and its other users (a
  // bias the exporter shared between layers, a tied embedding) keep it.
  if (auto w = dyn_cast<WeightOp>(def)) {
    if (w->hasAttr(TesselDialect::kSourceSliceAttrName))
      return false;
    // A weight a training step assigns is one state: its pieces would be
    // separate read-only copies that the update never reaches.
    if (llvm::any_of(w->getUsers(), [](Operation *u) { return isa<AssignOp>(u); }))
      return false;
    if (auto spec = w->getAttrOfType<TensorShardingAttr>(
            TesselDialect::kShardingAttrName)) {
      DimShardingAttr d = spec.getDims()[dim];
      if (d.getPad())
        return false;
      if (!d.getAxes().empty()) {
        sharded = true;
        splitWeights.push_back({w, dim});
      }
    }
    return true;
  }
  // A computed value is rebuilt piecewise and the original erased: it must
  // have no other user.
  if (!v.hasOneUse())
    return false;
  FailureOr<SmallVector<std::pair<unsigned, int64_t>>> dims = traceDim(def, dim);
  if (failed(dims) || dims->empty())
    return false;
  for (auto [i, d] : *dims)
    if (!canSlice(def->getOperand(i), d, sharded, splitWeights))
      return false;
  return true;
}

RankedTensorType withDim(Type t, int64_t dim, int64_t size) {
  auto r = cast<RankedTensorType>(t);
  SmallVector<int64_t> shape(r.getShape());
  shape[dim] = size;
  return r.clone(shape);
}

/// Builds the piece [start, start + size) of dim `dim` of `v`.
Value buildPiece(OpBuilder &b, Value v, int64_t dim, int64_t start,
                 int64_t size) {
  Operation *def = v.getDefiningOp();
  if (auto w = dyn_cast<WeightOp>(def)) {
    auto piece = WeightOp::create(b, w.getLoc(),
                                  withDim(w.getType(), dim, size), w.getName());
    for (NamedAttribute a : w->getDiscardableAttrs())
      piece->setAttr(a.getName(), a.getValue());
    piece->setAttr(TesselDialect::kSourceSliceAttrName,
                   b.getDenseI64ArrayAttr({dim, start, start + size}));
    return piece;
  }
  FailureOr<SmallVector<std::pair<unsigned, int64_t>>> dims = traceDim(def, dim);
  IRMapping map;
  for (auto [i, d] : *dims)
    map.map(def->getOperand(i),
            buildPiece(b, def->getOperand(i), d, start, size));
  Operation *clone = b.clone(*def, map);
  clone->getResult(0).setType(withDim(v.getType(), dim, size));
  return clone->getResult(0);
}

void eraseChain(Operation *op) {
  SmallVector<Operation *> defs;
  for (Value v : op->getOperands())
    if (Operation *d = v.getDefiningOp())
      defs.push_back(d);
  op->erase();
  for (Operation *d : defs)
    if (d->use_empty())
      eraseChain(d);
}

} // namespace

LogicalResult mlir::tessel::splitFusedProjections(func::FuncOp fn) {
  SmallVector<SplitOp> splits;
  fn.walk([&](SplitOp s) { splits.push_back(s); });
  for (SplitOp split : splits) {
    int64_t dim = split.getDim();
    bool sharded = false;
    SmallVector<std::pair<WeightOp, int64_t>> splitWeights;
    if (!canSlice(split.getInput(), dim, sharded, splitWeights) || !sharded)
      continue;
    // Every piece of a split weight must divide over its axes.
    bool divisible = true;
    for (auto [w, d] : splitWeights) {
      auto spec = w->getAttrOfType<TensorShardingAttr>(
          TesselDialect::kShardingAttrName);
      auto mesh = SymbolTable::lookupNearestSymbolFrom<MeshOp>(w, spec.getMesh());
      if (!mesh)
        return w.emitOpError() << "sharding refers to unknown mesh "
                               << spec.getMesh();
      int64_t shards = 1;
      for (StringAttr a : spec.getDims()[d].getAxes())
        shards *= mesh.getAxisSize(a.getValue()).value_or(1);
      for (int64_t size : split.getSizes())
        divisible &= size % shards == 0;
    }
    if (!divisible)
      continue;
    OpBuilder b(split);
    int64_t start = 0;
    for (auto [r, size] : llvm::zip(split.getResults(), split.getSizes())) {
      r.replaceAllUsesWith(buildPiece(b, split.getInput(), dim, start, size));
      start += size;
    }
    eraseChain(split);
  }
  return success();
}
