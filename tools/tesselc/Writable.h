//===- Writable.h - tesselc: can a file be written? -------------*- C++ -*-===//
//
// Every file tesselc writes is checked before any work (the artifact
// directory: ArtifactDir.h).
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_TOOLS_TESSELC_WRITABLE_H
#define TESSEL_TOOLS_TESSELC_WRITABLE_H

#include "llvm/ADT/StringRef.h"

#include <string>

namespace tessel {

/// "" when `path` can be written: an existing file is opened without
/// truncating it, a new one created and removed again. Otherwise
/// "<flag> <path>: cannot be written: <reason>".
std::string unwritable(llvm::StringRef flag, llvm::StringRef path);

} // namespace tessel

#endif // TESSEL_TOOLS_TESSELC_WRITABLE_H
