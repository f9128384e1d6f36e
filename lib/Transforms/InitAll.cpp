//===- InitAll.cpp - every dialect and pass of Tessel ---------------------===//

#include "tessel/InitAll.h"

#include "dialects/tessel/TesselOps.h"
#include "tessel/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Transforms/Passes.h"

void mlir::tessel::registerAllDialects(DialectRegistry &registry) {
  registry.insert<TesselDialect, func::FuncDialect, arith::ArithDialect>();
}

void mlir::tessel::registerAllPasses() {
  registerTesselPasses();
  // The generic cleanups users chain with ours.
  registerCanonicalizerPass();
  registerCSEPass();
  registerSymbolDCEPass();
}
