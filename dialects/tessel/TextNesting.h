//===- TextNesting.h - bracket depth of textual IR ---------------*- C++ -*-===//
//
// MLIR's parser recurses once per level of nested brackets (types, attributes,
// regions) and once per term of an affine sum or unary minus, with no limit
// of its own: 20 KB of '(' killed tessel-opt with a stack overflow (the IR
// fuzzer's find), and so do 200,000 terms "d0 + d0 + ...". The tools that
// parse textual IR (tessel-opt, tesselc on a .mlir file) measure the depth
// first and refuse deeper input with one message; the IR fuzz target does
// the same.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_DIALECT_TEXTNESTING_H
#define TESSEL_DIALECT_TEXTNESTING_H

#include "llvm/ADT/StringRef.h"

#include <string>

namespace mlir::tessel {

/// The deepest nesting accepted: real IR nests a few dozen levels; MLIR's
/// parser handles this many well within a default 8 MB stack.
constexpr unsigned kMaxTextNesting = 256;

/// Empty when `text` nests at most `maxDepth` deep, else the error
/// "brackets or an expression nested N deep at line L, column C (the limit
/// is 256)": N the deepest level found, L and C where the limit was first
/// passed. The depth counts open ( [ { < and, at each level, the '+' and '-'
/// since its last ',', ':' or '='; string literals and // comments are
/// skipped, "->", ">=" and exponent signs (1e-5) do not count.
std::string checkTextNesting(llvm::StringRef text,
                             unsigned maxDepth = kMaxTextNesting);

} // namespace mlir::tessel

#endif // TESSEL_DIALECT_TEXTNESTING_H
