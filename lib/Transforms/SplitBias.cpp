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

/// Replaces `op` by `product` + `bias`; the Add and the ops `made` keep
/// op's discardable attributes.
void replaceBySum(OpBuilder &b, Operation *op, Value product, Value bias,
                  SmallVector<Operation *> made) {
  Value sum = AddOp::create(b, op->getLoc(), product, bias);
  made.push_back(sum.getDefiningOp());
  copyDiscardableAttrs(op, made);
  op->getResult(0).replaceAllUsesWith(sum);
  op->erase();
}

void splitGemm(GemmOp gemm) {
  OpBuilder b(gemm);
  Location loc = gemm.getLoc();
  auto product = GemmOp::create(b, loc, gemm.getType(), gemm.getA(), gemm.getB(),
                                  Value(), gemm.getTransAAttr(),
                                  gemm.getTransBAttr(), gemm.getAlphaAttr(),
                                  b.getF32FloatAttr(1.0f),
                                  gemm.getBf16OperandsAttr());
  Value c = gemm.getC();
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
  replaceBySum(b, gemm, product, c, {product, scaled});
}

void splitConv(Conv2DOp conv) {
  OpBuilder b(conv);
  Location loc = conv.getLoc();
  auto product = Conv2DOp::create(
      b, loc, conv.getType(), conv.getInput(), conv.getWeight(), Value(),
      conv.getStridesAttr(), conv.getPadsAttr(), conv.getDilationsAttr(),
      conv.getGroupAttr());
  // [O] -> [O, 1, 1], which broadcasts over [N, O, H, W].
  Value bias = conv.getBias();
  auto bType = cast<RankedTensorType>(bias.getType());
  Value shaped = ReshapeOp::create(
      b, loc, RankedTensorType::get({bType.getDimSize(0), 1, 1}, bType.getElementType()),
      bias);
  replaceBySum(b, conv, product, shaped, {product});
}

struct SplitBiasPass : public impl::SplitBiasPassBase<SplitBiasPass> {
  using Base::Base;
  void runOnOperation() final {
    // Post-order: the walk allows erasing the op it visits, and the pieces
    // go before it, where it does not look again.
    getOperation()->walk([&](Operation *op) {
      if (auto gemm = dyn_cast<GemmOp>(op); gemm && gemm.getC())
        splitGemm(gemm);
      else if (auto conv = dyn_cast<Conv2DOp>(op); conv && conv.getBias())
        splitConv(conv);
    });
  }
};

} // namespace
} // namespace mlir::tessel
