//===- GradHandler.cpp - a gradient handler over the gradient reductions --===//
//
// Replaces each data-parallel gradient all_reduce of a partitioned training
// step with what the named gradient handler builds (see the pass description
// in Passes.td and include/tessel/Extension/GradientHandler.h). The built-in
// handler `ddp` is registered through the plugins' API, as a plugin's is.
//
//===----------------------------------------------------------------------===//

#include "GradientReductions.h"
#include "dialects/tessel/ExtensionBridge.h"
#include "dialects/tessel/TesselOps.h"
#include "tessel/Transforms/GradHandler.h"
#include "tessel/Transforms/Passes.h"

#include "tessel/ExtensionHost/Host.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringExtras.h"

namespace mlir::tessel {
#define GEN_PASS_DEF_GRADHANDLERPASS
#include "tessel/Transforms/Passes.h.inc"

namespace ext = ::tessel::ext;

void registerBuiltinGradientHandlers(ext::Registrar &r) {
  ext::GradientHandlerDef ddp;
  ddp.name = "ddp";
  ddp.description = "all_reduce of each gradient over the data-parallel axes "
                    "(PyTorch DDP; what partitioning inserts)";
  ddp.handle = [](ext::GraphBuilder &b, const ext::GradientToReduce &g,
                  ext::Value &reduced) -> std::string {
    reduced = b.reduce(g.gradient);
    return reduced ? "" : b.error();
  };
  r.addGradientHandler(std::move(ddp));
}

std::string ensureBuiltinExtensions(const std::string &hostName) {
  return ext::host::registerBuiltins(
      [](ext::Registrar &r) { registerBuiltinGradientHandlers(r); }, hostName);
}

namespace {

/// The builder a handler sees for one gradient: reduce() is `ar` on another
/// value; state() a zero-initialised weight; assign() its tessel.assign.
class HandlerBuilder : public ExtGraphBuilder {
public:
  HandlerBuilder(OpBuilder &b, AllReduceOp ar, Block &block)
      : ExtGraphBuilder(b, ar.getLoc()), ar(ar), block(block) {}

  ext::Value reduce(ext::Value v) override {
    Value x = unwrap(v);
    if (!x)
      return fail("reduce: not a value of this builder");
    auto t = llvm::cast<RankedTensorType>(x.getType());
    if (t.getShape() != ar.getType().getShape())
      return fail("reduce: a value of shape other than the gradient's");
    return wrap(AllReduceOp::create(b, loc, t, ar.getKindAttr(), x,
                                    ar.getMeshAttr(), ar.getAxesAttr()));
  }

  ext::Value state(const std::string &name,
                   const ext::TensorType &type) override {
    RankedTensorType t = fromExtType(b.getContext(), type);
    if (!t)
      return fail("state '" + name + "': type " + ext::toString(type) +
                  " is not one Tessel holds");
    for (auto w : block.getOps<WeightOp>())
      if (w.getName() == name)
        return fail("state '" + name + "' exists already");
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&block);
    auto w = WeightOp::create(b, loc, t, b.getStringAttr(name),
                              b.getUnitAttr());
    w->setAttr(kPerRankStateAttrName, b.getUnitAttr());
    return wrap(w);
  }

  bool assign(ext::Value state, ext::Value value) override {
    Value s = unwrap(state), v = unwrap(value);
    if (!s || !v || !s.getDefiningOp<WeightOp>()) {
      fail("assign: needs a state() and a value of this builder");
      return false;
    }
    if (s.getType() != v.getType()) {
      fail("assign: the value's type differs from the state's");
      return false;
    }
    AssignOp::create(b, loc, s, v);
    return true;
  }

private:
  AllReduceOp ar;
  Block &block;
};

/// The parameter an all-reduced gradient updates: the weight the optimizer
/// update it reaches writes ("" when none is found).
std::string parameterOf(AllReduceOp ar) {
  SmallVector<Operation *> work(ar->getUsers().begin(), ar->getUsers().end());
  DenseSet<Operation *> seen;
  while (!work.empty()) {
    Operation *op = work.pop_back_val();
    if (!seen.insert(op).second)
      continue;
    Value param;
    if (auto u = dyn_cast<AdamUpdateOp>(op))
      param = u.getParam();
    else if (auto u = dyn_cast<SgdUpdateOp>(op))
      param = u.getParam();
    if (param)
      if (auto w = param.getDefiningOp<WeightOp>())
        return w.getName().str();
    for (Operation *user : op->getUsers())
      work.push_back(user);
  }
  return "";
}

struct GradHandlerPass : impl::GradHandlerPassBase<GradHandlerPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (std::string err = ensureBuiltinExtensions("tesselc"); !err.empty()) {
      module.emitError() << err;
      return signalPassFailure();
    }
    const ext::GradientHandlerDef *def = ext::host::findGradientHandler(handler);
    if (!def) {
      module.emitError() << "unknown gradient handler '" << handler
                         << "' (known: "
                         << llvm::join(ext::host::gradientHandlerNames(), ", ")
                         << "; a plugin's needs --load-plugin)";
      return signalPassFailure();
    }
    for (auto fn : module.getOps<func::FuncOp>())
      if (!fn.isExternal() && fn.getBody().hasOneBlock())
        if (failed(runOn(fn.getBody().front(), *def)))
          return signalPassFailure();
  }

  LogicalResult runOn(Block &block, const ext::GradientHandlerDef &def) {
    SmallVector<AllReduceOp> gradients;
    for (AllReduceOp ar : findGradientReductions(block))
      if (ar.getKind() == ReductionKind::Sum)
        gradients.push_back(ar);
    for (auto [index, ar] : llvm::enumerate(gradients)) {
      OpBuilder b(ar);
      HandlerBuilder hb(b, ar, block);
      ext::GradientToReduce g;
      g.parameter = parameterOf(ar);
      g.index = static_cast<int>(index);
      g.gradient = hb.wrap(ar.getInput());
      ext::Value reduced;
      if (std::string err = def.handle(hb, g, reduced); !err.empty())
        return ar.emitOpError()
               << "gradient handler '" << def.name << "' (plugin '"
               << ext::host::pluginOfGradientHandler(def.name)
               << "') failed on the gradient of '" << g.parameter
               << "': " << err;
      Value r = hb.unwrap(reduced);
      if (!r || r.getType() != ar.getType())
        return ar.emitOpError()
               << "gradient handler '" << def.name
               << "' gave the gradient of '" << g.parameter << "' "
               << (r ? "type " + toString(r.getType()) : std::string("no value"))
               << ", not " << ar.getType();
      ar.getResult().replaceAllUsesWith(r);
      ar.erase();
    }
    return success();
  }

  static std::string toString(Type t) {
    std::string s;
    llvm::raw_string_ostream os(s);
    os << t;
    return s;
  }
};

} // namespace
} // namespace mlir::tessel
