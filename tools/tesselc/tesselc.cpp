//===- tesselc.cpp - The Tessel compiler driver ---------------------------===//
//
// `tesselc --emit=<phase>` stops after one phase of compilation. Each phase is
// one entry of kPhases below; phases not written yet say so and exit 1.
//
//===----------------------------------------------------------------------===//

#include "Compile.h"
#include "BoosterPlugins.h"
#include "EmitMlir.h"
#include "EmitSchedule.h"
#include "Plugins.h"

#include "TesselVersion.h"
#include "tools/UsageErrors.h"
#include "tessel/Import/ListNodes.h"

#include "mlir/IR/AsmState.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/raw_ostream.h"

using namespace llvm;

namespace {

enum class EmitPhase { Artifact, Mlir, Autodiff, Propagated, Partitioned, Schedule };

cl::OptionCategory generalCategory("General options");

cl::opt<EmitPhase>
    emit("emit", cl::desc("What to produce:"), cl::init(EmitPhase::Artifact),
         cl::values(
             clEnumValN(EmitPhase::Artifact, "tsl",
                        "compile the model to a .tsl artifact (default)"),
             clEnumValN(EmitPhase::Mlir, "mlir",
                        "stop after the ONNX import (and the plan's specs) "
                        "and print the Tessel IR"),
             clEnumValN(EmitPhase::Autodiff, "autodiff",
                        "stop after the loss and its gradients (training; "
                        "implies --train)"),
             clEnumValN(EmitPhase::Propagated, "propagated",
                        "stop after sharding propagation"),
             clEnumValN(EmitPhase::Partitioned, "partitioned",
                        "stop after partitioning: the per-rank program"),
             clEnumValN(EmitPhase::Schedule, "schedule",
                        "print per-rank pipeline schedules and their simulated "
                        "bubble")),
         cl::cat(generalCategory));

cl::opt<std::string> inputFile(cl::Positional, cl::value_desc("model.onnx"),
                               cl::desc("<model.onnx>"), cl::init(""),
                               cl::cat(generalCategory));

cl::opt<std::string> outputFile(
    "o", cl::value_desc("path"),
    cl::desc("Where to write. An artifact is a DIRECTORY (manifest.pb and "
             "one program and weights file per rank; default: the model's "
             "name with .tsl), replaced whole when it exists. With --emit: a "
             "file, default stdout ('-')"),
    cl::init(""), cl::cat(generalCategory));

cl::opt<bool> listNodes(
    "list-nodes",
    cl::desc("Print what a plan can match in the ONNX model: its graph "
             "inputs, every node's name and op type, and the weights it "
             "takes with their shapes; compile nothing"),
    cl::init(false), cl::cat(generalCategory));

cl::opt<bool> listPluginsFlag(
    "list-plugins",
    cl::desc("Print the --plugin names, one line each; compile nothing"),
    cl::init(false), cl::cat(generalCategory));

int run() {
  if (int rc = tessel::loadPlugins())
    return rc;
  if (listPluginsFlag) {
    tessel::listPlugins(outs());
    return 0;
  }
  if (listNodes) {
    if (inputFile.empty() || StringRef(inputFile).ends_with(".mlir"))
      return tessel::fail("--list-nodes needs an ONNX model "
                          "(tesselc model.onnx --list-nodes)");
    if (Error err = mlir::tessel::listNodes(inputFile, outs()))
      return tessel::fail(toString(std::move(err)));
    return 0;
  }
  switch (emit) {
  case EmitPhase::Schedule:
    if (!inputFile.empty())
      return tessel::fail("--emit=schedule takes no input model (got '" +
                        inputFile + "'); it builds a schedule from "
                        "--schedule, --stages, --microbatches");
    return tessel::emitSchedule(outputFile.empty() ? StringRef("-")
                                                    : StringRef(outputFile));
  case EmitPhase::Mlir:
    if (inputFile.empty())
      return tessel::fail(
          "--emit=mlir needs an input model (tesselc model.onnx --emit=mlir)");
    return tessel::compile(inputFile, outputFile, tessel::StopAfter::Import);
  case EmitPhase::Autodiff:
    if (inputFile.empty())
      return tessel::fail("--emit=autodiff needs an input model");
    return tessel::compile(inputFile, outputFile, tessel::StopAfter::Autodiff);
  case EmitPhase::Propagated:
  case EmitPhase::Partitioned:
    if (inputFile.empty())
      return tessel::fail("no input file (see --help)");
    return tessel::compile(inputFile, outputFile,
                           emit == EmitPhase::Propagated
                               ? tessel::StopAfter::Propagate
                               : tessel::StopAfter::Partition);
  case EmitPhase::Artifact:
    if (inputFile.empty())
      return tessel::fail(
          "no input file; give a model, or --emit=schedule (see --help)");
    if (outputFile == "-")
      return tessel::fail("-o -: an artifact is a directory of files (one "
                          "program and weights file per rank), it cannot go "
                          "to stdout; give a directory name, e.g. -o "
                          "model.tsl, or print IR with --emit=mlir");
    return tessel::compile(inputFile, outputFile, tessel::StopAfter::Artifact);
  }
  return 1;
}

} // namespace

int main(int argc, char **argv) {
  InitLLVM init(argc, argv);
  cl::SetVersionPrinter([](raw_ostream &os) {
    os << "tesselc " TESSEL_VERSION " (git " TESSEL_GIT_REVISION
          "), MLIR/LLVM " LLVM_VERSION_STRING "\n";
  });
  mlir::registerAsmPrinterCLOptions();
  cl::HideUnrelatedOptions({&generalCategory, &tessel::getImportCategory(),
                            &tessel::getShardingCategory(),
                            &tessel::getTrainingCategory(),
                            &tessel::getScheduleCategory(),
                            &tessel::getPluginCategory()});
  // The ONNX node names a plan's `node:` rules match are the ops'
  // locations: --mlir-print-debuginfo prints them (listed in --help).
  if (auto *debugInfo = cl::getRegisteredOptions().lookup("mlir-print-debuginfo")) {
    debugInfo->setHiddenFlag(cl::NotHidden);
    debugInfo->addCategory(generalCategory);
  }
  if (!tessel::parseCommandLine(
      argc, argv,
      "tesselc: the Tessel tensor-sharding compiler\n\n"
      "  tesselc model.onnx -o model.tsl && tessel-run model.tsl ...\n"
      "  tesselc model.onnx --mesh dp=2,tp=2 --plan plan.yaml --report -o m.tsl\n"
      "  tesselc model.onnx --mesh dp=2 --plan=dp --emit=partitioned\n"
      "  tesselc model.onnx --emit=mlir [--shape input_ids=2x32] -o model.mlir\n"
      "  tesselc model.onnx --list-nodes     # the names a plan matches\n"
      "  tesselc model.onnx --train --loss cross_entropy --optimizer adamw \\\n"
      "          --lr 1e-3 --weight-decay 0.01 -o train.tsl\n"
      "  tesselc --emit=schedule --schedule=1f1b --stages 4 --microbatches 8\n"
      "  tesselc --emit=schedule --schedule=interleaved-1f1b --stages 4 \\\n"
      "          --microbatches 8 --chunks 2 --timeline steps.svg\n"
      "  tesselc --emit=schedule --schedule-file=my.sched --costs 1,2,1\n",
      "tesselc"))
    return 1;
  return run();
}
