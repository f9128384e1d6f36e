//===- CompilePipeline.cpp - tesselc's pipeline as one registered pass ----===//
//
// The passes between import and export, in one place: tesselc builds them
// with buildCompilePipeline, tessel-opt reaches them (and the plan's
// annotations) as -tessel-compile-pipeline. Whether the sharding passes run
// depends on the module (a mesh or none), so the pass runs them as a dynamic
// pipeline.
//
//===----------------------------------------------------------------------===//

#include "tessel/Transforms/CompilePipeline.h"

#include "tessel/Plan/Plan.h"
#include "tessel/Transforms/Passes.h"

#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/StringSwitch.h"

namespace mlir::tessel {
#define GEN_PASS_DEF_COMPILEPIPELINEPASS
#include "tessel/Transforms/Passes.h.inc"

std::optional<CompileStage> parseCompileStage(StringRef name) {
  return llvm::StringSwitch<std::optional<CompileStage>>(name)
      .Case("import", CompileStage::Import)
      .Case("autodiff", CompileStage::Autodiff)
      .Case("propagate", CompileStage::Propagate)
      .Case("partition", CompileStage::Partition)
      .Default(std::nullopt);
}

namespace {

void addPhases(OpPassManager &pm, bool sharded, CompileStage stopAfter,
               const TrainingOptions *train, const InferenceOptions *infer,
               bool fuseAttention) {
  if (stopAfter == CompileStage::Import)
    return;
  pm.addPass(createFuseGeluPass());
  pm.addPass(createFuseLayerNormPass());
  pm.addPass(createFoldMergedTransposePass());
  if (fuseAttention)
    pm.addPass(createFuseAttentionPass());
  // Training-mode BatchNorm: its running statistics are updated only when
  // training, once per microbatch.
  BatchNormTrainPassOptions batchNorm;
  batchNorm.updateRunningStats = train != nullptr && !train->lossOnly;
  if (!train)
    pm.addPass(createBatchNormTrainPass(batchNorm));
  if (!train && infer) {
    pm.addPass(createStageSplitPass(infer->stageSplit));
    if (infer->microbatch.count != 1)
      pm.addPass(createMicrobatchPass(infer->microbatch));
  }
  if (train) {
    pm.addPass(createAddLossPass(train->loss));
    pm.addPass(createClassifyParametersPass(train->classify));
    pm.addPass(createMasterWeightsPass());
    if (train->pipelined)
      pm.addPass(createStageSplitPass(train->stageSplit));
    if (train->microbatch.count != 1)
      pm.addPass(createMicrobatchPass(train->microbatch));
    pm.addPass(createBatchNormTrainPass(batchNorm));
    if (!train->precision.empty()) {
      MixedPrecisionPassOptions mp;
      mp.precision = train->precision;
      pm.addPass(createMixedPrecisionPass(mp));
    }
    if (!train->lossOnly) {
      AutodiffPassOptions autodiff;
      if (train->withOptimizer)
        autodiff.lossScale = train->optimizer.lossScale;
      pm.addPass(createAutodiffPass(autodiff));
      if (train->recompute)
        pm.addPass(createRecomputePass());
    }
    if (stopAfter == CompileStage::Autodiff)
      return;
    if (train->withOptimizer && !train->lossOnly)
      pm.addPass(createOptimizerPass(train->optimizer));
  }
  if (!sharded || stopAfter == CompileStage::Autodiff)
    return;
  pm.addPass(createSplitBiasPass());
  const int64_t zeroStage =
      train && train->withOptimizer && !train->lossOnly ? train->zero.stage : 0;
  if (zeroStage)
    pm.addPass(createZeroPass(train->zero));
  pm.addPass(createPropagatePass());
  if (stopAfter == CompileStage::Propagate)
    return;
  pm.addPass(createPartitionPass());
  SimplifyCollectivesPassOptions simplify;
  // ZeRO stage 1 keeps the gradients' all_reduces (bucketed as DDP's).
  simplify.reduceScatter = zeroStage != 1;
  pm.addPass(createSimplifyCollectivesPass(simplify));
  if (zeroStage) {
    GatherAtUsePassOptions gather = train->gatherAtUse;
    if (zeroStage != 3)
      gather.prefetch = 0; // only stage 3 gathers parameters for their use
    pm.addPass(createGatherAtUsePass(gather));
  }
  if (train && !train->gradHandler.empty())
    pm.addPass(createGradHandlerPass({train->gradHandler}));
  if (train && train->pipelined) {
    pm.addPass(createPipelineLowerPass(train->pipeline));
    return;
  }
  if (!train && infer) {
    pm.addPass(createPipelineLowerPass(infer->pipeline));
    return;
  }
  if (zeroStage >= 2 && train->asyncReduceScatter && !train->gemini)
    pm.addPass(createAsyncReduceScatterPass());
  if (train && train->buckets.bucketMb != 0)
    pm.addPass(createBucketGradientsPass(train->buckets));
  // Gemini places the chunks on the step's final op order.
  if (train && train->gemini && train->withOptimizer) {
    pm.addPass(createGeminiChunksPass(train->geminiChunks));
    pm.addPass(createGeminiPlacementPass(train->geminiPlacement));
  }
}

} // namespace

void buildCompilePipeline(OpPassManager &pm, bool sharded,
                          CompileStage stopAfter,
                          const TrainingOptions *train,
                          const InferenceOptions *infer, FusionOptions fusion) {
  addPhases(pm, sharded, stopAfter, train, infer, fusion.attention);
  // On the final program, after every pass that creates GEMMs or moves
  // their operands (autodiff, partition, pipeline lowering).
  // The runtime computes bf16 and f16 tensors in f32: last, on the program
  // the artifact holds. Then the GEMMs whose operands are bf16 values
  // (--precision bf16's rounded ones, a bf16 model's widened ones) may run
  // on bf16 hardware.
  if (stopAfter == CompileStage::Partition)
    buildFinalPasses(pm, fusion);
}

void buildFinalPasses(OpPassManager &pm, FusionOptions fusion) {
  pm.addPass(createFoldTransposeIntoGemmPass());
  pm.addPass(createFloatNormalizationPass());
  pm.addPass(createMarkBf16OperandsPass());
  if (fusion.elementwise)
    pm.addPass(createFuseElementwisePass());
}

namespace {

struct CompilePipelinePass
    : impl::CompilePipelinePassBase<CompilePipelinePass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    std::optional<CompileStage> stop = parseCompileStage(stopAfter);
    if (!stop) {
      module.emitError() << "stop-after='" << stopAfter
                         << "' is none of import, autodiff, propagate, "
                            "partition";
      return signalPassFailure();
    }
    if ((!mesh.empty() || !plan.empty()) && failed(annotate(module)))
      return signalPassFailure();
    OpPassManager pm(ModuleOp::getOperationName());
    TrainingOptions t;
    t.loss.kind = loss;
    t.loss.output = lossOutput;
    t.optimizer.kind = optimizer;
    t.optimizer.lr = lr;
    t.optimizer.weightDecay = weightDecay;
    t.optimizer.momentum = momentum;
    t.recompute = recompute;
    t.buckets.bucketMb = bucketMb;
    t.zero.stage = zeroStage;
    t.gatherAtUse.prefetch = fsdpPrefetch;
    t.precision = precision;
    t.optimizer.lossScale = lossScale;
    t.gemini = gemini;
    t.geminiChunks.chunkBytes = chunkBytes;
    t.geminiPlacement.deviceMemoryLimit = deviceMemoryLimit;
    buildCompilePipeline(pm, !module.getOps<MeshOp>().empty(), *stop,
                         train ? &t : nullptr);
    if (failed(runPipeline(pm, module)))
      signalPassFailure();
  }

  // The plan's annotations, as tesselc --mesh/--plan applies them.
  LogicalResult annotate(ModuleOp module) {
    if (!module.getOps<MeshOp>().empty())
      return module.emitError() << "the module already has a mesh; mesh= and "
                                   "plan= apply to unannotated modules";
    Plan p;
    if (!plan.empty()) {
      auto loaded = loadPlan(plan, module, llvm::errs());
      if (!loaded)
        return module.emitError() << toString(loaded.takeError());
      p = std::move(*loaded);
    }
    std::vector<std::pair<std::string, int64_t>> axes = p.mesh;
    if (!mesh.empty()) {
      auto parsed = parseMeshSpec(mesh);
      if (!parsed)
        return module.emitError() << toString(parsed.takeError());
      axes = std::move(*parsed);
    }
    if (axes.empty())
      return module.emitError()
             << "no mesh: give mesh= (e.g. mesh=dp=2,tp=2) or a plan with "
                "'mesh'";
    std::vector<std::string> unmatched;
    if (llvm::Error err = applyPlan(module, axes, p, &unmatched))
      return module.emitError() << toString(std::move(err));
    for (const std::string &u : unmatched)
      module.emitWarning() << "plan rule " << u;
    return success();
  }
};

} // namespace
} // namespace mlir::tessel
