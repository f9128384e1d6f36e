//===- Driver.cpp - tesselc's phases, called from Python ------------------===//
//
// tessel.compile() runs tesselc's own driver (tools/tesselc, the
// TesselcDriver library): the Python side turns its keyword arguments into
// tesselc's flags (--mesh=..., --plan=..., --train ...), which are parsed by
// tesselc's llvm::cl options, reset before each call. The messages,
// warnings and --report text are captured from stdout and stderr.
//
//===----------------------------------------------------------------------===//
#include "Capture.h"
#include "Common.h"

#include "Compile.h"
#include "tessel/Import/ListNodes.h"

#include "mlir/IR/AsmState.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/raw_ostream.h"

#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

namespace tessel::python {

namespace {

/// What compilation produces: "tsl" (the artifact), "mlir" (after import),
/// "autodiff", "propagated", "partitioned": tesselc's --emit values.
StopAfter parseStop(const std::string &emit) {
  if (emit == "tsl")
    return StopAfter::Artifact;
  if (emit == "mlir")
    return StopAfter::Import;
  if (emit == "autodiff")
    return StopAfter::Autodiff;
  if (emit == "propagated")
    return StopAfter::Propagate;
  if (emit == "partitioned")
    return StopAfter::Partition;
  raise("CompileError", "emit='" + emit +
                            "': expected tsl, mlir, autodiff, propagated or "
                            "partitioned");
}

/// Runs `tesselc <flags> <input> -o <output> --emit=<emit>`: returns
/// (exit code, stdout, stderr). A flag tesselc refuses raises CompileError.
nb::tuple tesselc(const std::vector<std::string> &flags,
                  const std::string &input, const std::string &output,
                  const std::string &emit) {
  static const bool registered = [] {
    mlir::registerAsmPrinterCLOptions();
    return true;
  }();
  (void)registered;
  StopAfter stop = parseStop(emit);
  std::vector<const char *> argv = {"tesselc"};
  for (const std::string &f : flags)
    argv.push_back(f.c_str());
  llvm::cl::ResetAllOptionOccurrences();
  std::string usage;
  llvm::raw_string_ostream usageOs(usage);
  int rc;
  Capture capture;
  if (!llvm::cl::ParseCommandLineOptions(static_cast<int>(argv.size()),
                                         argv.data(), "", &usageOs)) {
    capture.finish();
    llvm::cl::ResetAllOptionOccurrences();
    raise("CompileError", usageOs.str());
  }
  rc = tessel::compile(input, output, stop);
  capture.finish();
  llvm::cl::ResetAllOptionOccurrences();
  return nb::make_tuple(rc, capture.out(), capture.err());
}

/// tesselc MODEL --list-nodes: what a plan can match.
std::string listNodes(const std::string &model) {
  std::string text;
  llvm::raw_string_ostream os(text);
  if (llvm::Error err = mlir::tessel::listNodes(model, os))
    raise("CompileError", "tesselc: error: " + llvm::toString(std::move(err)));
  return os.str();
}

} // namespace

void bindDriver(nb::module_ &m) {
  m.def("tesselc", &tesselc, nb::arg("flags"), nb::arg("input"),
        nb::arg("output"), nb::arg("emit"),
        "Runs tesselc's driver in this process: (exit code, stdout, stderr).");
  m.def("list_nodes", &listNodes, nb::arg("model"),
        "What a plan can match in an ONNX model: its graph inputs, every "
        "node's name and op type, and the weights it takes with their shapes "
        "(tesselc --list-nodes).");
}

} // namespace tessel::python
