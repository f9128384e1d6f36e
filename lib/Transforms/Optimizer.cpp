//===- Optimizer.cpp - the parameter update, as ordinary tessel IR --------===//
//
// After -tessel-autodiff a function returns its loss and one gradient per
// parameter (tessel.gradients names them). This pass turns each pair into
// PyTorch's exact update (torch.optim.SGD / Adam / AdamW, the single-tensor
// code paths, same order of operations), reading and assigning weights: the
// parameter and its optimizer state (zero-initialised weights named
// exp_avg.P, exp_avg_sq.P, momentum_buffer.P, and one step count). Adam(W)
// and SGD with momentum are one fused op per parameter (tessel.adam_update,
// tessel.sgd_update), which the exporter runs in place on the state buffers.
// Without clipping, each update is placed right after the last op that
// reads its parameter or computes its gradient, so the gradient's buffer is
// free again early in the backward (and, sharded, its all-reduce starts
// there). The function then returns the loss alone. State gets its
// parameter's spec, so it shards like the parameter; a gradient that is
// partial over dp is all-reduced by the partitioner before the update: DDP.
//
// The learning rate may follow a schedule of the step count (LambdaLR: the
// factor of the k-th update, k = 0, 1, ...): linear-warmup k / warmup up to
// 1; cosine the same warmup, then transformers'
// get_cosine_schedule_with_warmup, 0.5 (1 + cos(pi p)), p the fraction of
// the steps after warmup. The rate and Adam's per-step scalars are computed
// here in double, as PyTorch's Python floats are, and rounded once: tables
// that the step count `optimizer.step` indexes (a gather).
// Gradient clipping is torch.nn.utils.clip_grad_norm_: the L2 norm of the
// gradients' norms, each gradient scaled by min(1, reciprocal(norm + 1e-6)
// max) before the update; sharded, the norm's sums are partial and
// all-reduced.
//
//===----------------------------------------------------------------------===//

#include "tessel/Transforms/Passes.h"
#include "dialects/tessel/PipelineAttrs.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/StringMap.h"

#include <algorithm>
#include <cmath>

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
  Value min(Value x, Value y) { return MinOp::create(b, loc, x, y); }
  /// The sum of all elements, a tensor<f32>.
  Value sumAll(Value x) {
    auto t = cast<RankedTensorType>(x.getType());
    SmallVector<int64_t> dims;
    for (int64_t d = 0; d < t.getRank(); ++d)
      dims.push_back(d);
    return ReduceSumOp::create(
        b, loc, RankedTensorType::get({}, t.getElementType()), x,
        b.getDenseI64ArrayAttr(dims), /*keep_dims=*/false);
  }
  /// The index of a table of n entries for a scalar f32 step k: min(k,
  /// n - 1) as an i64.
  Value tableIndex(Value k, int64_t n) {
    Value clamped = min(k, scalar(static_cast<double>(n - 1)));
    return CastOp::create(b, loc, RankedTensorType::get({}, b.getI64Type()),
                          clamped);
  }
  /// table[index] (a gather).
  Value lookupAt(Value index, ArrayRef<float> table) {
    auto vt = RankedTensorType::get({int64_t(table.size())}, b.getF32Type());
    Value tab = ConstantOp::create(b, loc, DenseElementsAttr::get(vt, table));
    return GatherOp::create(b, loc, tab, index, b.getI64IntegerAttr(0),
                            /*padding_idx=*/IntegerAttr());
  }
  /// table[min(k, n-1)] for a scalar f32 step k.
  Value lookup(Value k, ArrayRef<float> table) {
    return lookupAt(tableIndex(k, table.size()), table);
  }

private:
  OpBuilder &b;
  Location loc;
};

/// The ops a builder creates (a parameter's update, to tag it).
struct UpdateOps : public OpBuilder::Listener {
  SmallVector<Operation *> ops;
  void notifyOperationInserted(Operation *op, OpBuilder::InsertPoint) override {
    ops.push_back(op);
  }
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
    if (lrSchedule != "constant" && lrSchedule != "linear-warmup" &&
        lrSchedule != "cosine")
      return fn.emitOpError() << "unknown lr-schedule '" << lrSchedule
                              << "' (constant, linear-warmup, cosine)";
    if (warmupSteps < 0 || totalSteps < 0)
      return fn.emitOpError() << "warmup-steps and total-steps must not be "
                                 "negative";
    if (lrSchedule == "cosine" && totalSteps <= warmupSteps)
      return fn.emitOpError() << "lr-schedule=cosine needs total-steps ("
                              << int64_t(totalSteps) << ") above warmup-steps ("
                              << int64_t(warmupSteps) << ")";
    if (clipGradNorm < 0.0)
      return fn.emitOpError() << "clip-grad-norm must be positive (0: off)";
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
    // What every update shares is built at the top, so that an update may
    // sit anywhere in the backward.
    UpdateBuilder ut(top, loc);

    // The step count t (1 at the first step), for Adam's bias corrections
    // and the learning-rate schedule.
    Value t, step;
    auto scalarType = RankedTensorType::get({}, top.getF32Type());
    if (kind != "sgd" || lrSchedule != "constant") {
      step = WeightOp::create(top, loc, scalarType, "optimizer.step",
                              /*zeros=*/true);
      t = ut.add(step, ut.scalar(1.0));
    }

    // The learning rate of the k-th update (k = 0, 1, ...: the step
    // weight's value): lr times LambdaLR's factor, in double as PyTorch's
    // Python floats compute it.
    auto lrOf = [&](int64_t k) -> double {
      double f = 1.0;
      if (lrSchedule == "linear-warmup") {
        f = std::min(1.0, double(k) / double(std::max<int64_t>(1, warmupSteps)));
      } else if (lrSchedule == "cosine") {
        if (k < warmupSteps) {
          f = double(k) / double(std::max<int64_t>(1, warmupSteps));
        } else {
          double p = double(std::min<int64_t>(k, totalSteps) - warmupSteps) /
                     double(std::max<int64_t>(1, totalSteps - warmupSteps));
          f = std::max(0.0, 0.5 * (1.0 + std::cos(M_PI * p)));
        }
      }
      return lr * f;
    };
    // Steps from which the schedule's rate stays as it is.
    const int64_t scheduleLength = lrSchedule == "cosine" ? totalSteps + 1
                                   : lrSchedule == "linear-warmup"
                                       ? std::max<int64_t>(1, warmupSteps) + 1
                                       : 1;
    Value lrT = lrSchedule == "constant" ? ut.scalar(lr) : Value();
    if (!lrT) {
      SmallVector<float> table;
      for (int64_t k = 0; k < scheduleLength; ++k)
        table.push_back(static_cast<float>(lrOf(k)));
      lrT = ut.lookup(step, table);
    }

    // What every parameter's update shares, as PyTorch's single-tensor
    // Adam(W) computes it in Python floats (double) and rounds it once to
    // f32 where a tensor op takes it: the step size lr / (1 - beta1^t), the
    // second bias correction's square root sqrt(1 - beta2^t), AdamW's decay
    // factor 1 - lr wd (1 for Adam). In f32 from f32 betas, 1 - beta2^t
    // would be 1.3e-5 off at t = 1 (0.999 is not an f32), and every early
    // update that much too large. A table per scalar, indexed by the step,
    // up to where each stays constant: the schedule's end and the bias
    // corrections' 1.0f (t = 17,330 for beta2 = 0.999).
    Value stepSize, sqrtBc2, decay;
    if (kind != "sgd") {
      constexpr int64_t kMaxTable = int64_t(1) << 22;
      int64_t n = scheduleLength;
      while (n < kMaxTable &&
             (static_cast<float>(1.0 - std::pow(beta1, double(n))) != 1.0f ||
              static_cast<float>(std::pow(1.0 - std::pow(beta2, double(n)), 0.5)) != 1.0f))
        ++n;
      SmallVector<float> sizes, roots, decays;
      for (int64_t k = 0; k < n; ++k) {
        const double t = double(k + 1), lrK = lrOf(k);
        sizes.push_back(static_cast<float>(lrK / (1.0 - std::pow(beta1, t))));
        roots.push_back(
            static_cast<float>(std::pow(1.0 - std::pow(beta2, t), 0.5)));
        decays.push_back(static_cast<float>(
            kind == "adamw" ? 1.0 - lrK * weightDecay : 1.0));
      }
      Value index = ut.tableIndex(step, n);
      stepSize = ut.lookupAt(index, sizes);
      sqrtBc2 = ut.lookupAt(index, roots);
      decay = kind == "adamw" ? ut.lookupAt(index, decays) : ut.scalar(1.0);
    }

    SmallVector<Value> grads(ret.getOperands().drop_front());
    // Dynamic loss scaling (torch.amp.GradScaler): the gradients are the
    // scale's multiples (-tessel-autodiff seeded the backward with it):
    // unscaled here; `ok` is false when one of them is not finite, and
    // then every assign of the step keeps the old value (the step is
    // skipped) and the scale halves; after growth-interval good steps it
    // doubles. It needs every gradient first: the updates sit at the end.
    Value ok;
    if (lossScale > 0.0 && !grads.empty()) {
      if (growthInterval < 1)
        return fn.emitOpError() << "growth-interval must be positive";
      // The scale's state (autodiff read the same weight for its seed).
      auto state = [&](StringRef name) -> Value {
        if (WeightOp w = params.lookup(name))
          return w;
        return WeightOp::create(top, loc, scalarType, name, /*zeros=*/true);
      };
      Value e = state(kLossScaleLog2Name);
      Value tracker = state(kLossScaleTrackerName);
      Value scale = u.mul(u.pow(u.scalar(2.0), e), lossScale);
      Value inv = u.div(u.scalar(1.0), scale);
      Value bad;
      for (Value &g : grads) {
        g = u.mul(g, inv);
        // 0 * g is 0 where g is finite, NaN where it is not.
        Value s = u.sumAll(u.mul(g, u.scalar(0.0)));
        bad = bad ? u.add(bad, s) : s;
      }
      auto boolType = RankedTensorType::get({}, b.getI1Type());
      ok = CompareOp::create(b, loc, boolType, ComparePredicate::EQ, bad, bad);
      Value next = u.add(tracker, u.scalar(1.0));
      Value grow = CompareOp::create(b, loc, boolType, ComparePredicate::GE,
                                     next,
                                     u.scalar(static_cast<double>(growthInterval)));
      Value one = u.scalar(1.0), zero = u.scalar(0.0);
      Value eOk = WhereOp::create(b, loc, grow, u.add(e, one), e);
      AssignOp::create(b, loc, e,
                       WhereOp::create(b, loc, ok, eOk, u.sub(e, one)));
      Value tOk = WhereOp::create(b, loc, grow, zero, next);
      AssignOp::create(b, loc, tracker, WhereOp::create(b, loc, ok, tOk, zero));
    }
    // An assign of the update: skipped with the step when loss scaling
    // found an overflow.
    auto assignUpdate = [&](OpBuilder &at, Value w, Value v) {
      if (ok)
        v = WhereOp::create(at, loc, ok, v, w);
      AssignOp::create(at, loc, w, v);
    };

    // clip_grad_norm_: every gradient scaled by min(1, reciprocal(norm +
    // 1e-6) max). It needs every gradient first: the updates then all sit at
    // the end.
    const bool clip = clipGradNorm > 0.0 && !grads.empty();
    Value totalNorm;
    if (clip || (gradNorm && !grads.empty())) {
      // As clip_grad_norm_ computes it: each gradient's norm (f32), the
      // norm of their vector, and max_norm / (norm + 1e-6) as Python's
      // float / tensor does it, reciprocal(norm + 1e-6) * max_norm.
      auto vec1 = RankedTensorType::get({1}, b.getF32Type());
      SmallVector<Value> norms;
      for (Value g : grads)
        norms.push_back(ReshapeOp::create(b, loc, vec1,
                                          u.sqrt(u.sumAll(u.mul(g, g)))));
      Value stacked =
          norms.size() == 1
              ? norms.front()
              : Value(ConcatOp::create(
                    b, loc,
                    RankedTensorType::get({int64_t(norms.size())},
                                          b.getF32Type()),
                    norms, b.getI64IntegerAttr(0)));
      totalNorm = u.sqrt(u.sumAll(u.mul(stacked, stacked)));
    }
    if (clip) {
      Value coef = u.div(u.scalar(1.0), u.add(totalNorm, u.scalar(1e-6)));
      if (clipGradNorm != 1.0)
        coef = u.mul(coef, clipGradNorm);
      coef = u.min(coef, u.scalar(1.0));
      for (Value &g : grads)
        g = u.mul(g, coef);
    }

    for (unsigned i = 0; i < numGrads; ++i) {
      StringRef name = cast<StringAttr>(names[i]).getValue();
      auto it = params.find(name);
      if (it == params.end())
        return fn.emitOpError() << "has a gradient for '" << name
                                << "' but no tessel.weight of that name";
      WeightOp p = it->second;
      Value g = grads[i];
      if (g.getType() != p.getType())
        return fn.emitOpError() << "the gradient of '" << name << "' has type "
                                << g.getType() << ", the weight "
                                << p.getType();
      // Where the update goes: after the gradient and every read of the
      // parameter (the update may then overwrite it in place).
      OpBuilder at(ret);
      if (!clip && !ok) {
        Operation *last = g.getDefiningOp();
        for (Operation *user : p->getUsers())
          if (user->getBlock() == &block &&
              (!last || last->isBeforeInBlock(user)))
            last = user;
        if (last)
          at.setInsertionPointAfter(last);
        else
          at.setInsertionPointToStart(&block);
      }
      // Pipelined: the update belongs to its gradient's stage (STEP).
      UpdateOps updateOps;
      Operation *gradOp = g.getDefiningOp();
      const bool staged = gradOp && gradOp->hasAttr(kStageAttr);
      if (staged)
        at.setListener(&updateOps);
      UpdateBuilder ua(at, loc);
      auto f32 = [&](double v) { return at.getF32FloatAttr(static_cast<float>(v)); };
      if (kind == "sgd" && momentum == 0.0) {
        // torch.optim.SGD without momentum: p -= lr (g + wd p).
        Value d = g;
        if (weightDecay != 0.0)
          d = ua.add(d, ua.mul(p, weightDecay));
        assignUpdate(at, p, ua.sub(p, ua.mul(d, lrT)));
      } else if (kind == "sgd") {
        // torch.optim.SGD: d = g + wd p; buf = momentum buf + d (the first
        // step's buf is d: the zero state gives the same); d = buf, or
        // d + momentum buf with nesterov; p -= lr d.
        WeightOp buf = stateLike(top, p, "momentum_buffer");
        auto upd = SgdUpdateOp::create(
            at, loc, TypeRange{p.getType(), p.getType()}, p, g, buf, lrT,
            f32(momentum), f32(weightDecay),
            nesterov ? at.getUnitAttr() : UnitAttr());
        assignUpdate(at, p, upd.getNewParam());
        assignUpdate(at, buf, upd.getNewMomentumBuffer());
      } else {
        // torch.optim.Adam / AdamW (1.13's single-tensor path); Adam's
        // weight decay is an L2 term added to the gradient.
        WeightOp m = stateLike(top, p, "exp_avg");
        WeightOp v = stateLike(top, p, "exp_avg_sq");
        auto upd = AdamUpdateOp::create(
            at, loc, TypeRange{p.getType(), p.getType(), p.getType()}, p, g,
            m, v, stepSize, sqrtBc2, decay, f32(beta1), f32(beta2), f32(eps),
            f32(kind == "adam" ? weightDecay : 0.0));
        assignUpdate(at, p, upd.getNewParam());
        assignUpdate(at, m, upd.getNewExpAvg());
        assignUpdate(at, v, upd.getNewExpAvgSq());
      }
      for (Operation *op : updateOps.ops) {
        op->setAttr(kStageAttr, gradOp->getAttr(kStageAttr));
        op->setAttr(kPhaseAttr, at.getStringAttr("STEP"));
      }
    }

    // The step count (a skipped step does not count: GradScaler skips
    // optimizer.step()).
    if (step)
      assignUpdate(b, step, t);
    // The loss, and with clipping (or grad-norm) the gradients' total norm
    // before clipping (clip_grad_norm_'s return value), as output
    // `grad_norm`.
    SmallVector<Value> results = {ret.getOperand(0)};
    if (totalNorm)
      results.push_back(totalNorm);
    func::ReturnOp::create(b, ret.getLoc(), results);
    ret.erase();
    SmallVector<Type> resultTypes = {fn.getResultTypes().front()};
    if (totalNorm)
      resultTypes.push_back(totalNorm.getType());
    fn.setType(FunctionType::get(ctx, fn.getArgumentTypes(), resultTypes));
    fn->removeAttr(TesselDialect::kGradientsAttrName);
    if (auto out = fn->getAttrOfType<ArrayAttr>(
            TesselDialect::kOutputNamesAttrName)) {
      SmallVector<Attribute> names(out.getValue().take_front());
      if (totalNorm)
        names.push_back(StringAttr::get(ctx, "grad_norm"));
      fn->setAttr(TesselDialect::kOutputNamesAttrName,
                  ArrayAttr::get(ctx, names));
    }
    return success();
  }
};

} // namespace
} // namespace mlir::tessel
