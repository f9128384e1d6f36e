//===- RuntimeModule.cpp - The _tessel_runtime extension ------------------===//
//
// The runtime alone: artifacts and their runs, training steps,
// evaluation, checkpoints (RunArtifact.cpp), over the tooling library
// (runtime/tooling): no MLIR, no LLVM. `import tessel` loads it where the
// whole extension (_tessel) cannot be loaded, so an install without the
// compiler's libraries runs artifacts from Python.
//
//===----------------------------------------------------------------------===//
#include "Common.h"

#include "TesselVersion.h"

#include <nanobind/stl/string.h>

NB_MODULE(_tessel_runtime, m) {
  m.doc() = "The runtime half of the tessel package (see tessel/__init__.py).";
  m.attr("__version__") = TESSEL_VERSION;
  m.attr("git_revision") = TESSEL_GIT_REVISION;
  tessel::python::bindArtifact(m);
}
