//===- PlanFuzzer.cpp - libFuzzer target for sharding plans ---------------===//
//
// The input is a plan file (YAML or JSON) as `tesselc --plan` reads it:
// parsePlan, then, when it parses, applyPlan onto a small module (a weight
// and a graph input), and parseMeshSpec on the input's first line as
// `--mesh` would. An input that starts as a flow value (`[` or `{`) is also
// parsed as the value of a rule, where a plan nests what the reader skips
// (issue 31: a million brackets there overflowed the stack); the
// dictionary (test/Fuzz/dict/tessel-plan-fuzzer.dict) holds runs of
// brackets and block indicators. Any crash, signal or sanitizer report is a
// bug: every input must end in a plan or an error.
//
//===----------------------------------------------------------------------===//
#include "dialects/tessel/fuzz/FuzzContext.h"
#include "tessel/Plan/Plan.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Parser/Parser.h"

#include <cstdint>
#include <string>
#include <cstdlib>

namespace {
// What applyPlan needs to see: a weight, a graph input, a node.
constexpr const char *kModule = R"mlir(
func.func @main(%x: tensor<4x8xf32>) -> tensor<4x6xf32>
    attributes {tessel.input_names = ["x"]} {
  %w = tessel.weight "h.0.w" : tensor<8x6xf32>
  %y = tessel.matmul %x, %w : (tensor<4x8xf32>, tensor<8x6xf32>) -> tensor<4x6xf32> loc("/h.0/MatMul")
  return %y : tensor<4x6xf32>
}
)mlir";

/// kModule, parsed in the current fuzz context (which outlives it: it is
/// erased before fuzzContext replaces the context).
mlir::ModuleOp base;
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  // A NUL-terminated copy: tools read files through llvm::MemoryBuffer,
  // which guarantees the terminator MLIR's and LLVM's lexers rely on.
  const std::string text(reinterpret_cast<const char *>(data), size);
  auto mesh =
      mlir::tessel::parseMeshSpec(llvm::StringRef(text).split('\n').first);
  if (!mesh)
    llvm::consumeError(mesh.takeError());
  if (!text.empty() && (text[0] == '[' || text[0] == '{')) {
    auto nested = mlir::tessel::parsePlan(
        "rules:\n  - {weight: h.0.w, replicate: " + text + "}\n", "fuzz.yaml");
    if (!nested)
      llvm::consumeError(nested.takeError());
  }
  auto plan = mlir::tessel::parsePlan(text, "fuzz.yaml");
  if (!plan) {
    llvm::consumeError(plan.takeError());
    return 0;
  }
  // kModule is parsed once per context; each input gets a copy.
  mlir::MLIRContext *context = mlir::tessel::fuzzContext([] {
    base.erase();
    base = nullptr;
  });
  if (!base) {
    base = mlir::parseSourceString<mlir::ModuleOp>(kModule, context).release();
    if (!base)
      std::abort(); // kModule itself must parse
  }
  mlir::OwningOpRef<mlir::ModuleOp> module = base.clone();
  std::vector<std::string> unmatched;
  if (llvm::Error e =
          mlir::tessel::applyPlan(*module, plan->mesh, *plan, &unmatched))
    llvm::consumeError(std::move(e));
  return 0;
}
