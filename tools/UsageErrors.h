//===- UsageErrors.h - command-line errors in one line ----------*- C++ -*-===//
//
// tesselc and tessel-opt parse their command lines with LLVM's cl, whose
// errors take one or two lines, some without a word of --help. This parses
// the same way and reports a usage error as one line that ends
// "(see --help)", as tessel-run does:
//
//   tesselc: error: Unknown command line argument '--bogus'. Did you mean
//   '--betas'? (see --help)
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_TOOLS_USAGEERRORS_H
#define TESSEL_TOOLS_USAGEERRORS_H

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdio>
#include <string>
#include <unistd.h>

namespace tessel {

/// llvm::cl::ParseCommandLineOptions, with a usage error printed as one
/// line: `<tool>: error: <what LLVM says> (see --help)`. Returns false after
/// a usage error (exit 1), true otherwise.
inline bool parseCommandLine(int argc, char **argv, llvm::StringRef overview,
                             llvm::StringRef tool) {
  // LLVM writes most errors to the stream it is given, a bad option value
  // straight to stderr: stderr is caught for the parse too.
  llvm::errs().flush();
  std::FILE *caught = std::tmpfile();
  int stderrFd = caught ? ::dup(2) : -1;
  if (stderrFd >= 0)
    ::dup2(::fileno(caught), 2);
  std::string given;
  llvm::raw_string_ostream givenOs(given);
  bool ok = llvm::cl::ParseCommandLineOptions(argc, argv, overview, &givenOs);
  llvm::errs().flush();
  std::string direct;
  if (stderrFd >= 0) {
    ::dup2(stderrFd, 2);
    ::close(stderrFd);
    std::rewind(caught);
    char buf[4096];
    for (size_t n; (n = std::fread(buf, 1, sizeof buf, caught)) > 0;)
      direct.append(buf, n);
  }
  if (caught)
    std::fclose(caught);
  if (ok) {
    llvm::errs() << direct << given;
    return true;
  }

  // LLVM's lines start with the program's name and may end by pointing at
  // --help ("Try: 'tesselc --help'", "See: tesselc --help").
  std::string program = llvm::sys::path::filename(argv[0]).str();
  llvm::SmallVector<std::string> parts;
  llvm::SmallVector<llvm::StringRef> lines;
  std::string all = direct + given;
  llvm::StringRef(all).split(lines, '\n', -1, /*KeepEmpty=*/false);
  for (llvm::StringRef line : lines) {
    line = line.trim();
    if (line.consume_front(program))
      line = line.ltrim(": ");
    for (llvm::StringRef pointer : {"Try: ", "See: "})
      if (size_t at = line.find(pointer); at != llvm::StringRef::npos)
        line = line.take_front(at).rtrim(" :");
    if (!line.empty())
      parts.push_back(line.str());
  }
  if (parts.empty())
    parts.push_back("invalid command line");
  llvm::errs() << tool << ": error: " << llvm::join(parts, " ")
               << " (see --help)\n";
  return false;
}

} // namespace tessel

#endif // TESSEL_TOOLS_USAGEERRORS_H
