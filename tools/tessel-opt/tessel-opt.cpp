//===- tessel-opt.cpp - the tessel optimizer driver -----------------------===//
//
// Parses, verifies, transforms and prints tessel IR with any registered pass:
//   tessel-opt model.mlir --tessel-print-sharding-rules
//
//===----------------------------------------------------------------------===//

#include "tessel/InitAll.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  mlir::tessel::registerAllDialects(registry);
  mlir::tessel::registerAllPasses();
  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv, "Tessel optimizer driver\n", registry));
}
