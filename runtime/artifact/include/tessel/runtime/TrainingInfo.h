//===- TrainingInfo.h - The artifact's training.pb --------------*- C++ -*-===//
//
// `ART.tsl/training.pb` (artifact.proto's TrainingInfo): what a training
// step needs beyond its program (the labels' range, the tensors of the
// source model that training changes). One writer and one reader, in the
// artifact library both sides link: the compiler writes it (`tesselc
// --train`), the tooling library reads it (checked against the manifest's
// CRC-32C like every file of the directory).
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_RUNTIME_TRAININGINFO_H
#define TESSEL_RUNTIME_TRAININGINFO_H

#include "tessel/runtime/Artifact.h"
#include "tessel/runtime/Status.h"

#include <string>

namespace tessel::artifact {
class TrainingInfo;
} // namespace tessel::artifact

namespace tessel::runtime {

/// The file's name in the artifact directory.
inline constexpr char kTrainingInfoFile[] = "training.pb";

/// Writes `info` to `artifactDir`/training.pb (before the directory is
/// sealed: recordArtifactFiles records its CRC-32C).
Status writeTrainingInfo(const std::string &artifactDir,
                         const artifact::TrainingInfo &info);

/// Reads `artifact`'s training.pb into `out`, checked against the size and
/// CRC-32C its manifest records; `present` is false when the artifact has
/// none (compiled without --train). A training.pb in the directory that the
/// manifest does not list is an error (an artifact of an older tesselc).
Status readTrainingInfo(const Artifact &artifact, artifact::TrainingInfo &out,
                        bool &present);

} // namespace tessel::runtime

#endif // TESSEL_RUNTIME_TRAININGINFO_H
