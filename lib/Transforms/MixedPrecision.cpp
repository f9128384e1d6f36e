//===- MixedPrecision.cpp - autocast's low-precision GEMMs ----------------===//
//
// tesselc --precision bf16|fp16: on the loss function, before autodiff,
// each GEMM-like op (matmul, gemm, conv2d: what torch.autocast runs in the
// low precision) computes in the format; everything else (norms, softmax,
// the loss, the optimizer) stays f32, and the parameters and the optimizer
// state (master weights) are f32 throughout.
//
// A matmul or gemm reads its f32 operands cast to bf16 (or f16) and its
// result is that type: a half GEMM (f32 sums rounded once, as oneDNN's and
// cuBLAS's are), so what it reads and writes, and what the backward keeps
// of it, is stored in two bytes; its readers widen it (a cast to f32,
// which -tessel-fuse-elementwise folds into their chains). Autodiff gives
// the backward the same types (a cast's gradient casts `dy` back), so the
// backward GEMMs read and produce halves too.
//
// An attention (tessel.attention, which -tessel-fuse-attention wrote in
// place of the exporters' matmul, scale, mask, softmax, matmul) reads q, kt
// and v cast to the format and its result is that type, as autocast runs
// scaled_dot_product_attention: f32 sums and softmax (the GPU's
// FlashAttention tiles round the probabilities to the format before they
// multiply v, as PyTorch's flash kernels do), the result rounded once. Its
// mask and lse stay f32.
//
// A conv2d, which the runtimes have no half kernels for, reads its f32
// operands through `tessel.round_float` to the format and its result is
// rounded too: the same numbers held in f32 (round_float's gradient
// rounds dy).
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
    Type half = precision == "bf16" ? Type(BFloat16Type::get(&getContext()))
                                    : Type(Float16Type::get(&getContext()));
    SmallVector<Operation *> gemms;
    getOperation().walk([&](Operation *op) {
      if (isa<MatmulOp, GemmOp, Conv2DOp, AttentionOp>(op))
        gemms.push_back(op);
    });
    auto isF32 = [](Value v) {
      auto t = dyn_cast<RankedTensorType>(v.getType());
      return t && t.getElementType().isF32();
    };
    for (Operation *op : gemms) {
      OpBuilder b(op);
      // The operands the op reads in the half (q, kt and v of an
      // attention, every operand of a matmul or gemm) and the result it
      // writes in it; none: a conv2d, or an op that is not all f32.
      SmallVector<OpOperand *> halves;
      Value result;
      if (auto attn = dyn_cast<AttentionOp>(op)) {
        halves = {&attn.getQMutable(), &attn.getKtMutable(),
                  &attn.getVMutable()};
        result = attn.getResult();
      } else if (!isa<Conv2DOp>(op) && op->getNumResults() == 1) {
        for (OpOperand &o : op->getOpOperands())
          halves.push_back(&o);
        result = op->getResult(0);
      }
      if (result && isF32(result) &&
          llvm::all_of(halves, [&](OpOperand *o) { return isF32(o->get()); })) {
        for (OpOperand *o : halves) {
          auto t = cast<RankedTensorType>(o->get().getType());
          o->set(CastOp::create(b, op->getLoc(), t.clone(half), o->get()));
        }
        auto f32 = cast<RankedTensorType>(result.getType());
        result.setType(f32.clone(half));
        b.setInsertionPointAfter(op);
        auto wide = CastOp::create(b, op->getLoc(), f32, result);
        result.replaceAllUsesExcept(wide.getResult(), wide);
        continue;
      }
      if (isa<AttentionOp>(op))
        continue; // a half one already
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
