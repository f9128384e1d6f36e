//===- TrainingInfo.h - tesselc --train: the artifact's training.pb -*- C++ -*-===//
//
// What tessel-run needs about a training step beyond its program: the range
// of the labels (checked before each step), and the tensors of the source
// ONNX model that training changes with the source model itself, so that
// `tessel-run --export-onnx` writes the trained model (docs/training.md).
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_TOOLS_TESSELC_TRAININGINFO_H
#define TESSEL_TOOLS_TESSELC_TRAININGINFO_H

#include "mlir/IR/BuiltinOps.h"
#include "tessel/Import/WeightTable.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <string>

namespace tessel {

/// The loss as the model's output gives it, read before the training
/// pipeline rewrites the function.
struct LossSummary {
  std::string kind;
  int64_t classes = 0; // cross_entropy: the output's last dim
};

/// `module`'s loss output (`output`, or its only one); an empty summary when
/// it has none that fits (the pipeline then reports why).
LossSummary summarizeLoss(mlir::ModuleOp module, llvm::StringRef kind,
                          llvm::StringRef output);

/// Writes `artifactDir`/training.pb for the compiled step `module` (after
/// the pipeline; `weights`: the model's, for the trained tensors' shapes)
/// and, when `onnxPath` is an ONNX model, its source model without the
/// trained tensors (`artifactDir`/source.onnx). Returns an
/// error message, empty on success.
std::string writeTrainingInfo(mlir::ModuleOp module, const LossSummary &loss,
                              const mlir::tessel::WeightTable &weights,
                              llvm::StringRef onnxPath,
                              llvm::StringRef artifactDir);

} // namespace tessel

#endif // TESSEL_TOOLS_TESSELC_TRAININGINFO_H
