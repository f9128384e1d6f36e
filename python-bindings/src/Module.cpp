//===- Module.cpp - The _tessel extension module --------------------------===//
//
// The native half of the `tessel` package (tessel/__init__.py is the other):
// the compiler driver (Driver.cpp), the IR (IrModule.cpp), artifacts and
// their runs (RunArtifact.cpp), pipeline schedules (PipelineSchedule.cpp).
//
//===----------------------------------------------------------------------===//
#include "Common.h"

#include "TesselVersion.h"

#include <nanobind/stl/string.h>

#include "llvm/Config/llvm-config.h"

namespace tessel::python {

namespace {
[[noreturn]] void raiseObject(const char *cls, nb::object args) {
  nb::object type = nb::module_::import_("tessel.errors").attr(cls);
  nb::object exc = type(*args);
  PyErr_SetObject(type.ptr(), exc.ptr());
  throw nb::python_error();
}
} // namespace

void raise(const char *cls, const std::string &message) {
  raiseObject(cls, nb::make_tuple(message));
}

void raiseParseError(const std::string &message, int line, int column) {
  raiseObject("ParseError", nb::make_tuple(message, line, column));
}

} // namespace tessel::python

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
