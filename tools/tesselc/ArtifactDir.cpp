//===- ArtifactDir.cpp - tesselc: writing an artifact directory -----------===//
#include "ArtifactDir.h"

#include "tessel/runtime/Artifact.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <cerrno>
#include <cstdio>
#include <fcntl.h>

using namespace llvm;

namespace tessel {

namespace {

Error failure(const Twine &message) {
  return createStringError(inconvertibleErrorCode(), message);
}

/// A new name beside `path`: "<path>.<what>-XXXXXX".
std::string besidePath(StringRef path, StringRef what) {
  SmallString<256> unique;
  sys::fs::createUniquePath(path + "." + what + "-%%%%%%", unique,
                            /*MakeAbsolute=*/false);
  return unique.str().str();
}

bool isEmptyDirectory(StringRef path) {
  std::error_code ec;
  sys::fs::directory_iterator it(path, ec);
  return !ec && it == sys::fs::directory_iterator();
}

} // namespace

Expected<std::unique_ptr<ArtifactDir>> ArtifactDir::prepare(StringRef path) {
  sys::fs::file_status st;
  if (!sys::fs::status(path, st)) {
    if (!sys::fs::is_directory(st))
      return failure("-o " + path +
                     ": exists and is not a directory; an artifact is a "
                     "directory (give a new name, e.g. -o model.tsl)");
    SmallString<256> manifest(path);
    sys::path::append(manifest, "manifest.pb");
    if (!sys::fs::exists(manifest) && !isEmptyDirectory(path))
      return failure("-o " + path +
                     ": is a directory that holds no Tessel artifact (no "
                     "manifest.pb); tesselc does not replace it");
  }
  std::string temp;
  for (int attempt = 0;; ++attempt) {
    temp = besidePath(path, "tmp");
    std::error_code ec =
        sys::fs::create_directory(temp, /*IgnoreExisting=*/false);
    if (!ec)
      break;
    if (ec != std::errc::file_exists || attempt == 8)
      return failure("-o " + path + ": cannot create the directory " + temp +
                     ": " + ec.message());
  }
  return std::unique_ptr<ArtifactDir>(new ArtifactDir(path.str(), temp));
}

ArtifactDir::~ArtifactDir() {
  if (!committed)
    (void)sys::fs::remove_directories(temp);
}

Error ArtifactDir::commit() {
  // The directory whole: every file beside the ranks' (training.pb,
  // source.onnx, grads/) recorded in the manifest with its CRC-32C.
  if (tessel::runtime::Status s = tessel::runtime::recordArtifactFiles(temp);
      !s)
    return failure("-o " + path + ": " + s.message());
  std::string old;
#ifdef RENAME_EXCHANGE
  // One atomic swap (Linux): no moment without an artifact at `path`.
  if (sys::fs::exists(path)) {
    if (renameat2(AT_FDCWD, temp.c_str(), AT_FDCWD, path.c_str(),
                  RENAME_EXCHANGE) == 0) {
      committed = true;
      if (std::error_code ec = sys::fs::remove_directories(temp))
        return failure("-o " + path + ": the previous artifact, moved to " +
                       temp + ", could not be removed: " + ec.message());
      return Error::success();
    }
    // Not supported by this file system: two renames.
  }
#endif
  if (sys::fs::exists(path)) {
    old = besidePath(path, "old");
    if (std::error_code ec = sys::fs::rename(path, old))
      return failure("-o " + path + ": cannot move the previous artifact "
                     "aside: " + ec.message());
  }
  if (std::error_code ec = sys::fs::rename(temp, path)) {
    if (!old.empty())
      (void)sys::fs::rename(old, path);
    return failure("-o " + path + ": cannot move the new artifact in place: " +
                   ec.message());
  }
  committed = true;
  if (!old.empty())
    if (std::error_code ec = sys::fs::remove_directories(old))
      return failure("-o " + path + ": the previous artifact, moved to " + old +
                     ", could not be removed: " + ec.message());
  return Error::success();
}

} // namespace tessel
