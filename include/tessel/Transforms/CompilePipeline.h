//===- CompilePipeline.h - tesselc's pass pipeline --------------*- C++ -*-===//
//
// The passes between import and export, shared by tesselc and
// -tessel-compile-pipeline (tessel-opt). The training and pipeline-parallel
// phases extend this one pipeline.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_TRANSFORMS_COMPILEPIPELINE_H
#define TESSEL_TRANSFORMS_COMPILEPIPELINE_H

#include "mlir/Pass/PassManager.h"

#include <optional>

namespace mlir::tessel {

/// The last phase a compilation runs.
enum class CompileStage {
  /// The import and the plan's annotations only.
  Import,
  /// Through -tessel-propagate.
  Propagate,
  /// Through -tessel-partition: the per-rank (SPMD) program.
  Partition,
};

/// "import" | "propagate" | "partition".
std::optional<CompileStage> parseCompileStage(StringRef name);

/// Adds the passes that take an annotated module (`sharded`: it has a mesh)
/// through `stopAfter`: -tessel-fuse-gelu, then for sharded modules
/// -tessel-split-bias, -tessel-propagate, -tessel-partition and
/// -tessel-simplify-collectives.
void buildCompilePipeline(OpPassManager &pm, bool sharded,
                          CompileStage stopAfter);

} // namespace mlir::tessel

#endif // TESSEL_TRANSFORMS_COMPILEPIPELINE_H
