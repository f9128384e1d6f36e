//===- SplitBias.cpp - gemm/conv2d bias -> a separate add -----------------===//

#include "tessel/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::tessel {
#define GEN_PASS_DEF_SPLITBIASPASS
#include "tessel/Transforms/Passes.h.inc"

namespace {

/// The pieces keep the op's discardable attributes (a pipeline's stage,
/// microbatch and phase: PipelineAttrs.h).
void copyDiscardableAttrs(Operation *from, ArrayRef<Operation *> to) {
  for (Operation *op : to)
    if (op)
      for (NamedAttribute a : from->getDiscardableAttrs())
        op->setAttr(a.getName(), a.getValue());
}

void splitGemm(GemmOp gemm) {
  Value c = gemm.getC();
  if (!c)
    return;
  OpBuilder b(gemm);
  Location loc = gemm.getLoc();
  auto product = GemmOp::create(b, loc, gemm.getType(), gemm.getA(), gemm.getB(),
                                  Value(), gemm.getTransAAttr(),
                                  gemm.getTransBAttr(), gemm.getAlphaAttr(),
                                  b.getF32FloatAttr(1.0f),
                                  gemm.getBf16OperandsAttr());
  float beta = gemm.getBeta().convertToFloat();
  Operation *scaled = nullptr;
  if (beta != 1.0f) {
    auto cType = cast<RankedTensorType>(c.getType());
    auto scalar = RankedTensorType::get({}, cType.getElementType());
    Value betaValue = ConstantOp::create(
        b, loc, DenseElementsAttr::get(scalar, b.getF32FloatAttr(beta)));
    c = MulOp::create(b, loc, c, betaValue);
    scaled = c.getDefiningOp();
  }
  Value sum = AddOp::create(b, loc, product, c);
  copyDiscardableAttrs(gemm, {product, scaled, sum.getDefiningOp()});
  gemm.replaceAllUsesWith(sum);
  gemm.erase();
}

void splitConv(Conv2DOp conv) {
  Value bias = conv.getBias();
  if (!bias)
    return;
  OpBuilder b(conv);
  Location loc = conv.getLoc();
  auto product = Conv2DOp::create(
      b, loc, conv.getType(), conv.getInput(), conv.getWeight(), Value(),
      conv.getStridesAttr(), conv.getPadsAttr(), conv.getDilationsAttr(),
      conv.getGroupAttr());
  // [O] -> [O, 1, 1], which broadcasts over [N, O, H, W].
  auto bType = cast<RankedTensorType>(bias.getType());
  Value shaped = ReshapeOp::create(
      b, loc, RankedTensorType::get({bType.getDimSize(0), 1, 1}, bType.getElementType()),
      bias);
  Value sum = AddOp::create(b, loc, product, shaped);
  copyDiscardableAttrs(conv, {product, sum.getDefiningOp()});
  conv.replaceAllUsesWith(sum);
  conv.erase();
}

struct SplitBiasPass : public impl::SplitBiasPassBase<SplitBiasPass> {
  using Base::Base;
  void runOnOperation() final {
    SmallVector<Operation *> ops;
    getOperation()->walk([&](Operation *op) {
      if (isa<GemmOp, Conv2DOp>(op))
        ops.push_back(op);
    });
    for (Operation *op : ops) {
      if (auto gemm = dyn_cast<GemmOp>(op))
        splitGemm(gemm);
      else
        splitConv(cast<Conv2DOp>(op));
    }
  }
};

} // namespace
} // namespace mlir::tessel
