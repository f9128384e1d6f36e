//===- Writable.h - tesselc: can a file be written? -------------*- C++ -*-===//
//
// Every file tesselc writes is checked before any work (the artifact
// directory: ArtifactDir.h), by the artifact library's check, the one
// tessel-run uses (tessel/runtime/Writable.h).
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_TOOLS_TESSELC_WRITABLE_H
#define TESSEL_TOOLS_TESSELC_WRITABLE_H

#include "tessel/runtime/Writable.h"
#include "llvm/ADT/StringRef.h"

#include <string>

namespace tessel {

/// "" when `path` can be written; otherwise
/// "<flag> <path>: cannot be written: <reason>".
inline std::string unwritable(llvm::StringRef flag, llvm::StringRef path) {
  runtime::Status s = runtime::checkWritable(flag.str(), path.str());
  return s ? std::string() : s.message();
}

} // namespace tessel

#endif // TESSEL_TOOLS_TESSELC_WRITABLE_H
