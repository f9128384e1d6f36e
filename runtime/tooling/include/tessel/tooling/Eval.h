//===- Eval.h - tessel-run --eval and --eval-every ------------*- C++ -*-===//
//
// The loss on held-out data, without an update. The artifact of `tesselc
// --train --eval-program` holds in ART/eval the step's forward and loss
// alone, on the same mesh and plan: its parameters are STATE buffers
// without data, filled from the training executor's current states (as the
// gradient program's are, Grads.h), and its output `loss` is the model's
// mean over its tokens, reduced over the ranks like the step's.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_TOOLING_EVAL_H
#define TESSEL_TOOLING_EVAL_H
#include "tessel/tooling/Train.h"
#include <functional>
#include <memory>
#include <string>
namespace tessel::tooling {

struct EvalResult {
  /// The mean of the batches' losses (each the mean over its tokens).
  double loss = 0;
  int64_t batches = 0;
};

/// Opens `artifactDir`/eval once every file of it is checked against
/// `artifactDir`'s manifest (an artifact without one: an error that says
/// how to compile it).
runtime::Status openEvalArtifact(const std::string &artifactDir,
                                 std::unique_ptr<runtime::Artifact> &out);

/// Runs `artifactDir`/eval (rank `rank`, every rank of the world at once)
/// on every row of `dataLm` (an i64 [batches, batch, seq+1] .npy, as
/// --data-lm), on the parameters `fillStates` copies in; `what` names the
/// flag for messages.
runtime::Status
evaluate(const std::string &artifactDir, const std::string &dataLm,
         const std::string &what, const std::string &backend,
         const runtime::ExecutorOptions &options, int rank,
         const artifact::TrainingInfo *training,
         const std::function<runtime::Status(runtime::Executor &)> &fillStates,
         EvalResult &out);

} // namespace tessel::tooling
#endif // TESSEL_TOOLING_EVAL_H
