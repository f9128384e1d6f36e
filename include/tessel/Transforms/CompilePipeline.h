//===- CompilePipeline.h - tesselc's pass pipeline --------------*- C++ -*-===//
//
// The passes between import and export, shared by tesselc and
// -tessel-compile-pipeline (tessel-opt). The training and pipeline-parallel
// phases extend this one pipeline.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_TRANSFORMS_COMPILEPIPELINE_H
#define TESSEL_TRANSFORMS_COMPILEPIPELINE_H

#include "tessel/Transforms/Passes.h"

#include "mlir/Pass/PassManager.h"

#include <optional>

namespace mlir::tessel {

/// The last phase a compilation runs.
enum class CompileStage {
  /// The import and the plan's annotations only.
  Import,
  /// Training: through -tessel-autodiff (the loss and its gradients, before
  /// the optimizer and before any sharding pass).
  Autodiff,
  /// Through -tessel-propagate.
  Propagate,
  /// Through -tessel-partition: the per-rank (SPMD) program.
  Partition,
};

/// "import" | "autodiff" | "propagate" | "partition".
std::optional<CompileStage> parseCompileStage(StringRef name);

/// What turns the forward program into a training step (docs/training.md):
/// the options of -tessel-add-loss, -tessel-microbatch and -tessel-optimizer.
struct TrainingOptions {
  AddLossPassOptions loss;
  /// Which weights train (-tessel-classify-parameters, after the loss).
  ClassifyParametersPassOptions classify;
  MicrobatchPassOptions microbatch;
  OptimizerPassOptions optimizer;
  /// false: no -tessel-optimizer; the program returns the loss and the
  /// gradients (the gradient program of tessel-run --grads).
  bool withOptimizer = true;
  /// The loss alone: no gradients, no update (tessel-run --eval's program;
  /// withOptimizer is then ignored).
  bool lossOnly = false;
  /// -tessel-mixed-precision before -tessel-autodiff ("": f32 throughout).
  std::string precision;
  /// -tessel-recompute after -tessel-autodiff (activation checkpointing).
  bool recompute = false;
  /// -tessel-bucket-gradients on sharded programs (bucket-mb 0: none).
  BucketGradientsPassOptions buckets;
  /// Pipeline parallelism (docs/pipeline.md): -tessel-stage-split after
  /// -tessel-add-loss and -tessel-pipeline-lower after partitioning (no
  /// gradient buckets then).
  bool pipelined = false;
  StageSplitPassOptions stageSplit;
  PipelineLowerPassOptions pipeline;
  /// -tessel-grad-handler on sharded programs: the gradient handler ("":
  /// none, the plain all_reduce).
  std::string gradHandler;
  /// ZeRO (tesselc --plugin zero1|zero2|fsdp): -tessel-zero's stage over
  /// its axis on sharded programs (0: none).
  ZeroPassOptions zero{/*stage=*/0};
  /// Gemini (tesselc --plugin gemini): -tessel-gemini-chunks and
  /// -tessel-gemini-placement at the end of a sharded step.
  bool gemini = false;
  GeminiChunksPassOptions geminiChunks;
  GeminiPlacementPassOptions geminiPlacement;
  /// -tessel-gather-at-use after partitioning (ZeRO): with stage 3, how many
  /// parameter gathers are issued ahead of their use (0: synchronous).
  GatherAtUsePassOptions gatherAtUse;
  /// -tessel-async-reduce-scatter after partitioning (ZeRO stage 2 or 3,
  /// not pipelined, not Gemini): the gradients' reduce_scatters overlap the
  /// backward.
  bool asyncReduceScatter = false;
};

/// An inference step on a mesh with a pp axis (docs/pipeline.md, "Pipelines
/// for inference"): the forward graph cut into stages, split into
/// microbatches whose outputs are concatenated, lowered forward-only.
struct InferenceOptions {
  StageSplitPassOptions stageSplit;
  MicrobatchPassOptions microbatch;
  PipelineLowerPassOptions pipeline;
};

/// Adds the passes that take an annotated module (`sharded`: it has a mesh)
/// through `stopAfter`: -tessel-fuse-gelu, -tessel-fuse-layer-norm,
/// -tessel-fold-merged-transpose, -tessel-fuse-attention; with `train`, -tessel-add-loss,
/// -tessel-microbatch (count > 1), -tessel-batch-norm-train (updating the
/// running statistics), -tessel-autodiff, -tessel-recompute (when asked) and
/// -tessel-optimizer (without, -tessel-batch-norm-train with no updates);
/// then for sharded modules -tessel-split-bias, -tessel-propagate,
/// -tessel-zero (training with a ZeRO stage), -tessel-partition,
/// -tessel-simplify-collectives, -tessel-gather-at-use (ZeRO) and,
/// training, -tessel-bucket-gradients, then -tessel-gemini-chunks and
/// -tessel-gemini-placement (Gemini); last, with --precision bf16 through
/// Partition, -tessel-mark-bf16-operands. With `infer` (no `train`):
/// -tessel-stage-split, -tessel-microbatch (concatenating the outputs)
/// after the fusions, and -tessel-pipeline-lower (forward-only) last.
/// Which fusions run (tesselc --no-fuse-attention, --no-fuse-elementwise:
/// the unfused ops, to compare).
struct FusionOptions {
  /// -tessel-fuse-attention after import.
  bool attention = true;
  /// -tessel-fuse-elementwise last, through Partition.
  bool elementwise = true;
};

void buildCompilePipeline(OpPassManager &pm, bool sharded,
                          CompileStage stopAfter,
                          const TrainingOptions *train = nullptr,
                          const InferenceOptions *infer = nullptr,
                          FusionOptions fusion = {});

/// The passes on the final program, after partitioning (buildCompilePipeline
/// ends with them): -tessel-float-normalization, -tessel-mark-bf16-operands
/// and -tessel-fuse-elementwise.
void buildFinalPasses(OpPassManager &pm, FusionOptions fusion = {});

} // namespace mlir::tessel

#endif // TESSEL_TRANSFORMS_COMPILEPIPELINE_H
