//===- TrainedTensors.h - The model's trained tensors, whole ----*- C++ -*-===//
//
// What `--export-onnx` and `--save-weights` write: each tensor training.pb
// lists (a parameter, a running statistic), put together whole from the
// states of a checkpoint: the pieces of a parameter the importer split (a
// fused projection), the blocks of every rank (StateBlocks.h).
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_TOOLING_TRAINEDTENSORS_H
#define TESSEL_TOOLING_TRAINEDTENSORS_H

#include "tessel/tooling/Checkpoint.h"

#include "artifact.pb.h"

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace tessel::tooling {

/// training.pb's tensors by ONNX tensor name, each with its pieces.
using TrainedPieces =
    std::map<std::string, std::vector<const artifact::TrainedTensor *>>;
TrainedPieces trainedPieces(const artifact::TrainingInfo &info);

/// The type a trained tensor is written in: the model's (`model_dtype`,
/// for the f32 master of a bf16 or f16 parameter), else its state's.
runtime::DType trainedDType(const artifact::TrainedTensor &t,
                            runtime::DType state);

/// Tensor `name` whole, from its `pieces`' states in `saved`, in
/// trainedDType (a master rounded to nearest even); a state that is no
/// piece of it is an error naming both (`what` prefixes messages).
runtime::Status
assembleTrained(const std::string &what, const std::string &name,
                const std::vector<const artifact::TrainedTensor *> &pieces,
                const SavedStates &saved, runtime::Tensor &whole);

} // namespace tessel::tooling

#endif // TESSEL_TOOLING_TRAINEDTENSORS_H
