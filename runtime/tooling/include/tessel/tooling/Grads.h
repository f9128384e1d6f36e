//===- Grads.h - tessel-run --grads -----------------------------*- C++ -*-===//
//
// `--grads FILE.safetensors`: the gradients of the first step the run
// executes, by parameter (initializer) name, whole even when sharded. The
// artifact of `tesselc --train --grads-program` holds in ART/grads the same
// step without the optimizer: its parameters are STATE buffers without data,
// filled from the training executor's current states, and its outputs
// `NAME.grad` leave whole (gathered), so rank 0 writes them.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_TOOLING_GRADS_H
#define TESSEL_TOOLING_GRADS_H

#include "tessel/tooling/Train.h"

#include <functional>
#include <memory>
#include <string>

namespace tessel::tooling {

/// Opens `artifactDir`/`sub`, a program compiled beside the step, once
/// every file of it is checked against `artifactDir`'s manifest; without
/// it, "ART has no `missing`".
runtime::Status openSubArtifact(const std::string &artifactDir,
                                const std::string &sub,
                                const std::string &missing,
                                std::unique_ptr<runtime::Artifact> &out);
/// Opens `artifactDir`/grads, the gradient program, once every file of it
/// is checked against the size and CRC-32C that `artifactDir`'s manifest
/// records (an artifact without one, or of an older tesselc: an error).
runtime::Status openGradientArtifact(const std::string &artifactDir,
                                     std::unique_ptr<runtime::Artifact> &out);

/// Runs `artifactDir`/grads (rank `rank`, every rank of the world) once on
/// the training's current parameters, which `fillStates` copies into the
/// gradient program's executor, and data row `row` of `feeds`; rank 0
/// writes the gradients to `outPath` (a temporary file, fsync'ed, renamed).
runtime::Status
writeGradients(const std::string &artifactDir, StepFeeds &feeds, int64_t row,
               const std::string &backend,
               const runtime::ExecutorOptions &options, int rank,
               const std::string &outPath,
               const std::function<runtime::Status(runtime::Executor &)>
                   &fillStates);

/// fillStates of one rank: `grads`' states are `train`'s states of the same
/// names and blocks (else an error naming the first that differs).
runtime::Status copyStates(runtime::Executor &train, runtime::Executor &grads);

} // namespace tessel::tooling

#endif // TESSEL_TOOLING_GRADS_H
