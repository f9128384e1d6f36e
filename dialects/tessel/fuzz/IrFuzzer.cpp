//===- IrFuzzer.cpp - libFuzzer target for textual IR and its verifiers ---===//
//
// The input is textual MLIR, as `tessel-opt` reads it: parsed with the
// dialects tessel-opt registers (tessel, func, arith) and verified (every op
// verifier, the sharding verifier included), after the bracket depth check
// tessel-opt makes first (TextNesting.h). Diagnostics are dropped. Any
// crash, signal or sanitizer report is a bug: every input must end in a
// module or an error.
//
//===----------------------------------------------------------------------===//
#include "dialects/tessel/fuzz/FuzzContext.h"
#include "dialects/tessel/TextNesting.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"

#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  // A NUL-terminated copy: tools read files through llvm::MemoryBuffer,
  // which guarantees the terminator MLIR's and LLVM's lexers rely on.
  const std::string text(reinterpret_cast<const char *>(data), size);
  // The tools refuse deeper input before parsing (MLIR's parser recurses
  // once per level, without a limit).
  if (!mlir::tessel::checkTextNesting(text).empty())
    return 0;
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceString<mlir::ModuleOp>(text,
                                              mlir::tessel::fuzzContext());
  if (module)
    (void)mlir::verify(*module);
  return 0;
}
