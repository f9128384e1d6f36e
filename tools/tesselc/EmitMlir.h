//===- EmitMlir.h - tesselc --emit=mlir -------------------------*- C++ -*-===//

#ifndef TESSEL_TOOLS_TESSELC_EMITMLIR_H
#define TESSEL_TOOLS_TESSELC_EMITMLIR_H

#include "tessel/Import/OnnxImporter.h"

#include "llvm/Support/CommandLine.h"

namespace tessel {

/// Imports the ONNX model at `inputPath` with the --shape options of the
/// command line; errors are single messages naming what is at fault.
llvm::Expected<mlir::tessel::ImportedModel>
importModel(mlir::MLIRContext &context, llvm::StringRef inputPath);

/// The options of the import phase, for --help grouping.
llvm::cl::OptionCategory &getImportCategory();

/// With --print-weights, lists each weight's dtype, shape, size and origin
/// as comments.
void printWeightsIfAsked(const mlir::tessel::WeightTable &weights,
                         llvm::raw_ostream &os);

} // namespace tessel

#endif // TESSEL_TOOLS_TESSELC_EMITMLIR_H
