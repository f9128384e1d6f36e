//===- BatchNormTrain.cpp - BatchNorm in training mode, as ordinary ops ---===//
//
// Each tessel.batch_norm_train becomes the batch's per-channel mean and
// biased variance (reduce_mean over every dim but 1; the variance as the
// mean of squared deviations, PyTorch's two passes, the second one
// tessel.batch_norm_variance) and an inference
// tessel.batch_norm with them, marked `batch_stats`: its gradient rule then
// gives x the full training-mode gradient, through the statistics, in two
// fused passes (batch_norm_grad_sums, batch_norm_grad_input). With the
// batch sharded over dp the reductions, forward and backward, are partial
// and all-reduced by propagation: SyncBN.
//
// With update-running-stats, the running statistics (tessel.weight) are
// assigned PyTorch's update, running = (1 - m) running + m batch, m = 1 -
// ONNX's momentum, the variance unbiased (n / (n - 1)). Ops that update the
// same weight (the copies of one BatchNorm per microbatch) chain in program
// order, one update each, as PyTorch's accumulation loop does; constants in
// their place (a batch norm that tracks no statistics) update nothing. See
// docs/training.md.
//
//===----------------------------------------------------------------------===//

#include "tessel/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/MapVector.h"

namespace mlir::tessel {
#define GEN_PASS_DEF_BATCHNORMTRAINPASS
#include "tessel/Transforms/Passes.h.inc"

namespace {

struct BatchNormTrainPass : impl::BatchNormTrainPassBase<BatchNormTrainPass> {
  using Base::Base;

  void runOnOperation() override {
    for (auto fn : getOperation().getOps<func::FuncOp>())
      if (!fn.isExternal() && failed(lower(fn)))
        return signalPassFailure();
  }

  LogicalResult lower(func::FuncOp fn) {
    SmallVector<BatchNormTrainOp> ops;
    fn.walk([&](BatchNormTrainOp op) { ops.push_back(op); });
    // Each running statistic's weight -> its value after the updates so far.
    llvm::MapVector<Value, Value> latest;
    for (BatchNormTrainOp op : ops) {
      OpBuilder b(op);
      Location loc = op.getLoc();
      Value x = op.getInput();
      auto xt = cast<RankedTensorType>(x.getType());
      Type elem = xt.getElementType();
      int64_t rank = xt.getRank(), channels = xt.getDimSize(1), n = 1;
      SmallVector<int64_t> dims;
      for (int64_t d = 0; d < rank; ++d)
        if (d != 1) {
          dims.push_back(d);
          n *= xt.getDimSize(d);
        }
      auto scalar = [&](double v) -> Value {
        auto t = RankedTensorType::get({}, elem);
        return ConstantOp::create(b, loc,
                                  DenseElementsAttr::get(t, b.getFloatAttr(elem, v)));
      };
      auto perChannel = RankedTensorType::get({channels}, elem);
      SmallVector<int64_t> bshape(rank - 1, 1);
      bshape[0] = channels;
      DenseI64ArrayAttr dimsAttr = b.getDenseI64ArrayAttr(dims);
      Value mean = ReduceMeanOp::create(b, loc, perChannel, x, dimsAttr,
                                        /*keep_dims=*/false);
      // PyTorch's second pass, mean((x - mean)^2), in one op: no centred
      // or squared tensor is materialised.
      Value var = BatchNormVarianceOp::create(b, loc, perChannel, x, mean);
      // batch_stats: the statistics are x's own; the gradient rule
      // differentiates through them in two fused passes (Gradients.cpp).
      Value y = BatchNormOp::create(b, loc, xt, x, op.getScale(), op.getBias(),
                                    mean, var, op.getEpsilonAttr(),
                                    b.getUnitAttr());
      // torch's batch_norm with no running statistics (track_running_stats
      // False, or F.batch_norm(x, None, None, training=True): BiT's
      // weight standardisation) exports constants in their place (the
      // dynamo exporter), or the batch's own statistics with ONNX momentum
      // 1, which keeps the running value as it is (TorchScript's): there
      // is nothing to update.
      const bool untracked = op.getMomentum().convertToDouble() == 1.0 ||
                             (op.getRunningMean().getDefiningOp<ConstantOp>() &&
                              op.getRunningVar().getDefiningOp<ConstantOp>());
      if (updateRunningStats && !untracked) {
        double m = 1.0 - op.getMomentum().convertToDouble();
        auto update = [&](Value stat, Value batch, StringRef what) -> LogicalResult {
          if (!stat.getDefiningOp<WeightOp>())
            return op.emitOpError()
                   << "cannot update its " << what
                   << ": it is not a model weight (tessel.weight)";
          Value &cur = latest[stat];
          Value prev = cur ? cur : stat;
          cur = AddOp::create(b, loc, MulOp::create(b, loc, batch, scalar(m)),
                              MulOp::create(b, loc, prev, scalar(1.0 - m)));
          return success();
        };
        // PyTorch keeps the unbiased variance (n - 1; a batch of one
        // element keeps the biased one, n / 0 being undefined).
        Value unbiased = n > 1 ? Value(MulOp::create(
                                     b, loc, var, scalar(double(n) / double(n - 1))))
                               : var;
        if (failed(update(op.getRunningMean(), mean, "running_mean")) ||
            failed(update(op.getRunningVar(), unbiased, "running_var")))
          return failure();
      }
      op.getResult().replaceAllUsesWith(y);
      op.erase();
    }
    if (latest.empty())
      return success();
    OpBuilder b(fn.getBody().front().getTerminator());
    for (auto [weight, value] : latest)
      AssignOp::create(b, NameLoc::get(b.getStringAttr("running_stats"),
                                       weight.getLoc()),
                       weight, value);
    return success();
  }
};

} // namespace
} // namespace mlir::tessel
