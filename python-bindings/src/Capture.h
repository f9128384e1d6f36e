//===- Capture.h - stdout and stderr of a driver call, as text --*- C++ -*-===//
//
// The tools' phases print their messages, warnings and reports on the
// process's stdout and stderr (llvm::outs/errs, stdio). A call from Python
// redirects both file descriptors to temporary files for its duration, so
// the exception carries the very text the command line prints.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_PYTHON_CAPTURE_H
#define TESSEL_PYTHON_CAPTURE_H

#include <cstdio>
#include <string>

namespace tessel::python {

class Capture {
public:
  Capture();
  ~Capture();
  /// Restores the descriptors (once) and returns what was written.
  void finish();
  const std::string &out() const { return outText; }
  const std::string &err() const { return errText; }

private:
  std::FILE *files[2] = {nullptr, nullptr};
  int saved[2] = {-1, -1};
  std::string outText, errText;
};

} // namespace tessel::python

#endif // TESSEL_PYTHON_CAPTURE_H
