//===- Zero.cpp - ZeRO as sharding specs over dp --------------------------===//
//
// Runs on a training step after -tessel-optimizer, before propagation. Each
// optimizer update (tessel.adam_update, tessel.sgd_update) is pinned to a
// layout S: its parameter's layout P (replicated, or the plan's) with the
// dp axis added to one dim that divides. The partitioner then inserts the
// collectives of weight-update sharding (as XLA does it):
//
//   stage 1: the optimizer state is S. The gradient is all-reduced (pinned
//            to P, DDP's all_reduce, bucketed) and each rank keeps its block
//            (local_slice); each rank updates its block of the parameter,
//            which is all-gathered back into P by the assign.
//   stage 2: as 1, but the gradient goes straight from partial to S: one
//            reduce_scatter.
//   stage 3: (FSDP) the parameter itself is S: every other reader reads it
//            through a constraint to P (an all_gather, which
//            -tessel-gather-at-use then repeats right before each use), the
//            gradient is reduce-scattered and the update runs on the block
//            in place.
//
// A parameter none of whose dims divides over dp (with its plan's axes)
// keeps a replicated update, with a warning: never a wrong number.
//
//===----------------------------------------------------------------------===//

#include "tessel/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace mlir::tessel {
#define GEN_PASS_DEF_ZEROPASS
#include "tessel/Transforms/Passes.h.inc"

namespace {

struct ZeroPass : impl::ZeroPassBase<ZeroPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (stage < 1 || stage > 3) {
      module.emitError() << "tessel-zero: stage must be 1, 2 or 3 (got "
                         << int64_t(stage) << ")";
      return signalPassFailure();
    }
    SmallVector<MeshOp> meshes(module.getOps<MeshOp>());
    if (meshes.size() != 1) {
      module.emitError() << "tessel-zero needs one mesh (the module has "
                         << meshes.size() << ")";
      return signalPassFailure();
    }
    mesh = meshes.front();
    std::optional<int64_t> n = mesh.getAxisSize(axis);
    if (!n) {
      module.emitError() << "tessel-zero: the mesh has no axis '" << axis
                         << "' to shard the optimizer over";
      return signalPassFailure();
    }
    dp = *n;
    meshRef = FlatSymbolRefAttr::get(mesh.getSymNameAttr());
    for (auto fn : module.getOps<func::FuncOp>())
      if (!fn.isExternal())
        fn.walk([&](Operation *op) {
          if (isa<AdamUpdateOp, SgdUpdateOp>(op))
            shardUpdate(op);
        });
  }

  /// The spec a value has when nobody annotated it: replicated.
  TensorShardingAttr specOf(Operation *op, RankedTensorType type) {
    if (auto s = op->getAttrOfType<TensorShardingAttr>(
            TesselDialect::kShardingAttrName))
      return s;
    return TensorShardingAttr::getReplicated(op->getContext(), meshRef,
                                             type.getRank());
  }

  /// `p` with `axis` added to the first dim (0 first) that stays divisible
  /// and unpadded; null when none does or the spec already uses the axis.
  TensorShardingAttr addAxis(TensorShardingAttr p, RankedTensorType type) {
    MLIRContext *ctx = p.getContext();
    StringAttr a = StringAttr::get(ctx, axis);
    for (DimShardingAttr d : p.getDims())
      if (llvm::is_contained(d.getAxes(), a))
        return {};
    for (PartialAxisAttr q : p.getPartials())
      if (q.getAxis() == a)
        return {};
    for (auto [i, d] : llvm::enumerate(p.getDims())) {
      if (d.getPad())
        continue;
      int64_t shards = dp;
      for (StringAttr b : d.getAxes())
        shards *= mesh.getAxisSize(b.getValue()).value_or(1);
      int64_t size = type.getDimSize(i);
      if (ShapedType::isDynamic(size) || size % shards)
        continue;
      SmallVector<DimShardingAttr> dims(p.getDims());
      SmallVector<StringAttr> axes(d.getAxes());
      axes.push_back(a);
      dims[i] = DimShardingAttr::get(ctx, axes, 0);
      return TensorShardingAttr::get(ctx, meshRef, dims, p.getPartials());
    }
    return {};
  }

  void shardUpdate(Operation *update) {
    Value param = update->getOperand(0);
    auto w = param.getDefiningOp<WeightOp>();
    auto type = cast<RankedTensorType>(param.getType());
    if (!w) {
      update->emitWarning() << "ZeRO: the update's parameter is no "
                              "tessel.weight: it stays replicated";
      return;
    }
    TensorShardingAttr p = specOf(w, type);
    TensorShardingAttr s = addAxis(p, type);
    if (!s) {
      std::string shape;
      llvm::raw_string_ostream os(shape);
      llvm::interleave(type.getShape(), os, "x");
      w->emitWarning() << "ZeRO: no dim of parameter '" << w.getName() << "' ["
                      << shape << "] divides over " << axis << "=" << dp
                      << " (with its plan's axes): its update stays "
                         "replicated, as DDP's";
      return;
    }
    OpBuilder b(update);
    Location loc = update->getLoc();
    auto pin = [&](Value v, TensorShardingAttr spec) -> Value {
      return ShardConstraintOp::create(b, loc, v, spec);
    };
    const StringAttr key =
        StringAttr::get(update->getContext(), TesselDialect::kShardingAttrName);

    // The optimizer state: sharded from the start (zero-initialised).
    for (Value state : update->getOperands().drop_front(2)) {
      auto sw = state.getDefiningOp<WeightOp>();
      if (sw && sw.getZeros() && state.getType() == type)
        sw->setAttr(key, s);
    }
    if (stage == 3) {
      // FSDP: the parameter is stored in blocks; its other readers read it
      // whole, through a constraint each (all-gathered at the use).
      w->setAttr(key, s);
      for (OpOperand &use : llvm::make_early_inc_range(w->getUses())) {
        Operation *user = use.getOwner();
        if (user == update || isa<AssignOp>(user))
          continue;
        OpBuilder ub(user);
        use.set(ShardConstraintOp::create(ub, user->getLoc(), param, p));
      }
    } else {
      // The parameter stays whole (its plan's layout): pinned, so that the
      // block the update reads does not propagate into the forward.
      w->setAttr(key, p);
      update->setOperand(0, pin(param, s));
    }
    // The gradient: all-reduced then sliced (1), reduce-scattered (2, 3).
    Value g = update->getOperand(1);
    if (stage == 1)
      g = pin(g, p);
    update->setOperand(1, pin(g, s));
    SmallVector<Attribute> results(update->getNumResults(), s);
    update->setAttr(key, ArrayAttr::get(update->getContext(), results));
  }

  MeshOp mesh;
  FlatSymbolRefAttr meshRef;
  int64_t dp = 1;
};

} // namespace
} // namespace mlir::tessel
