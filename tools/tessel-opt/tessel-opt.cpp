//===- tessel-opt.cpp - the tessel optimizer driver -----------------------===//
//
// Parses, verifies, transforms and prints tessel IR with any registered pass:
//   tessel-opt model.mlir --tessel-print-sharding-rules
//
// `--help` lists Tessel's passes and MLIR's own options. The options LLVM's
// shared library registers when it is loaded (code generation flags of
// every backend) are hidden: still accepted, listed by --help-hidden.
//
//===----------------------------------------------------------------------===//

#include "tessel/ExtensionHost/Host.h"
#include "tessel/InitAll.h"
#include "tessel/Transforms/ArgumentNames.h"
#include "dialects/tessel/TextNesting.h"

#include "TesselVersion.h"
#include "tools/UsageErrors.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/OperationSupport.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

/// Hides every option registered before main: LLVM's, not this tool's (MLIR
/// registers its options inside MlirOptMain).
static void hideLibraryOptions() {
  for (auto &entry : llvm::cl::getRegisteredOptions()) {
    llvm::StringRef name = entry.first;
    if (name.starts_with("help") || name == "version")
      continue;
    entry.second->setHiddenFlag(llvm::cl::Hidden);
  }
}

// `--load-plugin PATH` (docs/extending.md), taken out of argv before
// MlirOptMain parses it: a plugin's ops must be registered before any IR
// is read. Returns false after printing the error.
static bool loadPlugins(int &argc, char **argv) {
  int out = 1;
  for (int i = 1; i < argc; ++i) {
    llvm::StringRef a = argv[i];
    std::string path;
    if (a == "--load-plugin" || a == "-load-plugin") {
      if (i + 1 >= argc) {
        llvm::errs() << "tessel-opt: error: --load-plugin needs a plugin "
                        "library\n";
        return false;
      }
      path = argv[++i];
    } else if (a.consume_front("--load-plugin=") ||
               a.consume_front("-load-plugin=")) {
      path = a.str();
    } else {
      argv[out++] = argv[i];
      continue;
    }
    if (std::string err = tessel::ext::host::loadPlugin(path, "tessel-opt");
        !err.empty()) {
      llvm::errs() << "tessel-opt: error: " << err << "\n";
      return false;
    }
  }
  argc = out;
  argv[argc] = nullptr;
  return true;
}

int main(int argc, char **argv) {
  if (!loadPlugins(argc, argv))
    return 1;
  hideLibraryOptions();
  llvm::cl::SetVersionPrinter([](llvm::raw_ostream &os) {
    os << "tessel-opt " TESSEL_VERSION " (git " TESSEL_GIT_REVISION
          "), MLIR/LLVM " LLVM_VERSION_STRING "\n";
  });
  mlir::DialectRegistry registry;
  mlir::tessel::registerAllDialects(registry);
  mlir::tessel::registerAllPasses();
  // mlir::registerAndParseCLIOptions, with a usage error in one line.
  std::string helpHeader =
      mlir::registerCLIOptions("Tessel optimizer driver\n", registry);
  static llvm::cl::opt<std::string> inputFile(llvm::cl::Positional,
                                              llvm::cl::desc("<input file>"),
                                              llvm::cl::init("-"));
  static llvm::cl::opt<std::string> outputFile(
      "o", llvm::cl::desc("Output filename"), llvm::cl::value_desc("filename"),
      llvm::cl::init("-"));
  if (!tessel::parseCommandLine(argc, argv, helpHeader, "tessel-opt"))
    return 1;
  auto config = mlir::MlirOptMainConfig::createFromCLOptions();
  if (config.shouldShowDialects() || config.shouldListPasses())
    return mlir::asMainReturnCode(
        mlir::MlirOptMain(argc, argv, inputFile, outputFile, registry));

  std::string error;
  auto file = mlir::openInputFile(inputFile, &error);
  if (!file) {
    llvm::errs() << "tessel-opt: error: " << error << "\n";
    return 1;
  }
  // The input's bracket depth checked before MLIR's parser, which recurses
  // once per level without a limit (dialects/tessel/TextNesting.h).
  if (std::string err = mlir::tessel::checkTextNesting(file->getBuffer());
      !err.empty()) {
    llvm::errs() << "tessel-opt: error: " << file->getBufferIdentifier()
                 << ": " << err << "\n";
    return 1;
  }
  auto output = mlir::openOutputFile(outputFile, &error);
  if (!output) {
    llvm::errs() << "tessel-opt: error: " << error << "\n";
    return 1;
  }
  // Function arguments printed by name (tessel/Transforms/ArgumentNames.h):
  // the names the text gave them, or the importer's input names; op results
  // stay numbered.
  if (!config.shouldEmitBytecode() &&
      mlir::tessel::printsArgumentNames(mlir::OpPrintingFlags())) {
    auto &options = llvm::cl::getRegisteredOptions();
    static_cast<llvm::cl::opt<bool> *>(options["mlir-use-nameloc-as-prefix"])
        ->setValue(true);
    auto name = file->getBufferIdentifier().str();
    auto text = std::make_shared<std::string>(file->getBuffer().str());
    mlir::MlirOptMainConfig given = config;
    config.setPassPipelineSetupFn(
        [given, name, text](mlir::PassManager &pm) -> mlir::LogicalResult {
          // After the user's pipeline (--pass-pipeline replaces what the
          // pass manager held): the arguments' locations still point at
          // their `%name` in the text.
          if (mlir::failed(given.setupPassPipeline(pm)))
            return mlir::failure();
          pm.addPass(
              mlir::tessel::createNameArgumentsFromSourcePass(name, *text));
          pm.addPass(mlir::tessel::createForgetResultNamesPass());
          return mlir::success();
        });
  }
  if (mlir::failed(
          mlir::MlirOptMain(output->os(), std::move(file), registry, config)))
    return 1;
  output->keep();
  return 0;
}
