//===- TextNesting.h - bracket depth of textual IR ---------------*- C++ -*-===//
//
// MLIR's parser recurses once per level of nested brackets (types, attributes,
// regions) and has no limit of its own: 20 KB of '(' killed tessel-opt with a
// stack overflow (the IR fuzzer's find). The tools that parse textual IR
// (tessel-opt, tesselc on a .mlir file) measure the depth first and refuse
// deeper input with one message; the IR fuzz target does the same.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_DIALECT_TEXTNESTING_H
#define TESSEL_DIALECT_TEXTNESTING_H

#include "llvm/ADT/StringRef.h"

#include <string>

namespace mlir::tessel {

/// The deepest nesting of ( [ { < accepted: real IR nests a few dozen
/// levels; MLIR's parser (ASan-instrumented in the fuzzer too) handles this
/// many within a default 8 MB stack.
constexpr unsigned kMaxTextNesting = 256;

/// Empty when `text` nests ( [ { < at most `maxDepth` deep (outside string
/// literals and // comments; "->" and ">=" close nothing), else the error:
/// "brackets nested more than 256 deep at line L, column C".
std::string checkTextNesting(llvm::StringRef text,
                             unsigned maxDepth = kMaxTextNesting);

} // namespace mlir::tessel

#endif // TESSEL_DIALECT_TEXTNESTING_H
