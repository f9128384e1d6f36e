//===- MarkBf16Operands.cpp - GEMMs whose operands are bf16 values --------===//
//
// After -tessel-mixed-precision (bf16) every GEMM and convolution of the
// training step, forward and backward, reads round_float results, directly
// or through ops that only move values (reshape, transpose, slice,
// all_gather, ...); in a bf16 model each reads bf16 tensors cast to f32
// (-tessel-float-normalization). Such an operand is exactly a
// bf16 value held in f32, so the GEMM may run on bf16 hardware with f32
// accumulation and the same result up to the order of its f32 sums. This
// pass says so on the op (`bf16_operands`); the runtime decides whether the
// CPU can (runtime/cpu/Bf16MatMul.cpp, ConvTraining.cpp).
//
//===----------------------------------------------------------------------===//

#include "tessel/Transforms/Passes.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/TypeSwitch.h"

namespace mlir::tessel {
#define GEN_PASS_DEF_MARKBF16OPERANDSPASS
#include "tessel/Transforms/Passes.h.inc"

namespace {

bool isF32Tensor(Value v) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  return t && t.getElementType().isF32();
}

/// Whether `v` holds only values that bf16 represents exactly, as far as
/// its defining ops show: a round_float to a format no wider than bf16 (at
/// most 8 exponent and 7 mantissa bits), a constant whose floats have their
/// low 16 bits zero, or ops that move such values without computing.
class Bf16Values {
public:
  bool exact(Value v) {
    if (!isF32Tensor(v))
      return false;
    auto [it, inserted] = known.try_emplace(v, false);
    if (!inserted)
      return it->second; // false while in progress: no cycles in SSA anyway
    bool result = compute(v);
    known[v] = result;
    return result;
  }

private:
  bool compute(Value v) {
    Operation *def = v.getDefiningOp();
    if (!def)
      return false;
    return llvm::TypeSwitch<Operation *, bool>(def)
        .Case([](RoundFloatOp r) {
          return r.getExponentBits() <= 8 && r.getMantissaBits() <= 7;
        })
        // A bf16 tensor widened (a bf16 model's operands, through
        // -tessel-float-normalization's casts).
        .Case([](CastOp c) {
          auto t = dyn_cast<RankedTensorType>(c.getInput().getType());
          return t && t.getElementType().isBF16();
        })
        .Case([](ConstantOp c) {
          auto dense = dyn_cast<DenseElementsAttr>(c.getValue());
          if (!dense || !dense.getElementType().isF32())
            return false;
          for (const APFloat &f : dense.getValues<APFloat>())
            if (f.bitcastToAPInt().getZExtValue() & 0xffffu)
              return false;
          return true;
        })
        .Case<ReshapeOp, TransposeOp, SliceOp, SplitOp, ExpandOp,
              ShardConstraintOp, LocalSliceOp, AllGatherOp, AllToAllOp,
              CollectivePermuteOp>(
            [&](Operation *op) { return exact(op->getOperand(0)); })
        .Case([&](GatherOp g) { return exact(g.getData()); })
        .Case([&](ConcatOp c) {
          return llvm::all_of(c.getInputs(),
                              [&](Value x) { return exact(x); });
        })
        .Default([](Operation *) { return false; });
  }

  llvm::DenseMap<Value, bool> known;
};

struct MarkBf16OperandsPass
    : impl::MarkBf16OperandsPassBase<MarkBf16OperandsPass> {
  using Base::Base;

  void runOnOperation() final {
    Bf16Values values;
    UnitAttr unit = UnitAttr::get(&getContext());
    // Marks `op` where its two multiplied operands `a` and `b` are exact.
    auto mark = [&](auto op, Value a, Value b) {
      if (isF32Tensor(op.getResult()) && values.exact(a) && values.exact(b))
        op.setBf16OperandsAttr(unit);
    };
    getOperation()->walk([&](Operation *op) {
      llvm::TypeSwitch<Operation *>(op)
          .Case([&](MatmulOp o) { mark(o, o.getLhs(), o.getRhs()); })
          .Case([&](GemmOp o) { mark(o, o.getA(), o.getB()); })
          .Case([&](Conv2DOp o) { mark(o, o.getInput(), o.getWeight()); })
          .Case([&](Conv2DBackwardDataOp o) {
            mark(o, o.getGrad(), o.getWeight());
          })
          .Case([&](Conv2DBackwardWeightOp o) {
            mark(o, o.getInput(), o.getGrad());
          });
    });
  }
};

} // namespace
} // namespace mlir::tessel
