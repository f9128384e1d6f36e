//===- TrainingInfo.h - What tesselc --train says beyond the program -*- C++ -*-===//
//
// `ART.tsl/training.pb` (artifact.proto's TrainingInfo, written by
// `tesselc --train`): the labels' range, checked before every step, and the
// tensors of the source ONNX model that training changes (OnnxExport.h).
// The indices an input gives a gather (an embedding's token ids) are
// checked likewise, from the program.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_TOOLING_TRAININGINFO_H
#define TESSEL_TOOLING_TRAININGINFO_H

#include "tessel/runtime/MappedFile.h"
#include "tessel/runtime/Runtime.h"

#include "artifact.pb.h"

#include <memory>
#include <string>

namespace tessel::tooling {

/// Maps the file `name` of the artifact `artifactDir` (training.pb,
/// source.onnx, grads/...), checked against the size and CRC-32C its
/// manifest records (Artifact::openFile): `present` false when the artifact
/// has no such file; a file there that the manifest does not list is an
/// error (an artifact of an older tesselc).
runtime::Status openArtifactFile(const std::string &artifactDir,
                                 const std::string &name,
                                 std::shared_ptr<runtime::MappedFile> &out,
                                 bool &present);

/// Reads `artifactDir`/training.pb into `out` (runtime::readTrainingInfo
/// of the artifact library, its manifest opened); `present` says whether the
/// artifact has one (an artifact compiled without --train has none).
runtime::Status readTrainingInfo(const std::string &artifactDir,
                                 artifact::TrainingInfo &out, bool &present);

/// Checks that every value of `labels` (input `info.labels_input()`) lies in
/// [0, classes) or is -100 (cross_entropy's ignore_index); else an error
/// naming `what`, the first offending index and its value.
runtime::Status checkLabels(const artifact::TrainingInfo &info,
                            const runtime::Tensor &labels,
                            const std::string &what);

/// Checks that every value of `indices`, the value of input `input` of
/// `program`, is an index of each gather that reads it (directly, or
/// through slices, reshapes, copies and concatenations: an embedding's
/// lookup), [-n, n) for an axis of n entries; else an error naming `what`,
/// the first offending index, its value and the gather (its ONNX node and
/// weight). Inputs that no gather reads pass.
runtime::Status checkGatherIndices(const runtime::Program &program,
                                   const std::string &input,
                                   const runtime::Tensor &indices,
                                   const std::string &what);

} // namespace tessel::tooling

#endif // TESSEL_TOOLING_TRAININGINFO_H
