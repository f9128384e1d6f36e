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

#include "tessel/InitAll.h"
#include "tessel/ExtensionHost/Host.h"
#include "dialects/tessel/TextNesting.h"

#include "TesselVersion.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/CommandLine.h"
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
  // What MlirOptMain(argc, argv, name, registry) does, with the input's
  // bracket depth checked before MLIR's parser, which recurses once per
  // level without a limit (dialects/tessel/TextNesting.h). Standard input
  // is read by MLIR alone (not checked).
  auto [inputFilename, outputFilename] = mlir::registerAndParseCLIOptions(
      argc, argv, "Tessel optimizer driver\n", registry);
  if (inputFilename != "-") {
    if (auto file = llvm::MemoryBuffer::getFile(inputFilename)) {
      std::string err =
          mlir::tessel::checkTextNesting((*file)->getBuffer());
      if (!err.empty()) {
        llvm::errs() << "tessel-opt: error: " << inputFilename << ": " << err
                     << "\n";
        return 1;
      }
    }
  }
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, inputFilename, outputFilename, registry));
}
