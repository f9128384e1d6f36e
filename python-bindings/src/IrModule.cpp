//===- IrModule.cpp - Tessel IR from Python: parse, print, run passes -----===//
//
// Debian's MLIR has no Python bindings: tessel.Module is Tessel's own small
// API over an mlir::ModuleOp: parse (errors with line and column), print,
// run a pass pipeline by name (tessel-opt's textual syntax), propagate and
// partition (tesselc's pipeline, lib/Transforms/CompilePipeline.cpp), and
// walk the ops with their shardings.
//
//===----------------------------------------------------------------------===//
#include "Common.h"

#include "dialects/tessel/TesselOps.h"
#include "tessel/InitAll.h"
#include "tessel/Transforms/ArgumentNames.h"
#include "tessel/Transforms/CompilePipeline.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OperationSupport.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <memory>

namespace tessel::python {

namespace {

std::shared_ptr<mlir::MLIRContext> makeContext() {
  static const bool passes = [] {
    mlir::tessel::registerAllPasses();
    return true;
  }();
  (void)passes;
  mlir::DialectRegistry registry;
  mlir::tessel::registerAllDialects(registry);
  auto context = std::make_shared<mlir::MLIRContext>(registry);
  context->loadAllAvailableDialects();
  return context;
}

/// Collects a context's diagnostics as "LOC: error: MESSAGE" lines (as
/// tesselc prints them) while it lives; warnings go to Python's stderr.
class DiagnosticText {
public:
  explicit DiagnosticText(mlir::MLIRContext *context)
      : os(text), handler(context, [this](mlir::Diagnostic &d) {
          const char *kind =
              d.getSeverity() == mlir::DiagnosticSeverity::Error ? "error"
              : d.getSeverity() == mlir::DiagnosticSeverity::Warning
                  ? "warning"
                  : d.getSeverity() == mlir::DiagnosticSeverity::Remark
                      ? "remark"
                      : "note";
          std::string line;
          llvm::raw_string_ostream l(line);
          l << d.getLocation() << ": " << kind << ": " << d << "\n";
          for (mlir::Diagnostic &note : d.getNotes())
            l << note.getLocation() << ": note: " << note << "\n";
          if (d.getSeverity() == mlir::DiagnosticSeverity::Error)
            os << line;
          else
            warnings += line;
          return mlir::success();
        }) {}
  ~DiagnosticText() {
    if (!warnings.empty())
      PySys_WriteStderr("%s", warnings.c_str());
  }
  std::string str() { return os.str(); }

private:
  std::string text, warnings;
  llvm::raw_string_ostream os;
  mlir::ScopedDiagnosticHandler handler;
};

class IrModule {
public:
  IrModule(std::shared_ptr<mlir::MLIRContext> context,
           mlir::OwningOpRef<mlir::ModuleOp> module)
      : context(std::move(context)), module(std::move(module)) {}

  std::string str(bool debugInfo = false) {
    std::string text;
    llvm::raw_string_ostream os(text);
    mlir::OpPrintingFlags flags;
    if (debugInfo)
      flags.enableDebugInfo(true, /*prettyForm=*/false).useLocalScope();
    // Arguments by name, as tesselc and tessel-opt print them.
    mlir::tessel::printWithArgumentNames(module->getOperation(), os, flags);
    os << "\n";
    return os.str();
  }

  void runPasses(const std::string &pipeline) {
    mlir::PassManager pm(context.get(), mlir::ModuleOp::getOperationName());
    std::string error;
    llvm::raw_string_ostream es(error);
    if (mlir::failed(mlir::parsePassPipeline(pipeline, pm, es)))
      raise("CompileError", "pass pipeline '" + pipeline + "': " + es.str());
    run(pm, "'" + pipeline + "'");
  }

  bool hasMesh() {
    return !module->getOps<mlir::tessel::MeshOp>().empty();
  }

  void propagate() {
    if (stage != "import")
      raise("CompileError", "propagate(): the module is already " + stage);
    mlir::PassManager pm(context.get());
    mlir::tessel::buildCompilePipeline(pm, hasMesh(),
                                       mlir::tessel::CompileStage::Propagate);
    run(pm, "propagate()");
    stage = "propagated";
  }

  void partition() {
    if (stage == "partitioned")
      raise("CompileError", "partition(): the module is already partitioned");
    mlir::PassManager pm(context.get());
    if (stage == "import")
      mlir::tessel::buildCompilePipeline(
          pm, hasMesh(), mlir::tessel::CompileStage::Partition);
    else if (hasMesh()) {
      // The rest of tesselc's pipeline after -tessel-propagate.
      (void)mlir::parsePassPipeline(
          "tessel-partition,tessel-simplify-collectives", pm);
      mlir::tessel::buildFinalPasses(pm);
    }
    run(pm, "partition()");
    stage = "partitioned";
  }

  /// (op name, location, sharding or None) of every op, in order.
  std::vector<std::tuple<std::string, std::string, std::optional<std::string>>>
  ops() {
    std::vector<
        std::tuple<std::string, std::string, std::optional<std::string>>>
        out;
    llvm::StringRef key = mlir::tessel::TesselDialect::kShardingAttrName;
    module->walk([&](mlir::Operation *op) {
      if (op == module->getOperation())
        return;
      std::string loc;
      llvm::raw_string_ostream ls(loc);
      ls << op->getLoc();
      std::optional<std::string> sharding;
      if (mlir::Attribute a = op->getAttr(key)) {
        std::string s;
        llvm::raw_string_ostream ss(s);
        ss << a;
        sharding = ss.str();
      }
      out.emplace_back(op->getName().getStringRef().str(), ls.str(),
                       sharding);
    });
    return out;
  }

  std::string stage = "import";

private:
  void run(mlir::PassManager &pm, const std::string &what) {
    DiagnosticText diags(context.get());
    if (mlir::failed(pm.run(*module)))
      raise("CompileError", what + " failed:\n" + diags.str());
  }

  std::shared_ptr<mlir::MLIRContext> context;
  mlir::OwningOpRef<mlir::ModuleOp> module;
};

/// Parses textual Tessel IR; the first error's line and column go with the
/// exception (tessel.ParseError), its text is the one tessel-opt prints.
IrModule parse(const std::string &text, const std::string &filename,
               const std::string &stage) {
  if (stage != "import" && stage != "propagated" && stage != "partitioned")
    raise("CompileError", "stage='" + stage +
                              "': expected import, propagated or partitioned");
  auto context = makeContext();
  auto sm = std::make_shared<llvm::SourceMgr>();
  sm->AddNewSourceBuffer(llvm::MemoryBuffer::getMemBufferCopy(text, filename),
                         llvm::SMLoc());
  std::string messages;
  llvm::raw_string_ostream os(messages);
  mlir::SourceMgrDiagnosticHandler printer(*sm, context.get(), os);
  int line = 0, column = 0;
  mlir::ScopedDiagnosticHandler first(context.get(), [&](mlir::Diagnostic &d) {
    if (d.getSeverity() == mlir::DiagnosticSeverity::Error && !line)
      if (auto fl = d.getLocation()->findInstanceOf<mlir::FileLineColLoc>()) {
        line = static_cast<int>(fl.getLine());
        column = static_cast<int>(fl.getColumn());
      }
    return mlir::failure(); // and on to the printer
  });
  mlir::ParserConfig config(context.get());
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceFile<mlir::ModuleOp>(sm, config);
  if (!module)
    raiseParseError(os.str(), line, column);
  mlir::tessel::nameArgumentsFromSource(module->getOperation(), *sm);
  IrModule result(std::move(context), std::move(module));
  result.stage = stage;
  return result;
}

} // namespace

void bindIrModule(nb::module_ &m) {
  nb::class_<IrModule>(m, "Module",
                       "Tessel IR: an MLIR module of the tessel dialect.")
      .def("__str__", [](IrModule &m) { return m.str(); },
           "The textual IR (as tessel-opt prints it).")
      .def("text", &IrModule::str, nb::arg("debuginfo") = false,
           "The textual IR; with debuginfo, each op's location (after the "
           "import: its ONNX node's name, what a plan's node: rule "
           "matches), as --mlir-print-debuginfo prints it.")
      .def("run_passes", &IrModule::runPasses, nb::arg("pipeline"),
           "Runs a pass pipeline in tessel-opt's syntax, e.g. "
           "'tessel-propagate,tessel-partition'.")
      .def("propagate", &IrModule::propagate,
           "Sharding propagation: tesselc's pipeline through "
           "-tessel-propagate (--emit=propagated).")
      .def("partition", &IrModule::partition,
           "Partitioning into the per-rank program: the rest of tesselc's "
           "pipeline through -tessel-partition (--emit=partitioned).")
      .def("ops", &IrModule::ops,
           "Every op as (name, location, sharding or None), in order.")
      .def_prop_ro("stage", [](IrModule &m) { return m.stage; },
                   "'import', 'propagated' or 'partitioned'.");
  m.def("parse", &parse, nb::arg("text"), nb::arg("filename") = "<string>",
        nb::arg("stage") = "import",
        "Parses textual Tessel IR into a Module; a syntax or verifier error "
        "raises tessel.ParseError (line, column).");
}

} // namespace tessel::python
