//===- Grads.cpp - tessel-run --grads -------------------------------------===//
#include "tessel/tooling/Grads.h"

#include "tessel/runtime/MappedFile.h"
#include "tessel/runtime/Safetensors.h"

#include <cstdio>
#include <sys/stat.h>
#include <unistd.h>

using namespace tessel::runtime;

namespace tessel::tooling {

Status copyStates(Executor &train, Executor &grads) {
  const Program &tp = train.program(), &gp = grads.program();
  for (const auto &[name, id] : gp.states) {
    const BufferInfo &b = gp.buffers[id];
    int tid = tp.findState(name);
    if (tid < 0 || tp.buffers[tid].shape != b.shape ||
        tp.buffers[tid].globalOffset != b.globalOffset)
      return Status::error(
          "the gradient program's parameter '" + name + "' (" +
          typeToString(b.dtype, b.shape) + " at " +
          shapeToString(b.globalOffset) +
          ") is no state of the training program with that block");
    Tensor t;
    TSL_RETURN_IF_ERROR(train.getState(name, t));
    TSL_RETURN_IF_ERROR(grads.setState(name, t));
  }
  return Status::ok();
}

Status openSubArtifact(const std::string &artifactDir, const std::string &sub,
                       const std::string &missing,
                       std::unique_ptr<Artifact> &out) {
  const std::string dir = artifactDir + "/" + sub;
  struct stat st;
  if (::stat((dir + "/manifest.pb").c_str(), &st) != 0)
    return Status::error(artifactDir + " has no " + missing);
  // sub/'s files, checked against the manifest of the artifact that holds
  // them (its own manifest among them), then opened.
  std::unique_ptr<Artifact> whole;
  TSL_RETURN_IF_ERROR(Artifact::open(artifactDir, whole));
  if (!whole->hasFile(sub + "/manifest.pb"))
    return Status::error(dir + "/manifest.pb: not listed in " + artifactDir +
                         "/manifest.pb (an artifact written by an older "
                         "tesselc: recompile it)");
  TSL_RETURN_IF_ERROR(whole->checkFiles(sub + "/"));
  return Artifact::open(dir, out);
}

Status openGradientArtifact(const std::string &artifactDir,
                            std::unique_ptr<Artifact> &out) {
  return openSubArtifact(artifactDir, "grads",
                         "gradient program (compile it with tesselc --train "
                         "--grads-program)",
                         out);
}

Status writeGradients(const std::string &artifactDir, StepFeeds &feeds,
                      int64_t row, const std::string &backend,
                      const ExecutorOptions &options, int rank,
                      const std::string &outPath,
                      const std::function<Status(Executor &)> &fillStates) {
  const std::string what = "--grads " + outPath;
  std::unique_ptr<Artifact> artifact;
  if (Status s = openGradientArtifact(artifactDir, artifact); !s)
    return Status::error(what + ": " + s.message());
  std::shared_ptr<const Program> program;
  TSL_RETURN_IF_ERROR(artifact->loadProgram(rank, program));
  std::unique_ptr<Executor> exec;
  TSL_RETURN_IF_ERROR(createExecutor(backend, program, options, exec));
  // The parameters: the training's.
  if (Status s = fillStates(*exec); !s)
    return Status::error(what + ": " + s.message());
  for (const auto &[name, id] : program->inputs)
    if (!feeds.feeds(name))
      return Status::error(what + ": input '" + name +
                           "' comes from no --data or --data-lm file");
  TSL_RETURN_IF_ERROR(feeds.bind(*exec, row));
  if (Status s = exec->run(); !s)
    return Status::error(what + ": " + s.message());
  if (rank != 0)
    return Status::ok();
  // Rank 0: every NAME.grad output, whole.
  const std::string suffix = ".grad";
  std::vector<Tensor> values;
  std::vector<SafetensorsTensor> tensors;
  values.reserve(program->outputs.size());
  for (const auto &[name, id] : program->outputs) {
    if (name.size() <= suffix.size() ||
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0)
      continue;
    values.emplace_back();
    TSL_RETURN_IF_ERROR(exec->getOutput(name, values.back()));
    const Tensor &t = values.back();
    tensors.push_back({name.substr(0, name.size() - suffix.size()), t.dtype(),
                       t.shape(), t.data()});
  }
  if (tensors.empty())
    return Status::error(what + ": the gradient program has no NAME.grad "
                                "outputs");
  const std::string tmp = outPath + ".tmp-" + std::to_string(::getpid());
  if (Status s = writeBytesSynced(tmp, encodeSafetensors(tensors)); !s) {
    std::remove(tmp.c_str());
    return Status::error(what + ": " + s.message());
  }
  if (std::rename(tmp.c_str(), outPath.c_str()) != 0) {
    std::remove(tmp.c_str());
    return Status::error(what + ": cannot rename " + tmp);
  }
  std::printf("tessel-run: gradients of the first step (%zu tensors) -> %s\n",
              tensors.size(), outPath.c_str());
  return Status::ok();
}

} // namespace tessel::tooling
