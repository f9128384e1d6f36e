//===- TrainingInfo.h - tesselc --train: the artifact's training files -*- C++ -*-===//
//
// What tessel-run needs about a training step beyond its program: the range
// of the labels (checked before each step), and the tensors of the source
// ONNX model that training changes with the source model itself, so that
// `tessel-run --export-onnx` writes the trained model (docs/training.md;
// tessel/Export/TrainingInfo.h writes training.pb).
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_TOOLS_TESSELC_TRAININGINFO_H
#define TESSEL_TOOLS_TESSELC_TRAININGINFO_H

#include "mlir/IR/BuiltinOps.h"
#include "tessel/Export/TrainingInfo.h"
#include "llvm/ADT/StringRef.h"

#include <string>

namespace tessel {

/// Writes the training files of the artifact `artifactDir` for the compiled
/// step `module` (after the pipeline): source.onnx, the ONNX model at
/// `onnxPath` without the trained tensors (none when `onnxPath` is empty;
/// a warning when it cannot be written), and training.pb. Returns an error
/// message, empty on success.
std::string writeTrainingFiles(mlir::ModuleOp module,
                               const mlir::tessel::TrainingInfoOptions &loss,
                               const mlir::tessel::WeightLookup &weights,
                               llvm::StringRef onnxPath,
                               llvm::StringRef artifactDir);

} // namespace tessel

#endif // TESSEL_TOOLS_TESSELC_TRAININGINFO_H
