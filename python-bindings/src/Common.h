//===- Common.h - The extensions' shared helpers ---------------*- C++ -*-===//
//
// Errors are the Python classes of tessel/errors.py, raised with the
// messages the tools print.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_PYTHON_COMMON_H
#define TESSEL_PYTHON_COMMON_H

#include <nanobind/nanobind.h>

#include <string>

namespace tessel::python {

namespace nb = nanobind;

/// Raises tessel.errors.<cls>(message, *extra).
[[noreturn]] void raise(const char *cls, const std::string &message);
/// Raises tessel.errors.ParseError(message, line, column).
[[noreturn]] void raiseParseError(const std::string &message, int line,
                                  int column);

void bindDriver(nb::module_ &m);
void bindIrModule(nb::module_ &m);
void bindArtifact(nb::module_ &m);
void bindSchedule(nb::module_ &m);

} // namespace tessel::python

#endif // TESSEL_PYTHON_COMMON_H
