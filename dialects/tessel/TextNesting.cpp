//===- TextNesting.cpp - bracket depth of textual IR ----------------------===//
#include "dialects/tessel/TextNesting.h"

#include <cstddef>

std::string mlir::tessel::checkTextNesting(llvm::StringRef text,
                                           unsigned maxDepth) {
  unsigned depth = 0;
  size_t line = 1, lineStart = 0;
  for (size_t i = 0, n = text.size(); i < n; ++i) {
    const char c = text[i];
    switch (c) {
    case '\n':
      ++line;
      lineStart = i + 1;
      break;
    case '"': // a string literal, escapes skipped; it ends at its line's end
      for (++i; i < n && text[i] != '"' && text[i] != '\n'; ++i)
        if (text[i] == '\\')
          ++i;
      if (i < n && text[i] == '\n')
        --i; // the newline is counted above
      break;
    case '/':
      if (i + 1 < n && text[i + 1] == '/')
        while (i + 1 < n && text[i + 1] != '\n')
          ++i;
      break;
    case '(':
    case '[':
    case '{':
    case '<':
      if (++depth > maxDepth)
        return "brackets nested more than " + std::to_string(maxDepth) +
               " deep at line " + std::to_string(line) + ", column " +
               std::to_string(i - lineStart + 1);
      break;
    case '>':
      if ((i > 0 && text[i - 1] == '-') || (i + 1 < n && text[i + 1] == '='))
        break;
      [[fallthrough]];
    case ')':
    case ']':
    case '}':
      if (depth > 0)
        --depth;
      break;
    default:
      break;
    }
  }
  return "";
}
