//===- TextNesting.cpp - bracket depth of textual IR ----------------------===//
#include "dialects/tessel/TextNesting.h"

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <vector>

std::string mlir::tessel::checkTextNesting(llvm::StringRef text,
                                           unsigned maxDepth) {
  // `depth`: open brackets plus, at each level, the '+' and '-' since its
  // last ',', ':' or '=' (MLIR's affine expression parser recurses once per
  // term of a sum and once per unary minus). `runs` holds each open level's
  // count, restored when its bracket closes.
  // Past the limit the scan goes on, to name the depth found; `where` is
  // the first place past it.
  unsigned depth = 0, run = 0, deepest = 0;
  std::vector<unsigned> runs;
  size_t line = 1, lineStart = 0;
  std::string where;
  auto deeper = [&](size_t i) {
    deepest = std::max(deepest, depth);
    if (depth > maxDepth && where.empty())
      where = " at line " + std::to_string(line) + ", column " +
              std::to_string(i - lineStart + 1);
  };
  for (size_t i = 0, n = text.size(); i < n; ++i) {
    const char c = text[i];
    switch (c) {
    case '\n':
      ++line;
      lineStart = i + 1;
      break;
    case '"': // a string literal, escapes skipped; it ends at its line's end
      for (++i; i < n && text[i] != '"' && text[i] != '\n'; ++i)
        if (text[i] == '\\' && i + 1 < n && text[i + 1] != '\n')
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
      runs.push_back(run);
      run = 0;
      ++depth;
      deeper(i);
      break;
    case '>':
      if ((i > 0 && text[i - 1] == '-') || (i + 1 < n && text[i + 1] == '='))
        break;
      [[fallthrough]];
    case ')':
    case ']':
    case '}':
      depth -= run;
      run = 0;
      if (!runs.empty()) {
        run = runs.back();
        runs.pop_back();
        --depth;
      }
      break;
    case ',':
    case ':':
    case '=':
      depth -= run;
      run = 0;
      break;
    case '+':
    case '-': {
      if (c == '-' && i + 1 < n && text[i + 1] == '>')
        break; // "->"
      // The sign of an exponent (1.0e-05) is no operator.
      if (i >= 2 && (text[i - 1] == 'e' || text[i - 1] == 'E') &&
          (std::isdigit(static_cast<unsigned char>(text[i - 2])) ||
           text[i - 2] == '.'))
        break;
      ++run;
      ++depth;
      deeper(i);
      break;
    }
    default:
      break;
    }
  }
  if (where.empty())
    return "";
  return "brackets or an expression nested " + std::to_string(deepest) +
         " deep" + where + " (the limit is " + std::to_string(maxDepth) + ")";
}
