//===- MasterWeights.cpp - f32 master copies of half parameters -----------===//
//
// A model exported in bf16 or fp16 trains as PyTorch AMP and Megatron's
// mixed precision do: the optimizer updates an f32 master copy of each
// half parameter, and the model reads a half working copy made from the
// master at every step. This pass makes each trainable half `tessel.weight`
// (the module's `tessel.trainable`, from -tessel-classify-parameters) the
// f32 master, its data widened exactly when the artifact is written, and
// puts a `cast` to the half between it and its readers: the working copy.
// Autodiff then gives the master the working copy's gradient cast to f32
// (cast's gradient), and the optimizer's states follow the master's type,
// so checkpoints hold f32 masters and states. Frozen half weights stay as
// they are.
//
//===----------------------------------------------------------------------===//

#include "tessel/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/StringSet.h"

namespace mlir::tessel {
#define GEN_PASS_DEF_MASTERWEIGHTSPASS
#include "tessel/Transforms/Passes.h.inc"

namespace {

struct MasterWeightsPass : impl::MasterWeightsPassBase<MasterWeightsPass> {
  using Base::Base;

  void runOnOperation() final {
    ModuleOp module = getOperation();
    auto names =
        module->getAttrOfType<ArrayAttr>(TesselDialect::kTrainableAttrName);
    if (!names)
      return;
    llvm::StringSet<> trainable;
    for (Attribute n : names)
      trainable.insert(cast<StringAttr>(n).getValue());
    Type f32 = Float32Type::get(&getContext());
    OpBuilder b(&getContext());
    module.walk([&](WeightOp w) {
      RankedTensorType half = w.getType();
      Type et = half.getElementType();
      if (!(et.isBF16() || et.isF16()) || !trainable.contains(w.getName()))
        return;
      w.getResult().setType(half.clone(f32));
      b.setInsertionPointAfter(w);
      auto working = CastOp::create(b, w.getLoc(), half, w.getResult());
      w.getResult().replaceAllUsesExcept(working, working);
    });
  }
};

} // namespace
} // namespace mlir::tessel
