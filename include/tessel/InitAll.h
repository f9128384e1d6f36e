//===- InitAll.h - every dialect and pass of Tessel -------------*- C++ -*-===//
//
// The one place that tessel-opt, tesselc and the Python package register
// what Tessel provides.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_INITALL_H
#define TESSEL_INITALL_H

namespace mlir {
class DialectRegistry;
} // namespace mlir

namespace mlir::tessel {

/// Adds the tessel dialect and the upstream dialects Tessel programs use
/// (func, arith).
void registerAllDialects(DialectRegistry &registry);

/// Registers every tessel pass and pass pipeline with the global registry.
void registerAllPasses();

} // namespace mlir::tessel

#endif // TESSEL_INITALL_H
