//===- Driver.h - The compile driver: options in, module and reports out -*- C++ -*-===//
//
// What tesselc does, as a library (the way mlir-opt's is MlirOptMain):
//
//   load (ONNX import or .mlir parse, --entry) -> plan (--mesh, --plan,
//   --plugin, training options) -> the pass pipeline to --emit's phase ->
//   emit (IR text) or export (the artifact directory)
//
// compile() returns the module, the artifact's path, stdout's text and the
// --report reports as data. Every diagnostic goes to a handler the call
// installs on the caller's context and goes to the caller's MessageHandler
// or into the DriverError; nothing is
// written to the process's stdout or stderr. Two threads may compile at once,
// each with its own MLIRContext. The one process-wide state a compile
// touches is the extension registry (--load-plugin, built-in gradient
// handlers and schedules), set up under a lock.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_DRIVER_DRIVER_H
#define TESSEL_DRIVER_DRIVER_H

#include "tessel/Driver/CompileOptions.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/Support/Error.h"

#include <memory>
#include <string>
#include <vector>

namespace mlir {
class MLIRContext;
} // namespace mlir

namespace tessel::driver {

/// One line (or, for Text, any text) tesselc prints on stderr.
struct Message {
  enum Kind {
    /// "tesselc: warning: <text>"
    Warning,
    /// "tesselc: remark: <text>"
    Remark,
    /// <text> as it is (a plan's choices, a parser's diagnostics).
    Text,
  };
  Kind kind;
  std::string text;
  /// The line as tesselc prints it (without colors).
  std::string str() const;
};

/// The reports --report asks for, each "" when not made.
struct Reports {
  std::string parameters, collectives, memory, pipeline, zero, gemini;
  /// --predict's (tessel/Predict/Predict.h).
  std::string prediction;
  /// --plan=auto's choice (with --explain, the best candidates).
  std::string plan;
  /// All of them in tesselc's order (what it prints on stdout).
  std::string str() const;
};

struct CompileResult {
  /// The module after the last phase run (null for --emit=schedule).
  mlir::OwningOpRef<mlir::ModuleOp> module;
  /// --predict-expand: `module` holds the first three of this many
  /// microbatches (0: all of them); expandPipeline gives the step.
  int64_t expandToMicrobatches = 0;
  /// The artifact directory written (Emit::Artifact).
  std::string artifactPath;
  /// What goes to stdout after the reports: the IR (and --print-weights'
  /// table) with -o "" or "-", the schedule's report with -o "" or "-", the
  /// list of schedules.
  std::string text;
  Reports reports;
  /// The inputs whose batch the built-in plans left whole on every dp rank
  /// (fewer rows than dp shards; tesselc warns): --plan=auto does not
  /// offer such a dp.
  std::vector<std::string> wholeBatches;
};

/// The error of a compile: what tesselc prints for it, all of it.
class DriverError : public llvm::ErrorInfo<DriverError> {
public:
  static char ID;
  /// `diagnostics`: `message` is MLIR's diagnostics, printed as it is;
  /// otherwise it is printed "tesselc: error: <message>".
  DriverError(std::string message, bool diagnostics = false)
      : message(std::move(message)), diagnostics(diagnostics) {}
  void log(llvm::raw_ostream &os) const override;
  std::error_code convertToErrorCode() const override {
    return llvm::inconvertibleErrorCode();
  }
  std::string message;
  bool diagnostics;
};

/// A context with the dialects a compile uses.
std::unique_ptr<mlir::MLIRContext> createContext();

/// Where a compile's warnings and remarks go, as they come (also when the
/// compile fails): tesselc prints them, Python collects them.
using MessageHandler = llvm::function_ref<void(const Message &)>;

/// Compiles as `tesselc` with `options` does, in `context` (which must
/// outlive the result's module). `imported`, when given, is options.input
/// as an earlier compile to Emit::Mlir (no plan, no training) loaded it
/// into `context`: it is cloned instead of imported again (--plan=auto's
/// candidates, one import per worker), and the compile holds no weight
/// table, so it writes no artifact.
llvm::Expected<CompileResult> compile(mlir::MLIRContext &context,
                                      const CompileOptions &options,
                                      MessageHandler onMessage,
                                      mlir::ModuleOp imported = nullptr);

/// Registers the built-in extensions (gradient handlers, schedules), loads
/// options.loadPlugins in order and checks options.gradHandler against
/// them: before compile(), once per process for each plugin. The
/// registries are the process's; this takes a lock, but a compile running
/// while another thread loads a plugin may see it half registered.
llvm::Error loadExtensions(const CompileOptions &options);

/// tesselc --list-plugins.
std::string listPlugins();

/// tesselc MODEL --list-nodes: what a plan can match in an ONNX model.
llvm::Expected<std::string> listNodes(llvm::StringRef model);

} // namespace tessel::driver

#endif // TESSEL_DRIVER_DRIVER_H
