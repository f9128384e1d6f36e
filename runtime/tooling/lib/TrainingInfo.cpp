//===- TrainingInfo.cpp - What tesselc --train says beyond the program ----===//
#include "tessel/tooling/TrainingInfo.h"

#include "tessel/runtime/Artifact.h"
#include "tessel/runtime/TrainingInfo.h"
#include "tessel/runtime/MappedFile.h"
#include "tessel/runtime/Numerics.h"

#include <sys/stat.h>

using namespace tessel::runtime;

namespace tessel::tooling {

Status openArtifactFile(const std::string &artifactDir, const std::string &name,
                        std::shared_ptr<MappedFile> &out, bool &present) {
  std::unique_ptr<Artifact> artifact;
  TSL_RETURN_IF_ERROR(Artifact::open(artifactDir, artifact));
  present = artifact->hasFile(name);
  struct stat st;
  if (!present && ::lstat((artifact->path() + "/" + name).c_str(), &st) != 0)
    return Status::ok();
  // Listed (checked), or there but not listed (refused, naming it).
  present = true;
  return artifact->openFile(name, out);
}

Status readTrainingInfo(const std::string &artifactDir,
                        artifact::TrainingInfo &out, bool &present) {
  std::unique_ptr<Artifact> artifact;
  TSL_RETURN_IF_ERROR(Artifact::open(artifactDir, artifact));
  return runtime::readTrainingInfo(*artifact, out, present);
}

Status checkLabels(const artifact::TrainingInfo &info, const Tensor &labels,
                   const std::string &what) {
  if (info.classes() <= 0 || labels.dtype() != DType::I64)
    return Status::ok();
  const int64_t *v = labels.data<int64_t>();
  const int64_t n = labels.numElements(), classes = info.classes();
  for (int64_t i = 0; i < n; ++i) {
    if ((v[i] >= 0 && v[i] < classes) || v[i] == -100)
      continue;
    return Status::error(what + ": " + info.labels_input() + "[" +
                         multiIndex(labels.shape(), i) +
                         "] = " + std::to_string(v[i]) +
                         " is not a class: cross_entropy's classes are [0, " +
                         std::to_string(classes) + ") (-100: ignored)");
  }
  return Status::ok();
}

Status checkGatherIndices(const Program &program, const std::string &input,
                          const Tensor &indices, const std::string &what) {
  const int id = program.findInput(input);
  if (id < 0 || (indices.dtype() != DType::I64 && indices.dtype() != DType::I32))
    return Status::ok();
  // The buffers that hold the input's values, moved but not computed on.
  // A slice counts only when it takes whole rows (a microbatch's): one that
  // cuts an inner dim (GatherND's index components) feeds each gather a
  // part of the input, which that gather alone can judge.
  std::vector<bool> holds(program.buffers.size(), false);
  holds[id] = true;
  auto wholeRows = [&](const Op &op) {
    const Shape &in = program.buffers[op.operands[0]].shape;
    const Shape &out = program.buffers[op.results[0]].shape;
    if (in.size() != out.size() || op.starts.size() != in.size())
      return false;
    for (size_t d = 1; d < in.size(); ++d)
      if (op.starts[d] != 0 || out[d] != in[d])
        return false;
    return true;
  };
  for (const Op &op : program.ops) {
    const bool moves = (op.kind == OpKind::Slice && !op.results.empty() &&
                        !op.operands.empty() && wholeRows(op)) ||
                       op.kind == OpKind::Reshape || op.kind == OpKind::Copy ||
                       op.kind == OpKind::Concat;
    if (moves && !op.operands.empty() && holds[op.operands[0]])
      for (int r : op.results)
        holds[r] = true;
  }
  const int64_t n = indices.numElements();
  auto value = [&](int64_t k) -> int64_t {
    return indices.dtype() == DType::I64 ? indices.data<int64_t>()[k]
                                         : indices.data<int32_t>()[k];
  };
  for (const Op &op : program.ops) {
    if (op.kind != OpKind::Gather || op.operands.size() < 2 ||
        !holds[op.operands[1]])
      continue;
    const BufferInfo &data = program.buffers[op.operands[0]];
    const int64_t rows = data.shape[op.axis];
    for (int64_t k = 0; k < n; ++k) {
      const int64_t v = value(k);
      if (v >= -rows && v < rows)
        continue;
      const std::string table =
          data.name.empty() ? "its table" : "'" + data.name + "'";
      return Status::error(
          what + ": " + input + "[" + multiIndex(indices.shape(), k) + "] = " +
          std::to_string(v) + " is out of range for the gather" +
          (op.name.empty() ? "" : " '" + op.name + "'") + " that reads it: " +
          "axis " + std::to_string(op.axis) + " of " + table + " has " +
          std::to_string(rows) + " entries, indices lie in [" +
          std::to_string(-rows) + ", " + std::to_string(rows) + ")");
    }
  }
  return Status::ok();
}

} // namespace tessel::tooling
