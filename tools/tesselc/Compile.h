//===- Compile.h - tesselc: model -> IR -> artifact -------------*- C++ -*-===//

#ifndef TESSEL_TOOLS_TESSELC_COMPILE_H
#define TESSEL_TOOLS_TESSELC_COMPILE_H

#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/CommandLine.h"

#include <string>

namespace tessel {

/// Where compilation stops.
enum class StopAfter {
  /// After the import (and the plan's annotations, with --mesh/--plan).
  Import,
  /// After -tessel-autodiff: the loss and its gradients (implies --train).
  Autodiff,
  /// After -tessel-propagate.
  Propagate,
  /// After -tessel-partition: the per-rank (SPMD) program.
  Partition,
  /// The artifact.
  Artifact,
};

/// The options of the sharding phases, for --help grouping.
llvm::cl::OptionCategory &getShardingCategory();
/// The options of --train, for --help grouping.
llvm::cl::OptionCategory &getTrainingCategory();

/// --grad-handler (Plugins.cpp): "" when not given.
std::string gradHandlerName();

/// Prints "tesselc: error: <message>"; returns 1, tesselc's exit code then.
int fail(const llvm::Twine &message);

/// Compiles `inputPath` (an ONNX model, or tessel IR in a .mlir file whose
/// weights come from --weights or the model it was imported from) and writes
/// IR ("" or "-": stdout) or the artifact directory ("": the input's name
/// with .tsl; replaced whole when it exists, see ArtifactDir.h). Returns the
/// exit code.
int compile(llvm::StringRef inputPath, llvm::StringRef outputPath,
            StopAfter stop);

} // namespace tessel

#endif // TESSEL_TOOLS_TESSELC_COMPILE_H
