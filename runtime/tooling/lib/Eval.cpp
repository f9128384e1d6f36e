//===- Eval.cpp - tessel-run --eval and --eval-every ----------------------===//
#include "tessel/tooling/Eval.h"
#include "tessel/tooling/Grads.h"


using namespace tessel::runtime;

namespace tessel::tooling {

Status openEvalArtifact(const std::string &artifactDir,
                        std::unique_ptr<Artifact> &out) {
  return openSubArtifact(artifactDir, "eval",
                         "evaluation program (compile it with tesselc "
                         "--train --eval-program)",
                         out);
}

Status evaluate(const std::string &artifactDir, const std::string &dataLm,
                const std::string &what, const std::string &backend,
                const ExecutorOptions &options, int rank,
                const artifact::TrainingInfo *training,
                const std::function<Status(Executor &)> &fillStates,
                EvalResult &out) {
  std::unique_ptr<Artifact> artifact;
  if (Status s = openEvalArtifact(artifactDir, artifact); !s)
    return Status::error(what + ": " + s.message());
  std::shared_ptr<const Program> program;
  TSL_RETURN_IF_ERROR(artifact->loadProgram(rank, program));
  std::unique_ptr<Executor> exec;
  TSL_RETURN_IF_ERROR(createExecutor(backend, program, options, exec));
  if (Status s = fillStates(*exec); !s)
    return Status::error(what + ": " + s.message());
  // The validation rows, checked as training data is (labels in range,
  // ids within the embedding) before the first batch runs.
  StepFeeds feeds;
  if (training)
    feeds.checkLabelsOf(training);
  TrainOptions o;
  o.dataLm = dataLm;
  if (Status s = feeds.load(o, *program); !s)
    return Status::error(what + ": " + s.message());
  for (const auto &[name, id] : program->inputs)
    if (!feeds.feeds(name))
      return Status::error(what + ": the evaluation program's input '" +
                           name + "' comes from no data");
  if (program->findOutput("loss") < 0)
    return Status::error(what + ": the evaluation program has no output "
                                "'loss'");
  const int64_t rows = feeds.rows();
  double sum = 0;
  for (int64_t r = 0; r < rows; ++r) {
    TSL_RETURN_IF_ERROR(feeds.bind(*exec, r));
    if (Status s = exec->run(); !s)
      return Status::error(what + ": batch " + std::to_string(r) + ": " +
                           s.message());
    Tensor t;
    TSL_RETURN_IF_ERROR(exec->getOutput("loss", t));
    sum += static_cast<double>(t.data<float>()[0]);
  }
  out.batches = rows;
  out.loss = rows ? sum / static_cast<double>(rows) : 0.0;
  return Status::ok();
}

} // namespace tessel::tooling
