//===- Writable.h - tessel-run: can a file be written? ----------*- C++ -*-===//
//
// Every file tessel-run will write (--output, --trace, --losses,
// --export-onnx, --grads) is checked before any work, so a typo in a path
// costs nothing: not a run, not a training.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_TOOLS_TESSEL_RUN_WRITABLE_H
#define TESSEL_TOOLS_TESSEL_RUN_WRITABLE_H

#include "tessel/runtime/Runtime.h"

#include <string>

namespace tessel::run {

/// OK when `path` can be opened for writing: an existing file is left as it
/// is, a new one is created and removed again. Otherwise an error
/// "<what> <path>: cannot be written: <OS reason>".
runtime::Status checkWritable(const std::string &what, const std::string &path);

} // namespace tessel::run

#endif // TESSEL_TOOLS_TESSEL_RUN_WRITABLE_H
