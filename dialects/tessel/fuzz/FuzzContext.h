//===- FuzzContext.h - an MLIRContext per fuzz input ------------*- C++ -*-===//
#ifndef TESSEL_DIALECTS_TESSEL_FUZZ_FUZZCONTEXT_H
#define TESSEL_DIALECTS_TESSEL_FUZZ_FUZZCONTEXT_H

#include "dialects/tessel/TesselOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"

namespace mlir::tessel {

/// A fresh single-threaded context per input (nothing uniqued by one input
/// outlives it) with tessel-opt's dialects loaded (those of
/// registerAllDialects, without linking every pass), its diagnostics dropped.
class FuzzContext {
public:
  FuzzContext()
      : context(registry(), MLIRContext::Threading::DISABLED),
        quiet(&context, [](Diagnostic &) { return success(); }) {
    context.loadAllAvailableDialects();
  }
  MLIRContext *get() { return &context; }

private:
  static const DialectRegistry &registry() {
    static const DialectRegistry *r = [] {
      auto *r = new DialectRegistry;
      r->insert<TesselDialect, func::FuncDialect, arith::ArithDialect>();
      return r;
    }();
    return *r;
  }
  MLIRContext context;
  ScopedDiagnosticHandler quiet;
};

} // namespace mlir::tessel

#endif // TESSEL_DIALECTS_TESSEL_FUZZ_FUZZCONTEXT_H
