//===- MixedPrecision.cpp - autocast's low-precision GEMMs ----------------===//
//
// tesselc --precision bf16|fp16: on the loss function, before autodiff,
// each GEMM-like op (matmul, gemm, conv2d: what torch.autocast runs in the
// low precision) reads its float operands rounded to the format and its
// result is rounded too (tessel.round_float); everything else (norms,
// softmax, the loss, the optimizer) stays f32, and the parameters and the
// optimizer state (master weights) are f32 throughout. Autodiff then gives
// the backward the same rounding (round_float's rule rounds dy): the
// backward GEMMs read low-precision gradients and produce them.
//
// The values are held in f32 (rounded, with the format's overflow to
// infinity and its subnormals): the numerics of bf16/fp16 compute with f32
// accumulation, not yet its memory or speed.
//
//===----------------------------------------------------------------------===//

#include "tessel/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace mlir::tessel {
#define GEN_PASS_DEF_MIXEDPRECISIONPASS
#include "tessel/Transforms/Passes.h.inc"

namespace {

struct MixedPrecisionPass
    : impl::MixedPrecisionPassBase<MixedPrecisionPass> {
  using Base::Base;

  void runOnOperation() override {
    int64_t e, m;
    if (precision == "bf16") {
      e = 8, m = 7;
    } else if (precision == "fp16") {
      e = 5, m = 10;
    } else {
      getOperation().emitError()
          << "tessel-mixed-precision: unknown precision '" << precision
          << "' (bf16, fp16)";
      return signalPassFailure();
    }
    SmallVector<Operation *> gemms;
    getOperation().walk([&](Operation *op) {
      if (isa<MatmulOp, GemmOp, Conv2DOp>(op))
        gemms.push_back(op);
    });
    auto isF32 = [](Value v) {
      auto t = dyn_cast<RankedTensorType>(v.getType());
      return t && t.getElementType().isF32();
    };
    for (Operation *op : gemms) {
      OpBuilder b(op);
      auto eAttr = b.getI64IntegerAttr(e), mAttr = b.getI64IntegerAttr(m);
      for (OpOperand &o : op->getOpOperands())
        if (isF32(o.get()))
          o.set(RoundFloatOp::create(b, op->getLoc(), o.get().getType(),
                                     o.get(), eAttr, mAttr));
      b.setInsertionPointAfter(op);
      for (Value r : op->getResults()) {
        if (!isF32(r))
          continue;
        auto round = RoundFloatOp::create(b, op->getLoc(), r.getType(), r,
                                          eAttr, mAttr);
        r.replaceAllUsesExcept(round.getResult(), round);
      }
    }
  }
};

} // namespace
} // namespace mlir::tessel
