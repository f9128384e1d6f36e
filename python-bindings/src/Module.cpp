//===- Module.cpp - The _tessel extension: compiler and runtime ----------===//
//
// The whole native half of the `tessel` package: the compiler driver
// (Driver.cpp), the IR (IrModule.cpp), pipeline schedules
// (PipelineSchedule.cpp), and artifacts and their runs (RunArtifact.cpp).
// It links MLIR and LLVM; _tessel_runtime (RuntimeModule.cpp) is the
// runtime alone without them, which tessel/__init__.py loads where this
// one cannot be (one of the two per process: both hold the artifact
// schema, which protobuf registers once).
//
//===----------------------------------------------------------------------===//
#include "Common.h"

#include "TesselVersion.h"

#include <nanobind/stl/string.h>

#include "llvm/Config/llvm-config.h"

NB_MODULE(_tessel, m) {
  m.doc() = "The native half of the tessel package (see tessel/__init__.py).";
  m.attr("__version__") = TESSEL_VERSION;
  m.attr("git_revision") = TESSEL_GIT_REVISION;
  m.attr("llvm_version") = LLVM_VERSION_STRING;
  tessel::python::bindDriver(m);
  tessel::python::bindIrModule(m);
  tessel::python::bindArtifact(m);
  tessel::python::bindSchedule(m);
}
