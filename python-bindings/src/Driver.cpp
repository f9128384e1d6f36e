//===- Driver.cpp - The compile driver, called from Python ----------------===//
//
// tessel.compile() runs the compile driver (lib/Driver, the library tesselc
// is a main over): its keyword arguments become tesselc's flags, which
// parseCompileFlags reads into CompileOptions; the compile runs in a
// context of its own with the GIL released, so that threads compile at
// once. Its warnings, reports and IR come back as strings, its error as the
// text tesselc prints.
//
//===----------------------------------------------------------------------===//
#include "Common.h"

#include "tessel/Driver/Driver.h"

#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/StringExtras.h"

#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <optional>

namespace tessel::python {

namespace {

using namespace tessel::driver;

/// tesselc's --emit values, but schedule (tessel.schedule()).
Emit parseEmit(const std::string &emit) {
  std::vector<std::string> names;
  for (const tessel::driver::EmitValue &v : tessel::driver::getEmitValues()) {
    if (v.emit == Emit::Schedule)
      continue;
    if (emit == v.name)
      return v.emit;
    names.push_back(v.name);
  }
  raise("CompileError", "emit='" + emit + "': expected " +
                            llvm::join(llvm::ArrayRef(names).drop_back(), ", ") +
                            " or " + names.back());
}

/// `tesselc <flags> <input> -o <output> --emit=<emit>` in this process:
/// (error, text, reports, messages). error: None, or what tesselc prints on
/// stderr when it fails (its messages included); text: the IR for an IR
/// phase (output ""); reports: --report's; messages: the warnings and
/// remarks. A flag tesselc refuses raises CompileError.
nb::tuple compile(const std::vector<std::string> &flags,
                  const std::string &input, const std::string &output,
                  const std::string &emit) {
  CompileOptions options;
  options.emit = parseEmit(emit);
  if (llvm::Error err = parseCompileFlags(flags, options))
    raise("CompileError", llvm::toString(std::move(err)));
  options.input = input;
  options.output = output;
  std::string messages, text, reports;
  std::optional<std::string> error;
  {
    nb::gil_scoped_release released;
    std::unique_ptr<mlir::MLIRContext> context = createContext();
    auto run = [&]() -> llvm::Expected<CompileResult> {
      if (llvm::Error err = loadExtensions(options))
        return std::move(err);
      return driver::compile(*context, options, [&](const Message &m) {
        messages += m.str();
      });
    };
    // The result's module lives in `context`: only its strings leave.
    if (llvm::Expected<CompileResult> result = run()) {
      text = std::move(result->text);
      reports = result->reports.str();
    } else {
      error = messages + llvm::toString(result.takeError());
    }
  }
  return nb::make_tuple(error, text, reports, messages);
}

/// tesselc MODEL --list-nodes: what a plan can match.
std::string listNodes(const std::string &model) {
  llvm::Expected<std::string> text = driver::listNodes(model);
  if (!text)
    raise("CompileError", llvm::toString(text.takeError()));
  return *text;
}

} // namespace

void bindDriver(nb::module_ &m) {
  m.def("compile", &compile, nb::arg("flags"), nb::arg("input"),
        nb::arg("output"), nb::arg("emit"),
        "Runs the compile driver in this process: (error or None, IR text, "
        "reports, warnings).");
  m.def("list_nodes", &listNodes, nb::arg("model"),
        "What a plan can match in an ONNX model: its graph inputs, every "
        "node's name and op type, and the weights it takes with their shapes "
        "(tesselc --list-nodes).");
}

} // namespace tessel::python
