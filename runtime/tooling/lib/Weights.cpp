//===- Weights.cpp - tessel-run --save-weights ----------------------------===//
#include "tessel/tooling/Weights.h"
#include "tessel/tooling/TrainedTensors.h"

#include "tessel/runtime/Safetensors.h"

#include <cstdio>
#include <cstring>
#include <map>
#include <unistd.h>

using namespace tessel::runtime;

namespace tessel::tooling {

namespace {

/// `t` (2-D) transposed.
Tensor transposed(const Tensor &t) {
  const int64_t rows = t.shape()[0], cols = t.shape()[1];
  const size_t width = dtypeSize(t.dtype());
  Tensor out(t.dtype(), Shape{cols, rows});
  const char *src = static_cast<const char *>(t.data());
  char *dst = static_cast<char *>(out.data());
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j)
      std::memcpy(dst + (j * rows + i) * width, src + (i * cols + j) * width,
                  width);
  return out;
}

/// The parameter's shape for a tensor of `shape` held as `layout`.
Shape parameterShape(const Shape &shape, const std::string &layout) {
  if (layout == "transposed" && shape.size() == 2)
    return Shape{shape[1], shape[0]};
  Shape out = shape;
  if (layout == "rows") // [1, 1, rows, width] -> [rows, width]
    while (out.size() > 2 && out.front() == 1)
      out.erase(out.begin());
  return out;
}

} // namespace

Status saveWeights(const artifact::TrainingInfo &info, const SavedStates &saved,
                   const std::string &outPath, std::vector<std::string> &notes,
                   size_t &written) {
  const std::string what = "--save-weights " + outPath;
  struct Entry {
    std::string tensor; // the ONNX tensor (training.pb's name)
    const std::vector<const artifact::TrainedTensor *> *pieces;
    Shape shape; // the parameter's
  };
  std::map<std::string, Entry> byName; // PyTorch name -> where it comes from
  const TrainedPieces pieces = trainedPieces(info);
  for (const auto &[tensor, list] : pieces) {
    const artifact::TrainedTensor &t = *list[0];
    const std::string &layout = t.layout();
    if (layout != "" && layout != "transposed" && layout != "rows")
      return Status::error(what + ": tensor '" + tensor + "' has layout '" +
                           layout + "', which this tessel-run does not know");
    Shape shape(t.shape().begin(), t.shape().end());
    if (layout == "transposed" && shape.size() != 2)
      return Status::error(what + ": tensor '" + tensor + "' " +
                           shapeToString(shape) +
                           " is said to be transposed, but is not 2-D");
    Entry e{tensor, &list, parameterShape(shape, layout)};
    std::vector<std::string> names{t.parameter().empty() ? tensor
                                                         : t.parameter()};
    names.insert(names.end(), t.aliases().begin(), t.aliases().end());
    for (const std::string &name : names) {
      auto [it, fresh] = byName.emplace(name, e);
      if (!fresh && it->second.tensor != tensor)
        return Status::error(what + ": parameter '" + name +
                             "' is held by two tensors, '" +
                             it->second.tensor + "' and '" + tensor + "'");
    }
    if (layout == "rows")
      notes.push_back("'" + names[0] + "' is the exporter's folded '" +
                      tensor + "' " + shapeToString(shape) +
                      ", the rows the model reads, saved as " +
                      shapeToString(e.shape) +
                      "; PyTorch's parameter may have more (export with "
                      "dynamo=False, or at the model's longest sequence)");
  }
  // Each tensor put together when the writer reaches it (one at a time:
  // the file is streamed), transformed to the parameter's layout.
  std::vector<SafetensorsSource> sources;
  for (const auto &[name, e] : byName) {
    const Entry *entry = &e;
    const artifact::TrainedTensor &t = *(*e.pieces)[0];
    auto state = saved.states.find(t.state());
    if (state == saved.states.end())
      return Status::error(what + ": state '" + t.state() + "' of tensor '" +
                           e.tensor + "' is not in the checkpoint");
    SafetensorsSource s;
    s.name = name;
    s.dtype = trainedDType(t, state->second.dtype);
    s.shape = e.shape;
    s.write = [&saved, entry, what, layout = t.layout()](const ByteSink &sink) {
      Tensor whole;
      TSL_RETURN_IF_ERROR(
          assembleTrained(what, entry->tensor, *entry->pieces, saved, whole));
      if (layout == "transposed")
        whole = transposed(whole);
      return sink(whole.data(), whole.byteSize());
    };
    sources.push_back(std::move(s));
  }
  const std::string tmp = outPath + ".tmp-" + std::to_string(::getpid());
  WrittenFile file;
  if (Status s = writeSafetensors(tmp, sources, {{"format", "pt"}},
                                  /*sync=*/true, file);
      !s) {
    std::remove(tmp.c_str());
    return Status::error(what + ": " + s.message());
  }
  if (std::rename(tmp.c_str(), outPath.c_str()) != 0) {
    std::remove(tmp.c_str());
    return Status::error(what + ": cannot rename " + tmp);
  }
  written = sources.size();
  return Status::ok();
}

} // namespace tessel::tooling
