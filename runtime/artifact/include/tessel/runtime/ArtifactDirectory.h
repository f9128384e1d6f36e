//===- ArtifactDirectory.h - Writing an artifact directory whole -*- C++ -*-===//
//
// An artifact is a directory (manifest.pb, rank<R>.program.pb,
// rank<R>.weights.safetensors, training.pb, source.onnx, grads/). Its writer
// (tesselc) writes it into a fresh temporary directory beside the
// destination, made before any compilation (an unwritable destination fails
// first), and commit() seals it (every file in the manifest with its
// CRC-32C: recordArtifactFiles) and swaps it in: recompiling into an
// existing artifact replaces it at once, with no stale rank<R>.* file of an
// earlier, larger mesh, and a failed compilation leaves the previous
// artifact as it was. Plain C++ and POSIX: the artifact library owns the
// directory, writing (here) and reading (Artifact.h).
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_RUNTIME_ARTIFACTDIRECTORY_H
#define TESSEL_RUNTIME_ARTIFACTDIRECTORY_H

#include "tessel/runtime/Status.h"

#include <memory>
#include <string>

namespace tessel::runtime {

class ArtifactDirectory {
public:
  /// Checks that `path` may become (or be replaced by) an artifact: it does
  /// not exist, or it is an artifact (has manifest.pb), or an empty
  /// directory; a file or another directory is refused. Makes the
  /// temporary directory beside it ("<path>.tmp-XXXXXX"). Errors name
  /// `path` first ("PATH: exists and is not a directory; ...").
  static Status prepare(const std::string &path,
                        std::unique_ptr<ArtifactDirectory> &out);

  /// Removes the temporary directory unless commit() moved it.
  ~ArtifactDirectory();
  ArtifactDirectory(const ArtifactDirectory &) = delete;
  ArtifactDirectory &operator=(const ArtifactDirectory &) = delete;

  /// Where to write the artifact's files.
  const std::string &tempPath() const { return temp; }
  /// The artifact's own path (what messages name).
  const std::string &finalPath() const { return path; }

  /// Seals the temporary directory (recordArtifactFiles), then puts it in
  /// the destination's place, removing the artifact that was there.
  Status commit();

private:
  ArtifactDirectory(std::string path, std::string temp)
      : path(std::move(path)), temp(std::move(temp)) {}
  std::string path, temp;
  bool committed = false;
};

/// rm -rf `path` (nothing there: OK).
Status removeTree(const std::string &path);

} // namespace tessel::runtime

#endif // TESSEL_RUNTIME_ARTIFACTDIRECTORY_H
