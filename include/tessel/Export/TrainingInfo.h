//===- TrainingInfo.h - The artifact's training.pb --------------*- C++ -*-===//
//
// What tessel-run needs about a training step beyond its program
// (artifact.proto's TrainingInfo, ART/training.pb): the range of the labels
// and, for each tensor of the source model that training changes, the STATE
// buffer that holds it or a piece of it (docs/training.md).
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_EXPORT_TRAININGINFO_H
#define TESSEL_EXPORT_TRAININGINFO_H

#include "tessel/Export/ExportArtifact.h"

#include <string>
#include <vector>

namespace mlir::tessel {

/// The model tensors the training step `module` changes: weights a
/// tessel.assign writes that start from the model's data (parameters,
/// running statistics; not optimizer state), by name.
std::vector<std::string> trainedTensors(ModuleOp module);

struct TrainingInfoOptions {
  std::string loss;          // "cross_entropy" | "mse"
  int64_t classes = 0;       // cross_entropy: the output's last dim
  std::string sourceModel;   // a file of the artifact dir, or empty
  // The optimizer and its schedule (TrainingInfo's optimizer .. total_steps;
  // empty optimizer: none).
  std::string optimizer, lrSchedule;
  double lr = 0;
  int64_t warmupSteps = 0, totalSteps = 0;
};

/// The loss of `module` before the training pipeline rewrites it: `kind`,
/// and for cross_entropy the class count, the last dim of output `output`
/// (or of the only output); 0 when no output fits (the pipeline then says
/// why).
TrainingInfoOptions summarizeLoss(ModuleOp module, StringRef kind,
                                  StringRef output);

/// Writes `artifactDir`/training.pb for the training step `module` (after
/// the pipeline); `weights` gives the trained tensors' whole shapes. Returns
/// an error message, empty on success.
std::string writeTrainingInfo(ModuleOp module, const WeightLookup &weights,
                              const TrainingInfoOptions &options,
                              StringRef artifactDir);

} // namespace mlir::tessel

#endif // TESSEL_EXPORT_TRAININGINFO_H
