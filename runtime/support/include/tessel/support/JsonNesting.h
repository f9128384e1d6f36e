//===- JsonNesting.h - how deep JSON text nests, before parsing -*- C++ -*-===//
//
// Recursive JSON parsers (llvm::json::parse, the runtime's safetensors and
// checkpoint-index readers) recurse once per array or object level: text
// nested deeper than the stack overflows it. Readers scan the text with
// jsonNesting first and refuse what nests deeper than their limit, naming
// the limit, the depth found and where (docs/security.md). One pass, no
// allocation; plain C++ shared by the compiler and the runtime.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_SUPPORT_JSONNESTING_H
#define TESSEL_SUPPORT_JSONNESTING_H

#include <cstddef>
#include <string>
#include <string_view>

namespace tessel {

/// The nesting of JSON text. `depth` is the deepest level of arrays and
/// objects anywhere in it (strings skipped; a stray closing bracket does not
/// go below 0); `at` the byte offset of the first bracket that went deeper
/// than the limit given to jsonNesting, else npos.
struct JsonNesting {
  size_t depth = 0;
  size_t at = std::string_view::npos;
  bool exceeds() const { return at != std::string_view::npos; }
  /// "nested N deep at byte B (the limit is L)", for messages.
  std::string describe(size_t limit) const {
    return "nested " + std::to_string(depth) + " deep at byte " +
           std::to_string(at) + " (the limit is " + std::to_string(limit) +
           ")";
  }
};

inline JsonNesting jsonNesting(std::string_view text, size_t limit) {
  JsonNesting n;
  size_t level = 0;
  bool inString = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (inString) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        inString = false;
    } else if (c == '"') {
      inString = true;
    } else if (c == '[' || c == '{') {
      if (++level > n.depth)
        n.depth = level;
      if (level > limit && !n.exceeds())
        n.at = i;
    } else if ((c == ']' || c == '}') && level > 0) {
      --level;
    }
  }
  return n;
}

} // namespace tessel

#endif // TESSEL_SUPPORT_JSONNESTING_H
