//===- Weights.h - tessel-run --save-weights --------------------*- C++ -*-===//
//
// The trained model's parameters as PyTorch names them, in one safetensors
// file that `model.load_state_dict(safetensors.torch.load_file(F),
// strict=True)` and transformers' from_pretrained read: every trained
// tensor whole (gathered from every rank's blocks and the pieces of a split
// parameter), under its parameter's name (training.pb's `parameter` for an
// exporter's folded copy, transposed back where the copy is; the tensor's
// own name otherwise), and again under each name of a tie (`aliases`).
// Parameters only: no optimizer state, no step (docs/training.md).
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_TOOLING_WEIGHTS_H
#define TESSEL_TOOLING_WEIGHTS_H

#include "tessel/tooling/Checkpoint.h"

#include "artifact.pb.h"

#include <string>
#include <vector>

namespace tessel::tooling {

/// Writes `outPath` (a temporary file, fsync'ed, renamed) from the trained
/// tensors `info` lists, their values from `saved`. `notes` receives a line
/// for each parameter the export holds only in part (a folded copy of the
/// rows the model reads: saved as those rows). Returns the number of names
/// written in `written`.
runtime::Status saveWeights(const artifact::TrainingInfo &info,
                            const SavedStates &saved,
                            const std::string &outPath,
                            std::vector<std::string> &notes, size_t &written);

} // namespace tessel::tooling

#endif // TESSEL_TOOLING_WEIGHTS_H
