//===- FuzzTempDir.h - a folder of one fuzzer process's own -----*- C++ -*-===//
#ifndef TESSEL_RUNTIME_FUZZ_FUZZTEMPDIR_H
#define TESSEL_RUNTIME_FUZZ_FUZZTEMPDIR_H

#include <cstdlib>
#include <string>
#include <unistd.h>
#include <vector>

/// A fresh folder in the system temp folder (TMPDIR respected), made once
/// per process; empty when it cannot be made.
inline const std::string &fuzzTempDir() {
  static const std::string dir = [] {
    const char *tmp = std::getenv("TMPDIR");
    std::string tmpl =
        std::string(tmp && *tmp ? tmp : "/tmp") + "/tessel-fuzz-XXXXXX";
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back('\0');
    return std::string(mkdtemp(buf.data()) ? buf.data() : "");
  }();
  return dir;
}

#endif // TESSEL_RUNTIME_FUZZ_FUZZTEMPDIR_H
