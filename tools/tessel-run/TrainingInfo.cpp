//===- TrainingInfo.cpp - What tesselc --train says beyond the program ----===//
#include "TrainingInfo.h"

#include "tessel/runtime/MappedFile.h"

#include <sys/stat.h>

using namespace tessel::runtime;

namespace tessel::run {

Status readTrainingInfo(const std::string &artifactDir,
                        artifact::TrainingInfo &out, bool &present) {
  const std::string path = artifactDir + "/training.pb";
  struct stat st;
  present = ::stat(path.c_str(), &st) == 0;
  if (!present)
    return Status::ok();
  std::shared_ptr<MappedFile> f;
  TSL_RETURN_IF_ERROR(MappedFile::open(path, f));
  if (f->size() > (size_t(1) << 30) ||
      !out.ParseFromArray(f->data(), static_cast<int>(f->size())))
    return Status::error(path + ": not a TrainingInfo message (corrupt)");
  if (out.classes() < 0)
    return Status::error(path + ": negative class count");
  return Status::ok();
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
    // The multi-index of element i.
    const Shape &s = labels.shape();
    std::vector<int64_t> idx(s.size());
    int64_t rest = i;
    for (size_t d = s.size(); d-- > 0;) {
      idx[d] = s[d] ? rest % s[d] : 0;
      rest = s[d] ? rest / s[d] : 0;
    }
    std::string at;
    for (size_t d = 0; d < idx.size(); ++d)
      at += (d ? ", " : "") + std::to_string(idx[d]);
    return Status::error(what + ": " + info.labels_input() + "[" + at +
                         "] = " + std::to_string(v[i]) +
                         " is not a class: cross_entropy's classes are [0, " +
                         std::to_string(classes) + ") (-100: ignored)");
  }
  return Status::ok();
}

} // namespace tessel::run
