//===- TrainingInfo.cpp - The artifact's training.pb ----------------------===//
#include "tessel/runtime/TrainingInfo.h"

#include "artifact.pb.h"
#include "tessel/runtime/Artifact.h"
#include "tessel/runtime/MappedFile.h"

#include <sys/stat.h>

namespace tessel::runtime {

Status writeTrainingInfo(const std::string &artifactDir,
                         const artifact::TrainingInfo &info) {
  const std::string path = artifactDir + "/" + kTrainingInfoFile;
  std::string bytes;
  if (!serializeDeterministic(info, bytes))
    return Status::error("cannot serialise " + path);
  return writeBytesSynced(path, bytes);
}

Status readTrainingInfo(const Artifact &artifact, artifact::TrainingInfo &out,
                        bool &present) {
  present = artifact.hasFile(kTrainingInfoFile);
  struct stat st;
  const std::string path = artifact.path() + "/" + kTrainingInfoFile;
  if (!present && ::lstat(path.c_str(), &st) != 0)
    return Status::ok();
  // Listed (checked), or there but not listed (refused, naming it).
  present = true;
  std::shared_ptr<MappedFile> f;
  TSL_RETURN_IF_ERROR(artifact.openFile(kTrainingInfoFile, f));
  if (f->size() > (size_t(1) << 30) ||
      !out.ParseFromArray(f->data(), static_cast<int>(f->size())))
    return Status::error(path + ": not a TrainingInfo message (corrupt)");
  if (out.classes() < 0)
    return Status::error(path + ": negative class count");
  return Status::ok();
}

} // namespace tessel::runtime
