//===- tesselc.cpp - The Tessel compiler driver ---------------------------===//
//
// The command line of the compile driver (tessel/Driver/Driver.h): its flags
// are llvm::cl options made from the driver's table (getCompileFlags), read
// into CompileOptions; compile() does the work; this prints its messages,
// its error, its output and its reports.
//
//===----------------------------------------------------------------------===//

#include "tessel/Driver/Driver.h"

#include "TesselVersion.h"
#include "tools/UsageErrors.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OperationSupport.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

#include <functional>

using namespace llvm;
using namespace tessel::driver;

namespace {

cl::OptionCategory generalCategory("General options");
cl::OptionCategory importCategory("ONNX import options");
cl::OptionCategory shardingCategory("Sharding options");
cl::OptionCategory trainingCategory("Training options");
cl::OptionCategory scheduleCategory(
    "Pipeline schedule options (--emit=schedule)",
    "Generate or load a per-rank pipeline schedule, verify it, simulate it "
    "and print the action lists and figures.");
cl::OptionCategory pluginCategory("Plugin options");

// Its values: getEmitValues(), added in main.
cl::opt<Emit> emit("emit", cl::desc("What to produce:"),
                   cl::init(Emit::Artifact), cl::cat(generalCategory));

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

cl::opt<bool> listNodesFlag(
    "list-nodes",
    cl::desc("Print what a plan can match in the ONNX model: its graph "
             "inputs, every node's name and op type, and the weights it "
             "takes with their shapes; compile nothing"),
    cl::init(false), cl::cat(generalCategory));

cl::opt<bool> listPluginsFlag(
    "list-plugins",
    cl::desc("Print the --plugin names, one line each; compile nothing"),
    cl::init(false), cl::cat(generalCategory));

/// The driver's flags as cl options: each, once parsed, writes its field.
struct Flags {
  std::vector<std::unique_ptr<cl::Option>> options;
  std::vector<std::function<void(CompileOptions &)>> readers;

  static cl::OptionCategory &category(FlagCategory c) {
    switch (c) {
    case FlagCategory::Import:
      return importCategory;
    case FlagCategory::Sharding:
      return shardingCategory;
    case FlagCategory::Training:
      return trainingCategory;
    case FlagCategory::Schedule:
      return scheduleCategory;
    case FlagCategory::Plugin:
      break;
    }
    return pluginCategory;
  }
  // A plain field: its default is CompileOptions' own.
  template <typename T>
  void add(const CompileFlag &f, T CompileOptions::*field) {
    auto *opt = new cl::opt<T>(StringRef(f.name), cl::desc(f.help),
                               cl::value_desc(f.valueDesc),
                               cl::init(CompileOptions().*field),
                               cl::cat(category(f.category)));
    options.emplace_back(opt);
    readers.push_back([=](CompileOptions &o) { o.*field = opt->getValue(); });
  }
  // An optional field: set when the flag is given.
  template <typename T>
  void add(const CompileFlag &f, std::optional<T> CompileOptions::*field) {
    auto *opt = new cl::opt<T>(StringRef(f.name), cl::desc(f.help),
                               cl::value_desc(f.valueDesc),
                               cl::cat(category(f.category)));
    options.emplace_back(opt);
    readers.push_back([=](CompileOptions &o) {
      if (opt->getNumOccurrences())
        o.*field = opt->getValue();
    });
  }
  void add(const CompileFlag &f,
           std::vector<std::string> CompileOptions::*field) {
    auto *opt = new cl::list<std::string>(StringRef(f.name), cl::desc(f.help),
                                          cl::value_desc(f.valueDesc),
                                          cl::cat(category(f.category)));
    if (f.commaSeparated)
      opt->setMiscFlag(cl::CommaSeparated);
    options.emplace_back(opt);
    readers.push_back([=](CompileOptions &o) {
      (o.*field).assign(opt->begin(), opt->end());
    });
  }

  Flags() {
    for (const CompileFlag &f : getCompileFlags())
      std::visit([&](auto field) { add(f, field); }, f.field);
  }
};

int report(Error err) {
  handleAllErrors(
      std::move(err),
      [](const DriverError &e) {
        if (e.diagnostics)
          errs() << e.message;
        else
          WithColor::error(errs(), "tesselc") << e.message << "\n";
      },
      [](const ErrorInfoBase &e) {
        WithColor::error(errs(), "tesselc") << e.message() << "\n";
      });
  return 1;
}

int run(const CompileOptions &options) {
  if (Error err = loadExtensions(options))
    return report(std::move(err));
  if (listPluginsFlag) {
    outs() << listPlugins();
    return 0;
  }
  if (listNodesFlag) {
    Expected<std::string> nodes = listNodes(options.input);
    if (!nodes)
      return report(nodes.takeError());
    outs() << *nodes;
    return 0;
  }
  std::unique_ptr<mlir::MLIRContext> context = createContext();
  Expected<CompileResult> result =
      compile(*context, options, [](const Message &m) {
        if (m.kind == Message::Warning)
          WithColor::warning(errs(), "tesselc") << m.text << "\n";
        else if (m.kind == Message::Remark)
          WithColor::remark(errs(), "tesselc") << m.text << "\n";
        else
          errs() << m.text;
      });
  if (!result)
    return report(result.takeError());
  // The reports first: with -o -, the IR follows them on stdout.
  outs() << result->reports.str() << result->text;
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  InitLLVM init(argc, argv);
  cl::SetVersionPrinter([](raw_ostream &os) {
    os << "tesselc " TESSEL_VERSION " (git " TESSEL_GIT_REVISION
          "), MLIR/LLVM " LLVM_VERSION_STRING "\n";
  });
  mlir::registerAsmPrinterCLOptions();
  for (const tessel::driver::EmitValue &v : tessel::driver::getEmitValues())
    emit.getParser().addLiteralOption(v.name, v.emit, v.help);
  Flags flags;
  cl::HideUnrelatedOptions({&generalCategory, &importCategory,
                            &shardingCategory, &trainingCategory,
                            &scheduleCategory, &pluginCategory});
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
  CompileOptions options;
  for (const auto &read : flags.readers)
    read(options);
  options.emit = emit;
  options.input = inputFile;
  options.output = outputFile;
  options.printDebugInfo = mlir::OpPrintingFlags().shouldPrintDebugInfo();
  return run(options);
}
