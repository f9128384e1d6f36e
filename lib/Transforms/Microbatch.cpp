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
// The copies' types are the originals' with the batch divided: re-inferred
// by ops that infer their types, the operand's shape for same-shape ops,
// and for reshape and expand the dim the batch went to.
//
//===----------------------------------------------------------------------===//

#include "tessel/Transforms/Passes.h"
#include "tessel/Transforms/PipelineAttrs.h"

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
    if (ret.getNumOperands() != 1 || !isLoss(ret.getOperand(0).getType()))
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
    Value loss = ret.getOperand(0);
    if (!dependent.contains(loss))
      return fn.emitOpError() << "has a loss that depends on no argument";

    OpBuilder b(ret);
    Location loc = NameLoc::get(b.getStringAttr("microbatch"), fn.getLoc());
    Value total;
    for (int64_t m = 0; m < k; ++m) {
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
        if (failed(retype(op, copy)))
          return failure();
      }
      Value l = map.lookup(loss);
      total = total ? Value(AddOp::create(b, loc, total, l)) : l;
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
