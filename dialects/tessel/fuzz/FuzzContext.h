//===- FuzzContext.h - the MLIRContext of the compiler's fuzzers -*- C++ -*-===//
#ifndef TESSEL_DIALECTS_TESSEL_FUZZ_FUZZCONTEXT_H
#define TESSEL_DIALECTS_TESSEL_FUZZ_FUZZCONTEXT_H

#include "dialects/tessel/TesselOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/STLFunctionalExtras.h"

#include <memory>

namespace mlir::tessel {

/// A single-threaded context with tessel-opt's dialects loaded (those of
/// registerAllDialects, without linking every pass) and its diagnostics
/// dropped. Making one costs more than parsing a small input, so a context
/// serves 256 inputs before a fresh one replaces it (what one input uniqued
/// does not pile up). A finding that needs an earlier input reproduces with
/// the whole corpus (the replay does that). `beforeReset` runs before a
/// context is replaced: a target drops there what it keeps in the context
/// across inputs (the plan target's module).
inline MLIRContext *
fuzzContext(llvm::function_ref<void()> beforeReset = nullptr) {
  static std::unique_ptr<MLIRContext> context;
  static unsigned uses = 0;
  if (!context || ++uses % 256 == 0) {
    if (context && beforeReset)
      beforeReset();
    DialectRegistry registry;
    registry.insert<TesselDialect, func::FuncDialect, arith::ArithDialect>();
    context.reset();
    context = std::make_unique<MLIRContext>(registry,
                                            MLIRContext::Threading::DISABLED);
    context->loadAllAvailableDialects();
    context->getDiagEngine().registerHandler(
        [](Diagnostic &) { return success(); });
  }
  return context.get();
}

} // namespace mlir::tessel

/// libMLIR and libLLVM are not instrumented: their inlined BumpPtrAllocator
/// code never unpoisons what an instrumented caller's copy of it poisoned,
/// which ASan reports as use-after-poison (a false positive). Manual
/// poisoning is off; heap overflows and use-after-free are still found.
/// (Each fuzzer includes this header from its one source file.)
extern "C" const char *__asan_default_options() {
  return "allow_user_poisoning=0";
}

#endif // TESSEL_DIALECTS_TESSEL_FUZZ_FUZZCONTEXT_H
