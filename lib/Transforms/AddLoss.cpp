//===- AddLoss.cpp - the training loss, appended to the forward program ---===//
//
// The loss is part of the compiled program, built from ordinary tessel ops so
// that it shards and differentiates like the model:
//   cross_entropy(logits [..., V], labels [...] i64):
//     -sum(log_softmax(logits)[label] * valid) / sum(valid),
//     the label's entry picked by a one-hot (compare with an iota constant),
//     valid = label != -100 (PyTorch's ignore_index);
//   mse(output, targets): mean((output - targets)^2).
// The function then returns the loss alone, a tensor<f32>.
//
//===----------------------------------------------------------------------===//

#include "tessel/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

#include <numeric>

namespace mlir::tessel {
#define GEN_PASS_DEF_ADDLOSSPASS
#include "tessel/Transforms/Passes.h.inc"

namespace {

/// PyTorch's CrossEntropyLoss default ignore_index.
constexpr int64_t kIgnoreIndex = -100;

SmallVector<int64_t> allDims(int64_t rank) {
  SmallVector<int64_t> d(rank);
  std::iota(d.begin(), d.end(), 0);
  return d;
}

/// The sum of every element of `x` as a tensor<f32>.
Value sumAll(OpBuilder &b, Location loc, Value x) {
  auto t = cast<RankedTensorType>(x.getType());
  return ReduceSumOp::create(b, loc, RankedTensorType::get({}, t.getElementType()),
                             x, b.getDenseI64ArrayAttr(allDims(t.getRank())),
                             /*keep_dims=*/false);
}

Value crossEntropy(OpBuilder &b, Location loc, Value logits, Value labels) {
  auto lt = cast<RankedTensorType>(logits.getType());
  auto labelType = cast<RankedTensorType>(labels.getType());
  int64_t rank = lt.getRank(), vocab = lt.getShape().back();
  Type f32 = b.getF32Type(), i64 = b.getI64Type();
  Value lsm = LogSoftmaxOp::create(b, loc, lt, logits, rank - 1);
  // One-hot of the labels: [..., 1] == iota[V] -> [..., V].
  SmallVector<int64_t> colShape(labelType.getShape());
  colShape.push_back(1);
  Value col = ReshapeOp::create(b, loc, RankedTensorType::get(colShape, i64),
                                labels);
  SmallVector<int64_t> iota(vocab);
  std::iota(iota.begin(), iota.end(), 0);
  auto iotaType = RankedTensorType::get({vocab}, i64);
  Value classes = ConstantOp::create(
      b, loc, DenseElementsAttr::get(iotaType, ArrayRef<int64_t>(iota)));
  auto boolType = RankedTensorType::get(lt.getShape(), b.getI1Type());
  Value hot = CompareOp::create(b, loc, boolType, ComparePredicate::EQ, col,
                                classes);
  Value oneHot = CastOp::create(b, loc, lt, hot);
  Value picked = ReduceSumOp::create(
      b, loc, RankedTensorType::get(labelType.getShape(), f32),
      MulOp::create(b, loc, lsm, oneHot), b.getDenseI64ArrayAttr({rank - 1}),
      /*keep_dims=*/false);
  // Positions whose label is ignore_index count neither in the sum nor in
  // the mean's denominator.
  auto scalarI64 = RankedTensorType::get({}, i64);
  Value ignore = ConstantOp::create(
      b, loc, DenseElementsAttr::get(scalarI64, kIgnoreIndex));
  Value keep = CompareOp::create(
      b, loc, RankedTensorType::get(labelType.getShape(), b.getI1Type()),
      ComparePredicate::NE, labels, ignore);
  Value valid = CastOp::create(
      b, loc, RankedTensorType::get(labelType.getShape(), f32), keep);
  Value total = sumAll(b, loc, MulOp::create(b, loc, picked, valid));
  Value count = sumAll(b, loc, valid);
  return NegOp::create(b, loc, DivOp::create(b, loc, total, count));
}

Value meanSquaredError(OpBuilder &b, Location loc, Value out, Value targets) {
  auto t = cast<RankedTensorType>(out.getType());
  Value d = SubOp::create(b, loc, out, targets);
  Value sq = MulOp::create(b, loc, d, d);
  return ReduceMeanOp::create(b, loc, RankedTensorType::get({}, t.getElementType()),
                              sq, b.getDenseI64ArrayAttr(allDims(t.getRank())),
                              /*keep_dims=*/false);
}

struct AddLossPass : impl::AddLossPassBase<AddLossPass> {
  using Base::Base;

  void runOnOperation() override {
    for (auto fn : getOperation().getOps<func::FuncOp>())
      if (!fn.isExternal() && fn.isPublic() && failed(addLoss(fn)))
        return signalPassFailure();
  }

  LogicalResult addLoss(func::FuncOp fn) {
    if (kind != "cross_entropy" && kind != "mse")
      return fn.emitOpError() << "unknown loss '" << kind
                              << "' (cross_entropy, mse)";
    auto ret = cast<func::ReturnOp>(fn.getBody().front().getTerminator());
    auto names = fn->getAttrOfType<ArrayAttr>(
        TesselDialect::kOutputNamesAttrName);
    auto nameOf = [&](unsigned i) -> std::string {
      if (names && i < names.size())
        return cast<StringAttr>(names[i]).str();
      return "output" + std::to_string(i);
    };
    unsigned index = 0;
    if (!output.empty()) {
      bool found = false;
      for (unsigned i = 0; i < ret.getNumOperands() && !found; ++i)
        if (nameOf(i) == output)
          index = i, found = true;
      if (!found)
        return fn.emitOpError() << "has no output named '" << output << "'";
    } else if (ret.getNumOperands() != 1) {
      std::string all;
      for (unsigned i = 0; i < ret.getNumOperands(); ++i)
        all += (i ? ", " : "") + nameOf(i);
      return fn.emitOpError() << "has " << ret.getNumOperands()
                              << " outputs (" << all
                              << "); name the one the loss is computed on";
    }
    Value out = ret.getOperand(index);
    auto type = dyn_cast<RankedTensorType>(out.getType());
    // A half model's loss is computed in f32, as transformers' and
    // Megatron's are (`logits.float()`).
    if (type && (type.getElementType().isBF16() || type.getElementType().isF16())) {
      type = type.clone(Float32Type::get(fn.getContext()));
      OpBuilder before(ret);
      out = CastOp::create(before, out.getLoc(), type, out);
    }
    if (!type || !type.getElementType().isF32())
      return fn.emitOpError() << "output '" << nameOf(index)
                              << "' is not a float tensor: a " << kind
                              << " loss needs one, it is " << out.getType();
    if (kind == "cross_entropy" && type.getRank() < 1)
      return fn.emitOpError() << "output '" << nameOf(index)
                              << "' is a scalar; cross_entropy needs its "
                                 "classes in the last dim";

    // The new input: labels (the output's shape minus its last dim) or
    // targets (the output's type).
    MLIRContext *ctx = fn.getContext();
    Type argType =
        kind == "cross_entropy"
            ? Type(RankedTensorType::get(type.getShape().drop_back(),
                                         IntegerType::get(ctx, 64)))
            : Type(type);
    std::string argName = kind == "cross_entropy" ? "labels" : "targets";
    unsigned argIndex = fn.getNumArguments();
    // Printed by name, like the inputs the importer names (%labels).
    if (failed(fn.insertArgument(argIndex, argType, {},
                                 NameLoc::get(StringAttr::get(ctx, argName)))))
      return failure();
    Value arg = fn.getArgument(argIndex);
    // A batch padded to divide over its axes (an input split with a pad:
    // --plan=dp's `pad: auto`) is padded with ignored labels: the pad adds
    // nothing to the loss, its count or the gradients.
    auto padded = [&](unsigned i) {
      auto spec = fn.getArgAttrOfType<TensorShardingAttr>(
          i, TesselDialect::kShardingAttrName);
      return spec && llvm::any_of(spec.getDims(), [](DimShardingAttr d) {
               return d.getPad() != 0;
             });
    };
    bool anyPadded = false;
    for (unsigned i = 0; i < argIndex; ++i)
      anyPadded |= padded(i);
    if (kind == "cross_entropy" && anyPadded)
      fn.setArgAttr(argIndex, TesselDialect::kPadValueAttrName,
                    IntegerAttr::get(IntegerType::get(ctx, 64), kIgnoreIndex));

    OpBuilder b(ret);
    Location loc = NameLoc::get(StringAttr::get(ctx, "loss"), fn.getLoc());
    Value loss = kind == "cross_entropy" ? crossEntropy(b, loc, out, arg)
                                         : meanSquaredError(b, loc, out, arg);
    func::ReturnOp::create(b, ret.getLoc(), ValueRange{loss});
    ret.erase();
    fn.setType(FunctionType::get(ctx, fn.getArgumentTypes(), {loss.getType()}));
    // Result attributes and names follow the new single result.
    fn.setAllResultAttrs(ArrayRef<DictionaryAttr>{DictionaryAttr::get(ctx)});
    fn->setAttr(TesselDialect::kOutputNamesAttrName,
                ArrayAttr::get(ctx, {StringAttr::get(ctx, "loss")}));
    if (auto in = fn->getAttrOfType<ArrayAttr>(
            TesselDialect::kInputNamesAttrName)) {
      SmallVector<Attribute> all(in.begin(), in.end());
      all.push_back(StringAttr::get(ctx, argName));
      fn->setAttr(TesselDialect::kInputNamesAttrName, ArrayAttr::get(ctx, all));
    }
    return success();
  }
};

} // namespace
} // namespace mlir::tessel
