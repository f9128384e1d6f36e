//===- ArtifactDir.h - tesselc: writing an artifact directory ---*- C++ -*-===//
//
// An artifact is a directory (manifest.pb, rank<R>.program.pb,
// rank<R>.weights.safetensors, ...). tesselc writes it into a fresh
// temporary directory beside the destination, made before any compilation
// (an unwritable destination fails first), and swaps it in when it is
// whole: recompiling into an existing artifact replaces it at once, with no
// stale rank<R>.* file of an earlier, larger mesh, and a failed compilation
// leaves the previous artifact as it was.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_TOOLS_TESSELC_ARTIFACTDIR_H
#define TESSEL_TOOLS_TESSELC_ARTIFACTDIR_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <memory>
#include <string>

namespace tessel {

class ArtifactDir {
public:
  /// Checks that `path` may become (or be replaced by) an artifact: it does
  /// not exist, or it is an artifact (has manifest.pb), or an empty
  /// directory; a file or another directory is refused. Makes the
  /// temporary directory beside it.
  static llvm::Expected<std::unique_ptr<ArtifactDir>>
  prepare(llvm::StringRef path);

  /// Removes the temporary directory unless commit() moved it.
  ~ArtifactDir();

  /// Where to write the artifact's files.
  llvm::StringRef tempPath() const { return temp; }
  /// The artifact's own path (what messages name).
  llvm::StringRef finalPath() const { return path; }

  /// Seals the temporary directory (every file in its manifest with its
  /// CRC-32C: runtime::recordArtifactFiles), then puts it in the
  /// destination's place, removing the artifact that was there.
  llvm::Error commit();

private:
  ArtifactDir(std::string path, std::string temp)
      : path(std::move(path)), temp(std::move(temp)) {}
  std::string path, temp;
  bool committed = false;
};

} // namespace tessel

#endif // TESSEL_TOOLS_TESSELC_ARTIFACTDIR_H
