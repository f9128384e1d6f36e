//===- Writable.h - Can a file be written? ----------------------*- C++ -*-===//
//
// Every file a tool will write (tessel-run's --output, --trace, --losses,
// --export-onnx, --grads; tesselc's -o and --timeline) is checked before any
// work, so a typo in a path costs nothing: not a compilation, not a run,
// not a training. One check for both tools: tesselc links the artifact
// library too.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_RUNTIME_WRITABLE_H
#define TESSEL_RUNTIME_WRITABLE_H

#include "tessel/runtime/Status.h"

#include <string>

namespace tessel::runtime {

/// OK when `path` can be opened for writing: an existing file is left as it
/// is, a new one is created and removed again. Otherwise an error
/// "<what> <path>: cannot be written: <OS reason>".
Status checkWritable(const std::string &what, const std::string &path);

} // namespace tessel::runtime

#endif // TESSEL_RUNTIME_WRITABLE_H
