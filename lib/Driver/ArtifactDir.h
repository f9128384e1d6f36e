//===- ArtifactDir.h - tesselc: writing an artifact directory ---*- C++ -*-===//
//
// The artifact library's ArtifactDirectory (tessel/runtime/ArtifactDirectory.h:
// a temporary directory beside the destination, sealed and swapped in when
// whole), with tesselc's errors: llvm::Error, "-o PATH: ..." first.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_TOOLS_TESSELC_ARTIFACTDIR_H
#define TESSEL_TOOLS_TESSELC_ARTIFACTDIR_H

#include "tessel/runtime/ArtifactDirectory.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <memory>
#include <string>

namespace tessel {

class ArtifactDir {
public:
  /// runtime::ArtifactDirectory::prepare, its error an llvm::Error naming
  /// "-o PATH".
  static llvm::Expected<std::unique_ptr<ArtifactDir>>
  prepare(llvm::StringRef path) {
    std::unique_ptr<runtime::ArtifactDirectory> dir;
    if (runtime::Status s = runtime::ArtifactDirectory::prepare(path.str(), dir);
        !s)
      return failure(s);
    return std::unique_ptr<ArtifactDir>(new ArtifactDir(std::move(dir)));
  }

  /// Where to write the artifact's files.
  llvm::StringRef tempPath() const { return dir->tempPath(); }
  /// The artifact's own path (what messages name).
  llvm::StringRef finalPath() const { return dir->finalPath(); }

  /// Seals the directory and puts it in the destination's place.
  llvm::Error commit() {
    if (runtime::Status s = dir->commit(); !s)
      return failure(s);
    return llvm::Error::success();
  }

private:
  explicit ArtifactDir(std::unique_ptr<runtime::ArtifactDirectory> dir)
      : dir(std::move(dir)) {}
  static llvm::Error failure(const runtime::Status &s) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "-o " + s.message());
  }
  std::unique_ptr<runtime::ArtifactDirectory> dir;
};

} // namespace tessel

#endif // TESSEL_TOOLS_TESSELC_ARTIFACTDIR_H
