//===- EmitMlir.cpp - tesselc --emit=mlir ---------------------------------===//
//
// The ONNX import phase of tesselc: its options (--shape, --print-weights)
// and the import itself; Compile.cpp drives the phases.
//
//===----------------------------------------------------------------------===//

#include "EmitMlir.h"

#include "tessel/Import/OnnxImporter.h"
#include "tessel/InitAll.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

using namespace llvm;

cl::OptionCategory &tessel::getImportCategory() {
  static cl::OptionCategory category("ONNX import options");
  return category;
}

namespace {

cl::list<std::string> inputShapes(
    "shape", cl::value_desc("NAME=D0xD1x..."),
    cl::desc("Static shape of a graph input; fixes its dynamic dims "
             "(repeatable), e.g. --shape input_ids=2x32"),
    cl::cat(tessel::getImportCategory()));

cl::opt<bool> printWeights(
    "print-weights",
    cl::desc("After the module, list each weight's dtype, shape, size and "
             "origin as comments"),
    cl::init(false), cl::cat(tessel::getImportCategory()));

void printWeightTable(const mlir::tessel::WeightTable &weights,
                      raw_ostream &os) {
  os << "// weights: " << weights.size() << "\n";
  for (const auto &w : weights.getWeights()) {
    os << "// weight \"" << w.name << "\" "
       << mlir::tessel::getSafetensorsDType(w.dtype) << " [";
    llvm::interleaveComma(w.shape, os);
    os << "] " << w.getNumBytes() << " bytes "
       << (w.origin == mlir::tessel::WeightInfo::Origin::Initializer
               ? "initializer"
               : "constant");
    if (w.isExternal())
      os << " external " << w.externalPath << "@" << w.offset;
    os << "\n";
  }
}

} // namespace

Expected<mlir::tessel::ImportedModel>
tessel::importModel(mlir::MLIRContext &context, StringRef inputPath) {
  mlir::tessel::OnnxImportOptions options;
  for (const std::string &spec : inputShapes)
    if (Error err = mlir::tessel::parseInputShape(spec, options))
      return std::move(err);
  return mlir::tessel::importOnnxFile(context, inputPath, options);
}

void tessel::printWeightsIfAsked(const mlir::tessel::WeightTable &weights,
                                 raw_ostream &os) {
  if (printWeights)
    printWeightTable(weights, os);
}
