//===- Microbatch.cpp - gradient accumulation as a program transformation -===//
//
// Between -tessel-add-loss and -tessel-autodiff: the function that returns
// the loss of one batch becomes one that splits every argument (the data
// inputs, labels or targets) along dim 0 into K microbatches, computes the
// forward and loss of each on its slices, and returns the mean of the K
// losses. Weights and constants are shared by the K copies, so autodiff
// sums their gradients over the microbatches: PyTorch's accumulation loop
// (loss / K per microbatch, backward, one optimizer step), and its loss, the
// mean of the microbatch means. See docs/training.md.
//
// Only the ops that depend on an argument are copied: weights, constants
// and tables computed from them (a rotary cos/sin table, a causal mask) are
// shared by the copies, whatever their leading dim. Where a copy meets a
// shared operand along the batch (the op's sharding rule maps a dim of the
// shared operand to the factor of the batch: a [2, 1, 16, 16] mask added to
// [2, 4, 16, 16] scores), the copy reads that operand's rows of its
// microbatch, a slice; a slice that takes the whole batch takes the whole
// microbatch. The batch dim of each value is the dim its copy shrank.
//
// The copies' types are the originals' with the batch divided: re-inferred
// by ops that infer their types, the operand's shape for same-shape ops,
// and for reshape and expand the dim the batch went to.
//
//===----------------------------------------------------------------------===//

#include "tessel/Transforms/Passes.h"
#include "dialects/tessel/PipelineAttrs.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "llvm/ADT/DenseSet.h"

namespace mlir::tessel {
#define GEN_PASS_DEF_MICROBATCHPASS
#include "tessel/Transforms/Passes.h.inc"

namespace {

RankedTensorType withShape(Type t, ArrayRef<int64_t> shape) {
  return RankedTensorType::get(shape,
                               cast<RankedTensorType>(t).getElementType());
}

struct MicrobatchPass : impl::MicrobatchPassBase<MicrobatchPass> {
  using Base::Base;

  void runOnOperation() override {
    if (count < 1) {
      getOperation().emitError() << "-tessel-microbatch: count must be at "
                                    "least 1, got "
                                 << int64_t(count);
      return signalPassFailure();
    }
    if (count == 1)
      return;
    for (auto fn : getOperation().getOps<func::FuncOp>())
      if (!fn.isExternal() && fn.isPublic() && failed(split(fn)))
        return signalPassFailure();
  }

  /// The result types of `copy`, a clone of `orig` whose operands now have
  /// their microbatch types.
  LogicalResult retype(Operation *orig, Operation *copy) {
    if (auto infer = dyn_cast<InferTypeOpInterface>(copy)) {
      SmallVector<Type> types;
      if (failed(infer.inferReturnTypes(
              copy->getContext(), copy->getLoc(), copy->getOperands(),
              copy->getRawDictionaryAttrs(), copy->getPropertiesStorage(),
              copy->getRegions(), types)))
        return copy->emitOpError() << "has no type for a microbatch";
      for (auto [r, t] : llvm::zip(copy->getResults(), types))
        r.setType(t);
      return success();
    }
    if (copy->getNumResults() != 1 || copy->getNumOperands() < 1)
      return copy->emitOpError() << "cannot be split into microbatches";
    auto oldIn = dyn_cast<RankedTensorType>(orig->getOperand(0).getType());
    auto newIn = dyn_cast<RankedTensorType>(copy->getOperand(0).getType());
    auto oldOut = dyn_cast<RankedTensorType>(orig->getResult(0).getType());
    if (!oldIn || !newIn || !oldOut)
      return copy->emitOpError() << "cannot be split into microbatches";
    SmallVector<int64_t> out(oldOut.getShape());
    if (isa<ReshapeOp>(copy)) {
      // The batch goes to the first result dim it divides.
      int64_t oldN = oldIn.getNumElements(), newN = newIn.getNumElements();
      if (newN != oldN) {
        if (oldN % newN)
          return copy->emitOpError() << "cannot be split into microbatches";
        int64_t r = oldN / newN;
        auto it = llvm::find_if(out, [&](int64_t d) { return d % r == 0; });
        if (it == out.end())
          return copy->emitOpError()
                 << "cannot be split into microbatches: no result dim holds "
                    "the batch";
        *it /= r;
      }
    } else if (isa<ExpandOp>(copy)) {
      // Numpy broadcasting: right-aligned dims that changed carry over.
      int64_t off = out.size() - oldIn.getRank();
      for (int64_t i = 0; i < oldIn.getRank(); ++i)
        if (oldIn.getDimSize(i) != newIn.getDimSize(i))
          out[off + i] = newIn.getDimSize(i);
    } else if (oldIn.getShape() == oldOut.getShape()) {
      out.assign(newIn.getShape().begin(), newIn.getShape().end());
    } else if (oldIn != newIn) {
      return copy->emitOpError() << "cannot be split into microbatches";
    }
    copy->getResult(0).setType(withShape(oldOut, out));
    return success();
  }

  /// Before `copy` (a clone of `orig` for microbatch `m` of `k`) is
  /// retyped: a slice that takes the whole batch takes the whole
  /// microbatch, and each operand that is shared by the microbatches (not
  /// in `dependent`) but meets the batch (a dim of the batch's factor in
  /// the op's rule) is replaced by its rows of microbatch `m`. `batchDim`:
  /// each dependent value's batch dim (-1: none); `inner`: the dependent
  /// values whose batch dim holds the batch inside another factor (a
  /// reshape merged it after a dim that is not the batch), so that a
  /// microbatch's rows there are strided. Sets `rule` and `factor` (the
  /// batch's factor, -1: none) for the caller.
  LogicalResult shareRows(Operation *orig, Operation *copy, int64_t m,
                          int64_t k, const llvm::DenseSet<Value> &dependent,
                          const DenseMap<Value, int64_t> &batchDim,
                          const llvm::DenseSet<Value> &inner,
                          DenseMap<std::tuple<Value, int64_t, int64_t>, Value> &rows,
                          OpBuilder &b, OpShardingRuleAttr &rule,
                          int64_t &factor, bool &innerBatch) {
    auto iface = dyn_cast<ShardingRuleOpInterface>(orig);
    rule = iface ? iface.getShardingRule() : nullptr;
    factor = -1;
    innerBatch = false;
    // The batch's factor: the first factor of a dependent operand's batch
    // dim (a reshape that merged it with the next dims keeps it outermost).
    int64_t from = -1, fromDim = -1;
    for (auto [i, v] : llvm::enumerate(orig->getOperands())) {
      auto it = batchDim.find(v);
      if (!dependent.contains(v) || it == batchDim.end() || it->second < 0)
        continue;
      from = i, fromDim = it->second;
      innerBatch = inner.contains(v);
      if (rule && i < rule.getOperandMappings().size()) {
        ArrayRef<DimMappingAttr> dims =
            rule.getOperandMappings()[i].getDims();
        if (fromDim < int64_t(dims.size()) &&
            !dims[fromDim].getFactors().empty())
          factor = dims[fromDim].getFactors()[0];
      }
      break;
    }
    if (from < 0)
      return success(); // no operand holds the batch
    auto batchRows = [&](Value v, int64_t d) {
      return cast<RankedTensorType>(v.getType()).getDimSize(d);
    };
    // A slice of the whole batch: of the whole microbatch.
    if (auto slice = dyn_cast<SliceOp>(copy)) {
      auto origSlice = cast<SliceOp>(orig);
      const int64_t d = fromDim, whole = batchRows(orig->getOperand(0), d);
      if (origSlice.getStarts()[d] != 0 || origSlice.getLimits()[d] != whole ||
          origSlice.getStrides()[d] != 1)
        return orig->emitOpError()
               << "cannot be split into microbatches: it takes rows "
               << origSlice.getStarts()[d] << ":" << origSlice.getLimits()[d]
               << ":" << origSlice.getStrides()[d] << " of dim " << d
               << " of its operand, which holds the batch (" << whole
               << " rows, " << whole / k << " per microbatch); only the "
                  "whole batch can be sliced so";
      SmallVector<int64_t> limits(origSlice.getLimits());
      limits[d] = batchRows(copy->getOperand(0), d);
      slice.setLimits(limits);
      return success();
    }
    if (factor < 0 || !rule)
      return success();
    for (auto [i, v] : llvm::enumerate(orig->getOperands())) {
      if (dependent.contains(v) || i >= rule.getOperandMappings().size())
        continue;
      ArrayRef<DimMappingAttr> dims = rule.getOperandMappings()[i].getDims();
      for (auto [d, dm] : llvm::enumerate(dims)) {
        ArrayRef<int64_t> fs = dm.getFactors();
        if (!llvm::is_contained(fs, factor))
          continue;
        auto t = cast<RankedTensorType>(v.getType());
        const int64_t size = t.getDimSize(d);
        if (fs[0] != factor || innerBatch || size % k)
          return orig->emitOpError()
                 << "cannot be split into microbatches: operand " << i
                 << " (shared by the microbatches: it depends on no "
                    "argument) meets the batch in its dim "
                 << d << " of size " << size
                 << (size % k ? ", which the microbatches do not divide"
                              : ", where the batch is not the outermost "
                                "factor");
        // One slice per microbatch, and per pipeline stage: each stage
        // reads its rows of a shared value itself (nothing crosses stages).
        auto stage = copy->getAttrOfType<IntegerAttr>(kStageAttr);
        Value &part = rows[{v, m, stage ? stage.getInt() : -1}];
        if (!part) {
          SmallVector<int64_t> starts(t.getRank(), 0),
              limits(t.getShape()), strides(t.getRank(), 1),
              shape(t.getShape());
          starts[d] = m * (size / k);
          limits[d] = (m + 1) * (size / k);
          shape[d] = size / k;
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPoint(copy);
          part = SliceOp::create(b, orig->getLoc(), withShape(t, shape), v,
                                 b.getDenseI64ArrayAttr(starts),
                                 b.getDenseI64ArrayAttr(limits),
                                 b.getDenseI64ArrayAttr(strides));
          part.getDefiningOp()->setAttr(kMicrobatchAttr,
                                        b.getI64IntegerAttr(m));
          if (stage)
            part.getDefiningOp()->setAttr(kStageAttr, stage);
        }
        copy->setOperand(i, part);
        break;
      }
    }
    return success();
  }

  /// The spec that keeps a microbatch of `rows` rows of `arg` split over
  /// the axes that split the argument's batch (data parallelism: each rank
  /// computes its rows of every microbatch), or null (no such axes, or
  /// they do not divide the microbatch: it is computed whole, with a
  /// warning when `warn`). The microbatch is the contiguous rows of the
  /// one-rank program's, so the argument's blocks are gathered and each
  /// rank slices its part.
  TensorShardingAttr batchSpec(func::FuncOp fn, BlockArgument arg,
                               int64_t rows, bool warn) {
    auto spec = fn.getArgAttrOfType<TensorShardingAttr>(
        arg.getArgNumber(), TesselDialect::kShardingAttrName);
    if (!spec || spec.getDims().empty() || spec.getDims()[0].getAxes().empty())
      return {};
    auto mesh = SymbolTable::lookupNearestSymbolFrom<MeshOp>(fn, spec.getMesh());
    if (!mesh)
      return {};
    DimShardingAttr d = spec.getDims()[0];
    int64_t shards = 1;
    std::string axes;
    for (StringAttr a : d.getAxes()) {
      shards *= mesh.getAxisSize(a.getValue()).value_or(1);
      axes += (axes.empty() ? "" : ",") + a.getValue().str();
    }
    if (shards <= 1 || d.getPad())
      return {};
    if (rows % shards) {
      if (warn)
        fn.emitWarning() << "microbatches of " << rows
                         << (rows == 1 ? " row" : " rows") << " of argument "
                         << arg.getArgNumber() << " do not divide over "
                         << axes << " (" << shards
                         << " ranks): every one of those ranks computes "
                            "each microbatch whole";
      return {};
    }
    SmallVector<DimShardingAttr> dims(spec.getDims());
    for (DimShardingAttr &other : llvm::drop_begin(dims))
      if (other.getPad())
        return {};
    return TensorShardingAttr::get(fn.getContext(), spec.getMesh(), dims, {});
  }

  LogicalResult split(func::FuncOp fn) {
    Block &block = fn.getBody().front();
    auto ret = cast<func::ReturnOp>(block.getTerminator());
    auto isLoss = [](Type t) {
      auto rt = dyn_cast<RankedTensorType>(t);
      return rt && rt.getRank() == 0 && isa<FloatType>(rt.getElementType());
    };
    if (!concatOutputs &&
        (ret.getNumOperands() != 1 || !isLoss(ret.getOperand(0).getType())))
      return fn.emitOpError()
             << "must return its loss alone (a scalar float; run "
                "-tessel-add-loss first) to be split into microbatches";
    int64_t k = count;
    for (BlockArgument arg : fn.getArguments()) {
      auto t = dyn_cast<RankedTensorType>(arg.getType());
      if (!t || t.getRank() < 1 || t.isDynamicDim(0) ||
          t.getDimSize(0) % k != 0)
      {
        InFlightDiagnostic d = fn.emitOpError()
                               << "argument " << arg.getArgNumber() << " ("
                               << arg.getType() << ") has no dim 0 that " << k
                               << " microbatches divide";
        if (t && t.getRank() >= 1 && !t.isDynamicDim(0))
          d << ": its batch of " << t.getDimSize(0) << " is not a multiple of "
            << k;
        return d;
      }
    }

    // The ops that depend on an argument: copied per microbatch.
    llvm::DenseSet<Value> dependent(fn.getArguments().begin(),
                                    fn.getArguments().end());
    SmallVector<Operation *> ops;
    for (Operation &op : block.without_terminator()) {
      if (op.getNumRegions())
        continue;
      if (llvm::any_of(op.getOperands(),
                       [&](Value v) { return dependent.contains(v); })) {
        ops.push_back(&op);
        dependent.insert(op.result_begin(), op.result_end());
      }
    }
    Value loss = concatOutputs ? Value() : ret.getOperand(0);
    if (loss && !dependent.contains(loss))
      return fn.emitOpError() << "has a loss that depends on no argument";
    if (concatOutputs &&
        llvm::none_of(ret.getOperands(),
                      [&](Value v) { return dependent.contains(v); }))
      return fn.emitOpError() << "has no output that depends on an argument: "
                                 "nothing to split into microbatches";
    // Inference: each output's copies, per microbatch.
    SmallVector<SmallVector<Value>> pieces(ret.getNumOperands());

    OpBuilder b(ret);
    Location loc = NameLoc::get(b.getStringAttr("microbatch"), fn.getLoc());
    // The batch dim of each dependent value, found on microbatch 0's copies
    // (the dim the copy shrank; -1: the batch was reduced away).
    DenseMap<Value, int64_t> batchDim;
    for (BlockArgument arg : fn.getArguments())
      batchDim[arg] = 0;
    llvm::DenseSet<Value> inner;
    DenseMap<std::tuple<Value, int64_t, int64_t>, Value> sharedRows;
    Value total;
    const int64_t emitted = copies > 0 ? std::min<int64_t>(copies, k) : k;
    if (emitted < k && concatOutputs)
      return fn.emitOpError() << "copies=" << int64_t(copies)
                              << " leaves outputs incomplete: only a "
                                 "training step's prediction emits fewer "
                                 "copies than microbatches";
    for (int64_t m = 0; m < emitted; ++m) {
      IRMapping map;
      for (BlockArgument arg : fn.getArguments()) {
        auto t = cast<RankedTensorType>(arg.getType());
        int64_t rows = t.getDimSize(0) / k;
        SmallVector<int64_t> starts(t.getRank(), 0), limits(t.getShape()),
            strides(t.getRank(), 1), shape(t.getShape());
        starts[0] = m * rows;
        limits[0] = (m + 1) * rows;
        shape[0] = rows;
        Value slice = SliceOp::create(b, loc, withShape(t, shape), arg,
                                      b.getDenseI64ArrayAttr(starts),
                                      b.getDenseI64ArrayAttr(limits),
                                      b.getDenseI64ArrayAttr(strides));
        if (TensorShardingAttr spec = batchSpec(fn, arg, rows, m == 0))
          slice = ShardConstraintOp::create(b, loc, slice, spec);
        map.map(arg, slice);
      }
      for (Operation *op : ops) {
        Operation *copy = b.clone(*op, map);
        copy->setAttr(kMicrobatchAttr, b.getI64IntegerAttr(m));
        OpShardingRuleAttr rule;
        int64_t factor = -1;
        bool innerBatch = false;
        if (failed(shareRows(op, copy, m, k, dependent, batchDim, inner,
                             sharedRows, b, rule, factor, innerBatch)) ||
            failed(retype(op, copy)))
          return failure();
        if (m != 0)
          continue;
        for (auto [ri, r] : llvm::enumerate(op->getResults())) {
          auto ot = dyn_cast<RankedTensorType>(r.getType());
          auto ct = dyn_cast<RankedTensorType>(copy->getResult(ri).getType());
          int64_t d = -1;
          if (ot && ct && ot.getRank() == ct.getRank())
            for (int64_t i = 0; i < ot.getRank() && d < 0; ++i)
              if (ot.getDimSize(i) != ct.getDimSize(i))
                d = i;
          batchDim[r] = d;
          // Inside another factor: already so, or the op's rule puts
          // another factor before the batch's in the result dim.
          bool in = innerBatch;
          if (d >= 0 && rule && factor >= 0 &&
              ri < rule.getResultMappings().size()) {
            ArrayRef<int64_t> fs =
                rule.getResultMappings()[ri].getDims()[d].getFactors();
            in |= !fs.empty() && fs[0] != factor;
          }
          if (in)
            inner.insert(r);
        }
      }
      if (concatOutputs) {
        for (auto [i, v] : llvm::enumerate(ret.getOperands()))
          if (dependent.contains(v))
            pieces[i].push_back(map.lookup(v));
        continue;
      }
      Value l = map.lookup(loss);
      total = total ? Value(AddOp::create(b, loc, total, l)) : l;
    }
    if (concatOutputs) {
      for (auto [i, v] : llvm::enumerate(ret.getOperands())) {
        if (pieces[i].empty())
          continue;
        int64_t d = batchDim.lookup(v);
        if (d < 0 || inner.contains(v))
          return fn.emitOpError()
                 << "output " << i << " (" << v.getType() << ") "
                 << (d < 0 ? "reduces its batch away"
                           : "holds its batch inside another dim")
                 << ": it cannot be put together from " << k
                 << " microbatches (compile with --microbatches 1)";
        ret->setOperand(i, ConcatOp::create(b, loc, v.getType(), pieces[i],
                                            b.getI64IntegerAttr(d))
                               .getResult());
      }
      for (Operation *op : llvm::reverse(ops))
        if (op->use_empty())
          op->erase();
      return success();
    }
    auto scalar = cast<RankedTensorType>(loss.getType());
    Value kv = ConstantOp::create(
        b, loc,
        DenseElementsAttr::get(scalar, b.getFloatAttr(scalar.getElementType(),
                                                      double(k))));
    ret->setOperand(0, DivOp::create(b, loc, total, kv).getResult());
    for (Operation *op : llvm::reverse(ops))
      if (op->use_empty())
        op->erase();
    return success();
  }
};

} // namespace
} // namespace mlir::tessel
