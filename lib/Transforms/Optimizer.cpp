//===- Optimizer.cpp - the parameter update, as ordinary tessel IR --------===//
//
// After -tessel-autodiff a function returns its loss and one gradient per
// parameter (tessel.gradients names them). This pass turns each pair into
// PyTorch's exact update (torch.optim.SGD / Adam / AdamW, the single-tensor
// code paths, same order of operations), reading and assigning weights: the
// parameter and its optimizer state (zero-initialised weights named
// exp_avg.P, exp_avg_sq.P, momentum_buffer.P, and one step count). The
// function then returns the loss alone. State gets its parameter's spec, so
// it shards like the parameter; a gradient that is partial over dp is
// all-reduced by the partitioner before the update: DDP.
//
//===----------------------------------------------------------------------===//

#include "tessel/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/StringMap.h"

namespace mlir::tessel {
#define GEN_PASS_DEF_OPTIMIZERPASS
#include "tessel/Transforms/Passes.h.inc"

namespace {

/// Builds the update's elementwise arithmetic on f32 tensors, scalars
/// broadcast.
class UpdateBuilder {
public:
  UpdateBuilder(OpBuilder &b, Location loc) : b(b), loc(loc) {}

  Value scalar(double v) {
    auto t = RankedTensorType::get({}, b.getF32Type());
    return ConstantOp::create(b, loc,
                              DenseElementsAttr::get(t, static_cast<float>(v)));
  }
  Value add(Value x, Value y) { return AddOp::create(b, loc, x, y); }
  Value sub(Value x, Value y) { return SubOp::create(b, loc, x, y); }
  Value mul(Value x, Value y) { return MulOp::create(b, loc, x, y); }
  Value div(Value x, Value y) { return DivOp::create(b, loc, x, y); }
  Value mul(Value x, double s) { return mul(x, scalar(s)); }
  Value sqrt(Value x) { return SqrtOp::create(b, loc, x); }
  Value pow(Value x, Value y) { return PowOp::create(b, loc, x, y); }

private:
  OpBuilder &b;
  Location loc;
};

struct OptimizerPass : impl::OptimizerPassBase<OptimizerPass> {
  using Base::Base;

  void runOnOperation() override {
    for (auto fn : getOperation().getOps<func::FuncOp>())
      if (fn->hasAttr(TesselDialect::kGradientsAttrName) &&
          failed(update(fn)))
        return signalPassFailure();
  }

  /// A zero-initialised weight named `name` shaped and sharded like `like`,
  /// defined at the top of the function.
  WeightOp stateLike(OpBuilder &top, WeightOp like, StringRef prefix) {
    auto w = WeightOp::create(top, like.getLoc(), like.getType(),
                              (prefix + "." + like.getName()).str(),
                              /*zeros=*/true);
    if (Attribute spec = like->getAttr(TesselDialect::kShardingAttrName))
      w->setAttr(TesselDialect::kShardingAttrName, spec);
    return w;
  }

  LogicalResult update(func::FuncOp fn) {
    if (kind != "sgd" && kind != "adam" && kind != "adamw")
      return fn.emitOpError() << "unknown optimizer '" << kind
                              << "' (sgd, adam, adamw)";
    auto names =
        fn->getAttrOfType<ArrayAttr>(TesselDialect::kGradientsAttrName);
    Block &block = fn.getBody().front();
    auto ret = cast<func::ReturnOp>(block.getTerminator());
    unsigned numGrads = names.size();
    if (ret.getNumOperands() != numGrads + 1)
      return fn.emitOpError() << "returns " << ret.getNumOperands()
                              << " values; after the loss it must return the "
                              << numGrads << " gradients tessel.gradients names";

    // One weight op per parameter: later reads of the same name read it.
    llvm::StringMap<WeightOp> params;
    for (WeightOp w : llvm::make_early_inc_range(block.getOps<WeightOp>())) {
      auto [it, fresh] = params.try_emplace(w.getName(), w);
      if (!fresh && it->second.getType() == w.getType()) {
        w.replaceAllUsesWith(it->second.getResult());
        w.erase();
      }
    }

    MLIRContext *ctx = fn.getContext();
    OpBuilder top = OpBuilder::atBlockBegin(&block);
    OpBuilder b(ret);
    Location loc = NameLoc::get(StringAttr::get(ctx, kind), fn.getLoc());
    UpdateBuilder u(b, loc);

    // The step count t (1 at the first step), for Adam's bias corrections.
    Value t;
    auto scalarType = RankedTensorType::get({}, top.getF32Type());
    if (kind != "sgd") {
      auto step = WeightOp::create(top, loc, scalarType, "optimizer.step",
                                   /*zeros=*/true);
      t = u.add(step, u.scalar(1.0));
      AssignOp::create(b, loc, step, t);
    }

    for (unsigned i = 0; i < numGrads; ++i) {
      StringRef name = cast<StringAttr>(names[i]).getValue();
      auto it = params.find(name);
      if (it == params.end())
        return fn.emitOpError() << "has a gradient for '" << name
                                << "' but no tessel.weight of that name";
      WeightOp p = it->second;
      Value g = ret.getOperand(1 + i);
      if (g.getType() != p.getType())
        return fn.emitOpError() << "the gradient of '" << name << "' has type "
                                << g.getType() << ", the weight "
                                << p.getType();
      Value next;
      if (kind == "sgd") {
        // torch.optim.SGD: d = g + wd * p; buf = momentum * buf + d (the
        // first step's buf is d: the zero state gives the same); d = buf, or
        // d + momentum * buf with nesterov; p -= lr * d.
        Value d = g;
        if (weightDecay != 0.0)
          d = u.add(d, u.mul(p, weightDecay));
        if (momentum != 0.0) {
          WeightOp buf = stateLike(top, p, "momentum_buffer");
          Value buf1 = u.add(u.mul(buf, momentum), d);
          AssignOp::create(b, loc, buf, buf1);
          d = nesterov ? u.add(d, u.mul(buf1, momentum)) : buf1;
        }
        next = u.sub(p, u.mul(d, lr));
      } else {
        // torch.optim.Adam / AdamW (1.13's single-tensor path).
        Value param = p;
        if (kind == "adamw")
          param = u.mul(param, 1.0 - lr * weightDecay);
        else if (weightDecay != 0.0)
          g = u.add(g, u.mul(p, weightDecay));
        WeightOp m = stateLike(top, p, "exp_avg");
        WeightOp v = stateLike(top, p, "exp_avg_sq");
        Value m1 = u.add(u.mul(m, beta1), u.mul(g, 1.0 - beta1));
        Value v1 = u.add(u.mul(v, beta2), u.mul(u.mul(g, g), 1.0 - beta2));
        AssignOp::create(b, loc, m, m1);
        AssignOp::create(b, loc, v, v1);
        Value bc1 = u.sub(u.scalar(1.0), u.pow(u.scalar(beta1), t));
        Value bc2 = u.sub(u.scalar(1.0), u.pow(u.scalar(beta2), t));
        Value stepSize = u.div(u.scalar(lr), bc1);
        Value denom = u.add(u.div(u.sqrt(v1), u.sqrt(bc2)), u.scalar(eps));
        next = u.sub(param, u.mul(u.div(m1, denom), stepSize));
      }
      AssignOp::create(b, loc, p, next);
    }

    func::ReturnOp::create(b, ret.getLoc(), ret.getOperand(0));
    ret.erase();
    fn.setType(FunctionType::get(ctx, fn.getArgumentTypes(),
                                 fn.getResultTypes().take_front()));
    fn->removeAttr(TesselDialect::kGradientsAttrName);
    if (auto out = fn->getAttrOfType<ArrayAttr>(
            TesselDialect::kOutputNamesAttrName))
      fn->setAttr(TesselDialect::kOutputNamesAttrName,
                  ArrayAttr::get(ctx, out.getValue().take_front()));
    return success();
  }
};

} // namespace
} // namespace mlir::tessel
