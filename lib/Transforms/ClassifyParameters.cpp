//===- ClassifyParameters.cpp - which weights train -----------------------===//
//
// An ONNX model does not say which of its initializers are parameters. The
// exporters fold constants (causal masks, rotary tables) into initializers
// beside the parameters, write scalars (a Pow's exponent) as initializers,
// and keep buffers (BatchNorm's statistics) as initializers too. Training
// all of them drifts from PyTorch (a mask that learns, weight decay on a
// rotary table) or fails (a scalar exponent's NaN gradient).
//
// This pass classes every float weight of the loss function, first rule that
// speaks wins (Passes.td lists them): the user's patterns, then data flow
// (no differentiable path to the loss, a scalar, a running statistic), then
// what the importer learnt from the model (tessel.weight_origins), then the
// default: an initializer the loss depends on trains.
//
//===----------------------------------------------------------------------===//

#include "tessel/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/GlobPattern.h"

namespace mlir::tessel {
#define GEN_PASS_DEF_CLASSIFYPARAMETERSPASS
#include "tessel/Transforms/Passes.h.inc"

namespace {

struct Class {
  bool trainable = false;
  std::string reason;
};

struct Pattern {
  std::string text;
  llvm::GlobPattern glob;
  bool matched = false;
};

bool isFloat(Type t) {
  auto rt = dyn_cast<RankedTensorType>(t);
  return rt && isa<FloatType>(rt.getElementType());
}

/// A name the exporters give a folded value rather than a parameter: the
/// TorchScript exporter's node outputs ("/model/layers.0/Where_output_0"),
/// or torch.export's intermediate values ("val_12", "unsqueeze_3").
bool looksFolded(StringRef name) {
  return name.starts_with("/") || name.contains("_output_") ||
         name.contains("Constant");
}

/// "a, b, c" (the first `max`, then "... (N in all)").
std::string listNames(ArrayRef<std::string> names, size_t max = 8) {
  std::string s;
  for (size_t k = 0; k < names.size() && k < max; ++k)
    s += (k ? ", " : "") + names[k];
  if (names.size() > max)
    s += ", ... (" + std::to_string(names.size()) + " in all)";
  return s;
}

struct ClassifyParametersPass
    : public impl::ClassifyParametersPassBase<ClassifyParametersPass> {
  using Base::Base;

  FailureOr<std::vector<Pattern>> compile(ArrayRef<std::string> texts,
                                          StringRef option) {
    std::vector<Pattern> out;
    for (const std::string &t : texts) {
      auto glob = llvm::GlobPattern::create(t, /*MaxSubPatterns=*/256);
      if (!glob) {
        getOperation().emitError()
            << "--" << option << " '" << t
            << "' is not a valid pattern: " << llvm::toString(glob.takeError());
        return failure();
      }
      out.push_back({t, std::move(*glob), false});
    }
    return out;
  }

  void runOnOperation() final {
    ModuleOp module = getOperation();
    MLIRContext *ctx = module.getContext();
    auto trainablePatterns = compile(trainable, "trainable");
    auto frozenPatterns = compile(frozen, "frozen");
    if (failed(trainablePatterns) || failed(frozenPatterns))
      return signalPassFailure();

    auto origins = module->getAttrOfType<DictionaryAttr>(
        TesselDialect::kWeightOriginsAttrName);

    // Every weight of the loss functions by name (all reads of one name are
    // one tensor), with the facts the rules need.
    struct Facts {
      RankedTensorType type;
      bool onPath = false;
      bool runningStat = false;
      bool assigned = false;
    };
    llvm::MapVector<StringRef, Facts> weights;
    for (auto fn : module.getOps<func::FuncOp>()) {
      if (fn.isExternal() || fn.getNumResults() == 0 || !fn.getBody().hasOneBlock())
        continue;
      Block &block = fn.getBody().front();
      Value loss = block.getTerminator()->getOperands().back();
      // Backward from the loss: the values it depends on through a float
      // (differentiable) value. An integer or boolean value (a Where's
      // condition, a shape, an index) stops the walk: no gradient crosses it.
      DenseSet<Value> useful{loss};
      for (Operation &op : llvm::reverse(block.without_terminator())) {
        if (!llvm::any_of(op.getResults(),
                          [&](Value v) { return useful.contains(v); }))
          continue;
        for (Value v : op.getOperands())
          if (isFloat(v.getType()))
            useful.insert(v);
      }
      fn.walk([&](Operation *op) {
        if (auto a = dyn_cast<AssignOp>(op))
          if (auto w = a.getWeight().getDefiningOp<WeightOp>())
            weights[w.getName()].assigned = true;
        SmallVector<Value, 2> stats;
        if (auto bn = dyn_cast<BatchNormOp>(op))
          stats = {bn.getMean(), bn.getVariance()};
        // Training mode (ONNX training_mode=1): the running statistics are
        // read and updated, never used to normalise.
        if (auto bn = dyn_cast<BatchNormTrainOp>(op))
          stats = {bn.getRunningMean(), bn.getRunningVar()};
        for (Value v : stats)
          if (auto w = v.getDefiningOp<WeightOp>())
            weights[w.getName()].runningStat = true;
        auto w = dyn_cast<WeightOp>(op);
        if (!w)
          return;
        Facts &f = weights[w.getName()];
        f.type = w.getType();
        f.onPath |= isFloat(w.getType()) && useful.contains(w.getResult());
      });
    }

    // A pattern matches a weight's name, or the PyTorch parameter an
    // exporter's folded copy holds (onnx::MatMul_7 is ...q_proj.weight).
    auto matches = [&](const Pattern &p, StringRef name) {
      if (p.glob.match(name))
        return true;
      auto o = origins ? origins.getAs<ArrayAttr>(name) : ArrayAttr();
      return o && o.size() == 3 &&
             p.glob.match(cast<StringAttr>(o[2]).getValue());
    };
    llvm::MapVector<StringRef, Class> classes;
    for (auto &[name, f] : weights) {
      if (!f.type)
        continue; // only assigned here (state of another pass)
      for (Pattern &p : *frozenPatterns)
        if (matches(p, name))
          p.matched = true;
      for (Pattern &p : *trainablePatterns)
        if (matches(p, name)) {
          p.matched = true;
          if (!isFloat(f.type)) {
            std::string ts;
            llvm::raw_string_ostream os(ts);
            os << f.type;
            module.emitError() << "--trainable '" << p.text << "' matches '"
                               << name << "', a " << ts
                               << ": only float tensors train";
            return signalPassFailure();
          }
        }
      if (!isFloat(f.type) || f.assigned)
        continue;
      classes[name] = classify(name, f.type, f.onPath, f.runningStat,
                               origins, *trainablePatterns, *frozenPatterns,
                               matches);
    }
    for (auto *patterns : {&*trainablePatterns, &*frozenPatterns})
      for (const Pattern &p : *patterns)
        if (!p.matched) {
          std::vector<std::string> names;
          for (auto &[name, c] : classes)
            names.push_back(name.str());
          module.emitError()
              << "--" << (patterns == &*trainablePatterns ? "trainable" : "frozen")
              << " '" << p.text << "' matches no weight (weights: "
              << listNames(names) << ")";
          return signalPassFailure();
        }

    SmallVector<Attribute> trainableNames;
    SmallVector<NamedAttribute> entries;
    Builder b(ctx);
    for (auto &[name, c] : classes) {
      if (c.trainable)
        trainableNames.push_back(b.getStringAttr(name));
      entries.push_back(b.getNamedAttr(
          name, b.getArrayAttr({b.getBoolAttr(c.trainable),
                                b.getStringAttr(c.reason)})));
    }
    if (trainableNames.empty()) {
      std::string why;
      for (auto &[name, c] : classes)
        why += "\n  " + name.str() + ": " + c.reason;
      module.emitError() << "nothing to train: no weight of the model is "
                            "trainable"
                         << (classes.empty() ? " (it has no float weights)"
                                             : ":" + why);
      return signalPassFailure();
    }
    for (auto &[name, c] : classes)
      if (c.trainable && looksFolded(name) &&
          !llvm::any_of(*trainablePatterns,
                        [&](const Pattern &p) { return matches(p, name); }))
        emitWarning(UnknownLoc::get(&getContext()))
            << "trains '" << name
            << "', whose name looks like a value the exporter folded, not a "
               "parameter; --frozen '"
            << name << "' keeps it fixed";
    module->setAttr(TesselDialect::kTrainableAttrName,
                    b.getArrayAttr(trainableNames));
    module->setAttr(TesselDialect::kParameterClassesAttrName,
                    b.getDictionaryAttr(entries));
  }

  static Class
  classify(StringRef name, RankedTensorType type, bool onPath, bool runningStat,
           DictionaryAttr origins, ArrayRef<Pattern> trainablePatterns,
           ArrayRef<Pattern> frozenPatterns,
           llvm::function_ref<bool(const Pattern &, StringRef)> matches) {
    for (const Pattern &p : frozenPatterns)
      if (matches(p, name))
        return {false, "--frozen '" + p.text + "'"};
    if (!trainablePatterns.empty()) {
      for (const Pattern &p : trainablePatterns)
        if (matches(p, name))
          return {true, "--trainable '" + p.text + "'"};
      return {false, "matched by no --trainable pattern"};
    }
    if (runningStat)
      return {false, "a BatchNorm running statistic (state, not a parameter)"};
    if (!onPath)
      return {false, "the loss does not depend on it through a "
                     "differentiable operand"};
    if (type.getNumElements() == 1)
      return {false, "a scalar (an exporter's constant operand)"};
    if (origins)
      if (auto o = origins.getAs<ArrayAttr>(name); o && o.size() >= 2) {
        StringRef kind = cast<StringAttr>(o[0]).getValue();
        std::string detail = cast<StringAttr>(o[1]).getValue().str();
        std::string why = kind.str() + (detail.empty() ? "" : " (" + detail + ")");
        if (kind == "parameter")
          return {true, why};
        if (kind == "buffer" || kind == "constant")
          return {false, why};
      }
    return {true, "a float initializer the loss depends on"};
  }
};

} // namespace
} // namespace mlir::tessel
