//===- ListNodes.h - What a plan can match in an ONNX model -----*- C++ -*-===//
//
// `tesselc model.onnx --list-nodes`: the names a plan's rules match (graph
// inputs for `input:`, node names for `node:`, initializers for `weight:`),
// read straight from the model, without importing it.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_IMPORT_LISTNODES_H
#define TESSEL_IMPORT_LISTNODES_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

namespace mlir::tessel {

/// Prints the graph inputs (name, dtype, shape), then every node in graph
/// order: its name, op type and the initializers among its inputs with
/// their dtypes and shapes.
llvm::Error listNodes(llvm::StringRef modelPath, llvm::raw_ostream &os);

} // namespace mlir::tessel

#endif // TESSEL_IMPORT_LISTNODES_H
