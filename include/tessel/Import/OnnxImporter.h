//===- OnnxImporter.h - ONNX protobuf to the tessel dialect -----*- C++ -*-===//
//
// Imports an ONNX model (opsets 13 to 21) into a module holding one
// `func.func @main`: graph inputs are its arguments, graph outputs its
// results, initializers become `tessel.weight "NAME"` ops whose data stays in
// a WeightTable, and shape-computing subgraphs are folded so that every tessel
// op is static. ONNX names are kept on the function as
// `tessel.input_names` / `tessel.output_names`, and each op's location is the
// ONNX node name (`loc("/h.0/attn/MatMul")`).
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_IMPORT_ONNXIMPORTER_H
#define TESSEL_IMPORT_ONNXIMPORTER_H

#include "tessel/Import/WeightTable.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Error.h"

#include <memory>

namespace mlir {
class MLIRContext;
} // namespace mlir

namespace mlir::tessel {

/// The lowest and highest ai.onnx opset the importer accepts.
constexpr int64_t kMinOnnxOpset = 13;
constexpr int64_t kMaxOnnxOpset = 23;

struct OnnxImportOptions {
  /// Static shapes for graph inputs, by input name; they fix dynamic dims
  /// (and must agree with static ones).
  llvm::StringMap<llvm::SmallVector<int64_t>> inputShapes;
  /// The model is imported to be trained (tesselc --train): a batch norm
  /// that PyTorch ran in training mode is one here too, where the exporter
  /// wrote it as inference (torch.onnx.export(dynamo=True) does), and one
  /// the exporter fused into a Conv is refused.
  bool training = false;
};

/// Parses "NAME=D0xD1x..." (e.g. "input_ids=2x32"; "NAME=" is a scalar) into
/// `options`.
llvm::Error parseInputShape(llvm::StringRef spec, OnnxImportOptions &options);

struct ImportedModel {
  OwningOpRef<ModuleOp> module;
  std::unique_ptr<WeightTable> weights;
};

/// Imports the ONNX model at `path`; external-data locations are relative to
/// its directory. The context gets the dialects it needs loaded. Errors are
/// single messages that name the node, input, tensor or file at fault.
llvm::Expected<ImportedModel> importOnnxFile(MLIRContext &context,
                                             llvm::StringRef path,
                                             const OnnxImportOptions &options);

/// As importOnnxFile, from serialized bytes; `modelDir` resolves external data
/// and `bufferName` names the model in messages and locations.
llvm::Expected<ImportedModel>
importOnnxBuffer(MLIRContext &context, llvm::StringRef bytes,
                 llvm::StringRef modelDir, llvm::StringRef bufferName,
                 const OnnxImportOptions &options);

/// The initializers of the ONNX model at `path`, by name, without importing
/// its graph (tesselc --weights for a .mlir program: any model holding
/// those tensors will do). External data is resolved beside the model.
llvm::Expected<std::unique_ptr<WeightTable>>
readOnnxInitializers(MLIRContext &context, llvm::StringRef path);

} // namespace mlir::tessel

#endif // TESSEL_IMPORT_ONNXIMPORTER_H
