//===- Errors.cpp - tessel.errors raised from C++ -------------------------===//
//
// Both extensions (_tessel, _tessel_runtime) raise the Python classes of
// tessel/errors.py with the messages the tools print.
//
//===----------------------------------------------------------------------===//
#include "Common.h"

#include <nanobind/stl/string.h>

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
