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

#include "TesselVersion.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/CommandLine.h"
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

int main(int argc, char **argv) {
  hideLibraryOptions();
  llvm::cl::SetVersionPrinter([](llvm::raw_ostream &os) {
    os << "tessel-opt " TESSEL_VERSION " (git " TESSEL_GIT_REVISION
          "), MLIR/LLVM " LLVM_VERSION_STRING "\n";
  });
  mlir::DialectRegistry registry;
  mlir::tessel::registerAllDialects(registry);
  mlir::tessel::registerAllPasses();
  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv, "Tessel optimizer driver\n", registry));
}
