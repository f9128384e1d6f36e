//===- Autodiff.cpp - reverse-mode differentiation of a function's loss ---===//
//
// On a function whose last result is a scalar float loss: the values that
// depend on a differentiated value (forward activity) and reach the loss
// (backward usefulness) get gradients, from d loss = 1 backwards over the
// block, each op's through its gradient rule (GradientOpInterface,
// dialects/tessel/Gradients.cpp), summed where a value has several uses.
// The gradients are appended to the function's results and named in
// `tessel.gradients`. Weights the function assigns (BatchNorm's running
// statistics) are state and get none. See docs/training.md. Pipelined, a
// weight that ops of several stages read gets one part of its gradient per
// stage, added in stage order (docs/pipeline.md).
//
//===----------------------------------------------------------------------===//

#include "tessel/Transforms/Passes.h"
#include "dialects/tessel/PipelineAttrs.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"

#include <climits>
#include <map>
#include <queue>
#include <set>

namespace mlir::tessel {
#define GEN_PASS_DEF_AUTODIFFPASS
#include "tessel/Transforms/Passes.h.inc"

namespace {

bool isFloatTensor(Type t) {
  auto rt = dyn_cast<RankedTensorType>(t);
  return rt && isa<FloatType>(rt.getElementType());
}

/// The loss: a rank-0 float tensor.
bool isScalarFloat(Type t) {
  return isFloatTensor(t) && cast<RankedTensorType>(t).getRank() == 0;
}

/// What gets one gradient result: a function argument, or every read of a
/// weight name.
struct Target {
  std::string name;
  RankedTensorType type;
  SmallVector<Value> values;
  /// Its output's name: the weight's, or the argument's input name.
  std::string outputName;
};

/// Records the ops the gradient rules create, so that those nothing uses
/// can go afterwards.
struct CreatedOps : public OpBuilder::Listener {
  SmallVector<Operation *> ops;
  void notifyOperationInserted(Operation *op, OpBuilder::InsertPoint) override {
    ops.push_back(op);
  }
};

/// "ONNX node 'name'" where the location names one.
std::string nodeOf(Location loc) {
  if (auto name = dyn_cast<NameLoc>(loc))
    return (" (ONNX node '" + name.getName().getValue() + "')").str();
  if (auto fused = dyn_cast<FusedLoc>(loc))
    for (Location l : fused.getLocations())
      if (auto name = dyn_cast<NameLoc>(l))
        return (" (ONNX node '" + name.getName().getValue() + "')").str();
  return "";
}

Value zerosOf(OpBuilder &b, Location loc, RankedTensorType type) {
  return ConstantOp::create(
      b, loc, DenseElementsAttr::get(type, b.getFloatAttr(type.getElementType(), 0.0)));
}


/// Pipelined training (PipelineAttrs.h): an op is tagged when it has a
/// phase. The forward's ops the microbatch pass or the stage split left
/// untagged but that compute from tagged ones (BatchNorm's statistics, the
/// sum of the microbatch losses) take the largest stage and microbatch of
/// their operands; every tagged forward op gets phase F. Returns whether
/// the function has tags at all (without, the backward is built as before).
bool tagForward(Block &block) {
  bool any = false;
  for (Operation &op : block.without_terminator())
    any |= op.hasAttr(kStageAttr) || op.hasAttr(kMicrobatchAttr);
  if (!any)
    return false;
  Builder b(block.getParentOp()->getContext());
  for (Operation &op : block.without_terminator()) {
    if (!op.hasAttr(kStageAttr) && !op.hasAttr(kMicrobatchAttr)) {
      int64_t stage = -1, mb = -1;
      bool fromTagged = false;
      for (Value v : op.getOperands())
        if (Operation *d = v.getDefiningOp(); d && d->hasAttr(kPhaseAttr)) {
          fromTagged = true;
          stage = std::max(stage, getPipelineInt(d, kStageAttr));
          mb = std::max(mb, getPipelineInt(d, kMicrobatchAttr));
        }
      if (!fromTagged)
        continue;
      if (stage >= 0)
        op.setAttr(kStageAttr, b.getI64IntegerAttr(stage));
      if (mb >= 0)
        op.setAttr(kMicrobatchAttr, b.getI64IntegerAttr(mb));
    }
    op.setAttr(kPhaseAttr, b.getStringAttr("F"));
  }
  return true;
}

bool isTagged(Value v) {
  Operation *d = v.getDefiningOp();
  return d && d->hasAttr(kPhaseAttr);
}

void copyTags(Operation *from, Operation *to, StringRef phase) {
  for (StringRef name : {kStageAttr.data(), kMicrobatchAttr.data()})
    if (Attribute a = from->getAttr(name))
      to->setAttr(name, a);
  to->setAttr(kPhaseAttr, StringAttr::get(to->getContext(), phase));
}

/// The order in which the backward visits the forward's ops: reverse
/// program order; with microbatches, a reverse topological order that
/// finishes microbatch 0 before microbatch 1 and so on (PyTorch's
/// accumulation loop), so that a weight's gradient is summed in microbatch
/// order, and the ops shared by every microbatch (weights, constants) last.
SmallVector<Operation *> backwardOrder(Block &block, bool tagged) {
  SmallVector<Operation *> order;
  if (!tagged) {
    for (Operation &op : llvm::reverse(block.without_terminator()))
      order.push_back(&op);
    return order;
  }
  DenseMap<Operation *, int64_t> position, pendingUses;
  int64_t n = 0;
  for (Operation &op : block.without_terminator()) {
    position[&op] = n++;
    int64_t uses = 0;
    for (Value r : op.getResults())
      for (OpOperand &u : r.getUses())
        if (u.getOwner()->getBlock() == &block)
          ++uses;
    pendingUses[&op] = uses;
  }
  using Key = std::tuple<int64_t, int64_t, Operation *>;
  std::priority_queue<Key, std::vector<Key>, std::greater<Key>> ready;
  auto push = [&](Operation *op) {
    int64_t mb = op->hasAttr(kPhaseAttr)
                     ? getPipelineInt(op, kMicrobatchAttr, 0)
                     : INT64_MAX;
    ready.push({mb, -position[op], op});
  };
  auto release = [&](Operation *user) {
    for (Value v : user->getOperands())
      if (Operation *d = v.getDefiningOp(); d && d->getBlock() == &block)
        if (--pendingUses[d] == 0)
          push(d);
  };
  for (Operation &op : block.without_terminator())
    if (pendingUses[&op] == 0)
      push(&op);
  release(block.getTerminator());
  while (!ready.empty()) {
    Operation *op = std::get<2>(ready.top());
    ready.pop();
    order.push_back(op);
    release(op);
  }
  return order;
}

struct AutodiffPass : public impl::AutodiffPassBase<AutodiffPass> {
  using Base::Base;

  void runOnOperation() final {
    ModuleOp module = getOperation();
    if (wrt != "weights" && wrt != "args") {
      module.emitError() << "-tessel-autodiff: unknown wrt='" << wrt
                         << "' (weights, args)";
      return signalPassFailure();
    }
    SmallVector<func::FuncOp> fns;
    for (auto fn : module.getOps<func::FuncOp>())
      if (fn.isPublic() && !fn.isExternal() && fn.getNumResults() > 0 &&
          isScalarFloat(fn.getResultTypes().back()))
        fns.push_back(fn);
    if (fns.empty()) {
      module.emitError() << "-tessel-autodiff: no public function returns a "
                            "scalar float loss (tensor<f32>) as its last result";
      return signalPassFailure();
    }
    for (func::FuncOp fn : fns)
      if (failed(differentiate(fn)))
        return signalPassFailure();
  }

  /// The differentiated values of `fn`, in a stable order.
  FailureOr<SmallVector<Target>> targetsOf(func::FuncOp fn) {
    SmallVector<Target> targets;
    if (wrt == "args") {
      auto inputNames =
          fn->getAttrOfType<ArrayAttr>(TesselDialect::kInputNamesAttrName);
      for (BlockArgument arg : fn.getArguments()) {
        if (!isFloatTensor(arg.getType()))
          continue;
        unsigned i = arg.getArgNumber();
        std::string name = "arg" + std::to_string(i);
        std::string output = name;
        if (inputNames && i < inputNames.size())
          if (auto s = dyn_cast<StringAttr>(inputNames[i]))
            output = s.str();
        targets.push_back(
            {name, cast<RankedTensorType>(arg.getType()), {arg}, output});
      }
      return targets;
    }
    // A weight the function already assigns is state (BatchNorm's running
    // statistics), not a parameter.
    llvm::StringSet<> assigned;
    fn.walk([&](AssignOp a) {
      if (auto w = a.getWeight().getDefiningOp<WeightOp>())
        assigned.insert(w.getName());
    });
    // -tessel-classify-parameters chose the parameters: only those train.
    std::optional<llvm::StringSet<>> trainable;
    if (auto names = fn->getParentOfType<ModuleOp>()->getAttrOfType<ArrayAttr>(
            TesselDialect::kTrainableAttrName)) {
      trainable.emplace();
      for (auto n : names.getAsRange<StringAttr>())
        trainable->insert(n.getValue());
    }
    llvm::StringMap<size_t> byName;
    WalkResult walk = fn.walk([&](WeightOp w) {
      if (!isFloatTensor(w.getType()) || assigned.contains(w.getName()) ||
          (trainable && !trainable->contains(w.getName())))
        return WalkResult::advance();
      auto [it, inserted] = byName.try_emplace(w.getName(), targets.size());
      if (inserted) {
        targets.push_back({w.getName().str(), w.getType(), {}, w.getName().str()});
      } else if (targets[it->second].type != w.getType()) {
        w.emitOpError() << "reads weight \"" << w.getName() << "\" as "
                        << w.getType() << ", elsewhere as "
                        << targets[it->second].type
                        << ": its gradient has no single type";
        return WalkResult::interrupt();
      }
      targets[it->second].values.push_back(w.getResult());
      return WalkResult::advance();
    });
    if (walk.wasInterrupted())
      return failure();
    return targets;
  }

  LogicalResult differentiate(func::FuncOp fn) {
    MLIRContext *ctx = fn.getContext();
    if (fn->hasAttr(TesselDialect::kGradientsAttrName))
      return fn.emitOpError() << "already has gradients ('"
                              << TesselDialect::kGradientsAttrName << "')";
    if (!fn.getBody().hasOneBlock())
      return fn.emitOpError() << "has several blocks; -tessel-autodiff "
                                 "differentiates single-block functions";
    Block &block = fn.getBody().front();
    auto ret = cast<func::ReturnOp>(block.getTerminator());
    Value loss = ret.getOperands().back();

    FailureOr<SmallVector<Target>> targets = targetsOf(fn);
    if (failed(targets))
      return failure();

    // Forward: the float values that depend on a differentiated value.
    DenseSet<Value> active;
    for (const Target &t : *targets)
      active.insert(t.values.begin(), t.values.end());
    fn.walk([&](Operation *op) {
      if (llvm::any_of(op->getOperands(),
                       [&](Value v) { return active.contains(v); }))
        for (Value r : op->getResults())
          if (isFloatTensor(r.getType()))
            active.insert(r);
    });
    // Backward: the values the loss depends on.
    DenseSet<Value> useful{loss};
    for (Operation &op : llvm::reverse(block.without_terminator()))
      if (llvm::any_of(op.getResults(),
                       [&](Value v) { return useful.contains(v); }))
        useful.insert(op.getOperands().begin(), op.getOperands().end());
    auto onPath = [&](Value v) { return active.contains(v) && useful.contains(v); };

    OpBuilder b(ret);
    CreatedOps created;
    b.setListener(&created);
    Location lossLoc = NameLoc::get(StringAttr::get(ctx, "d_loss"), ret.getLoc());
    DenseMap<Value, Value> grads;
    const bool tagged = tagForward(block);
    // A value every microbatch shares (a weight) that ops of several
    // pipeline stages read directly: each stage's part of its gradient is
    // summed on its own, in microbatch order, and the parts are added in
    // stage order where the gradient is read (readGrad), so that each stage
    // holding a copy can compute its part alone (docs/pipeline.md, a weight
    // shared by stages). Without stages the order is the one-rank
    // program's: every contribution in the backward's order.
    DenseMap<Value, std::map<int64_t, Value>> stageParts;
    DenseSet<Value> multiStage;
    if (tagged)
      for (Operation &op : block.without_terminator())
        for (Value r : op.getResults()) {
          if (isTagged(r))
            continue;
          std::set<int64_t> stages;
          for (Operation *user : r.getUsers())
            if (user->hasAttr(kPhaseAttr) && user->hasAttr(kStageAttr))
              stages.insert(getPipelineInt(user, kStageAttr));
          if (stages.size() > 1)
            multiStage.insert(r);
        }
    // A sum of gradients: that of a tagged value belongs to its producer's
    // backward (BW); that of a value every microbatch shares (a weight) is
    // accumulated in microbatch order, each add with the contribution's
    // microbatch (W).
    auto accumulate = [&](Value v, Value g, Location loc) {
      Value &slot = multiStage.contains(v) && isTagged(g)
                        ? stageParts[v][getPipelineInt(g.getDefiningOp(),
                                                       kStageAttr)]
                        : grads[v];
      if (!slot) {
        slot = g;
        return;
      }
      Value prev = slot;
      auto add = AddOp::create(b, loc, prev, g);
      slot = add;
      if (!tagged)
        return;
      if (isTagged(v)) {
        // Where the contributions are computed when they agree (a stage's
        // two reads of what the previous stage sent are summed before the
        // one gradient goes back), else with the value's producer.
        Operation *pd = prev.getDefiningOp(), *gd = g.getDefiningOp();
        bool together = pd && gd && isTagged(prev) && isTagged(g) &&
                        pd->getAttr(kStageAttr) == gd->getAttr(kStageAttr) &&
                        pd->getAttr(kMicrobatchAttr) ==
                            gd->getAttr(kMicrobatchAttr);
        copyTags(together ? gd : v.getDefiningOp(), add, "BW");
        return;
      }
      Operation *src = isTagged(g) ? g.getDefiningOp()
                       : isTagged(prev) ? prev.getDefiningOp()
                                        : nullptr;
      if (src)
        copyTags(src, add, "W");
    };
    // The gradient of `v`: with parts of several stages, their sum in stage
    // order (each add the earlier stage's W), then what the ops on weights
    // alone gave (e.g. a transpose's backward).
    auto readGrad = [&](Value v) -> Value {
      auto it = stageParts.find(v);
      if (it == stageParts.end())
        return grads.lookup(v);
      Value sum;
      for (auto &[stage, part] : it->second) {
        if (!sum) {
          sum = part;
          continue;
        }
        Value prev = sum;
        sum = AddOp::create(b, lossLoc, prev, part);
        copyTags(prev.getDefiningOp(), sum.getDefiningOp(), "W");
      }
      if (Value rest = grads.lookup(v)) {
        Value prev = sum;
        sum = AddOp::create(b, lossLoc, prev, rest);
        copyTags(prev.getDefiningOp(), sum.getDefiningOp(), "W");
      }
      stageParts.erase(it);
      grads[v] = sum;
      return sum;
    };
    if (onPath(loss)) {
      auto type = cast<RankedTensorType>(loss.getType());
      auto constant = [&](double v) -> Value {
        return ConstantOp::create(
            b, lossLoc,
            DenseElementsAttr::get(type, b.getFloatAttr(type.getElementType(), v)));
      };
      grads[loss] = constant(1.0);
      // GradScaler's scaler.scale(loss).backward(): the seed is the scale,
      // lossScale * 2^e with e a state the optimizer updates.
      if (lossScale > 0.0) {
        Value e = WeightOp::create(b, lossLoc, type, kLossScaleLog2Name,
                                   /*zeros=*/true);
        grads[loss] = MulOp::create(b, lossLoc, constant(lossScale),
                                    PowOp::create(b, lossLoc, constant(2.0), e));
      }
    }

    for (Operation *opPtr : backwardOrder(block, tagged)) {
      Operation &op = *opPtr;
      SmallVector<Value> resultGrads;
      bool any = false;
      for (Value r : op.getResults()) {
        resultGrads.push_back(readGrad(r));
        any |= static_cast<bool>(resultGrads.back());
      }
      if (!any)
        continue;
      auto rule = dyn_cast<GradientOpInterface>(&op);
      if (!rule) {
        unsigned index = 0;
        for (auto [i, v] : llvm::enumerate(op.getOperands()))
          if (onPath(v)) {
            index = i;
            break;
          }
        return op.emitOpError()
               << "has no gradient rule" << nodeOf(op.getLoc()) << ", but its operand "
               << index
               << " is on a path from a differentiated value to the loss";
      }
      SmallVector<Value> operandGrads;
      size_t firstCreated = created.ops.size();
      if (failed(rule.buildGradients(b, resultGrads, operandGrads)))
        return failure();
      // The backward of a tagged op: its stage and microbatch, where it
      // computes from tagged values (not from constants alone).
      if (tagged && op.hasAttr(kPhaseAttr))
        for (size_t i = firstCreated; i < created.ops.size(); ++i) {
          Operation *c = created.ops[i];
          if (llvm::any_of(c->getOperands(), isTagged))
            copyTags(&op, c, "BW");
        }
      if (operandGrads.size() != op.getNumOperands())
        return op.emitOpError() << "gradient rule gave " << operandGrads.size()
                                << " gradients for " << op.getNumOperands()
                                << " operands";
      for (auto [i, v, g] : llvm::enumerate(op.getOperands(), operandGrads)) {
        if (!g || !onPath(v))
          continue;
        if (g.getType() != v.getType())
          return op.emitOpError() << "gradient rule gave operand " << i
                                  << " (" << v.getType() << ") a gradient of type "
                                  << g.getType();
        accumulate(v, g, op.getLoc());
      }
    }

    // One gradient per target: the sum over its values, or zeros.
    SmallVector<Value> results;
    SmallVector<Attribute> names;
    for (const Target &t : *targets) {
      Value sum;
      for (Value v : t.values)
        if (Value g = readGrad(v)) {
          if (sum && tagged) {
            Value prev = sum;
            sum = AddOp::create(b, lossLoc, prev, g);
            if (Operation *src = isTagged(g)      ? g.getDefiningOp()
                                 : isTagged(prev) ? prev.getDefiningOp()
                                                  : nullptr)
              copyTags(src, sum.getDefiningOp(), "W");
            continue;
          }
          sum = sum ? Value(AddOp::create(b, lossLoc, sum, g)) : g;
        }
      results.push_back(sum ? sum : zerosOf(b, lossLoc, t.type));
      names.push_back(StringAttr::get(ctx, t.name));
    }
    b.setListener(nullptr);

    unsigned first = fn.getNumResults();
    ret.getOperandsMutable().append(results);
    SmallVector<unsigned> indices(results.size(), first);
    SmallVector<Type> types;
    for (Value v : results)
      types.push_back(v.getType());
    SmallVector<DictionaryAttr> attrs(results.size(), DictionaryAttr::get(ctx));
    if (failed(fn.insertResults(indices, types, attrs)))
      return failure();
    fn->setAttr(TesselDialect::kGradientsAttrName, ArrayAttr::get(ctx, names));
    // Arrays with one entry per result grow with it.
    if (auto out = fn->getAttrOfType<ArrayAttr>(TesselDialect::kOutputNamesAttrName)) {
      SmallVector<Attribute> all(out.begin(), out.end());
      for (const Target &t : *targets)
        all.push_back(StringAttr::get(ctx, t.outputName + ".grad"));
      fn->setAttr(TesselDialect::kOutputNamesAttrName, ArrayAttr::get(ctx, all));
    }
    if (auto specs = fn->getAttrOfType<ArrayAttr>(
            TesselDialect::kGlobalResultShardingsAttrName)) {
      SmallVector<Attribute> all(specs.begin(), specs.end());
      all.append(results.size(), UnitAttr::get(ctx));
      fn->setAttr(TesselDialect::kGlobalResultShardingsAttrName,
                  ArrayAttr::get(ctx, all));
    }

    // What the rules built but no gradient needed.
    for (Operation *op : llvm::reverse(created.ops))
      if (op->use_empty() && isPure(op))
        op->erase();
    return success();
  }
};

} // namespace
} // namespace mlir::tessel
