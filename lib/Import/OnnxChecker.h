//===- OnnxChecker.h - onnx::checker behind a no-throw wall -----*- C++ -*-===//

#ifndef TESSEL_LIB_IMPORT_ONNXCHECKER_H
#define TESSEL_LIB_IMPORT_ONNXCHECKER_H

#include "onnx/onnx_pb.h"

#include <cstdint>
#include <optional>
#include <string>

namespace mlir::tessel::detail {

/// Runs onnx::checker::check_model; the checker's message on failure. Never
/// throws. Call it only for opsets the library knows (getCheckerMaxOpset).
std::optional<std::string> checkOnnxModel(const onnx::ModelProto &model);

/// Checks a node's input and output counts, and that its required inputs are
/// named, against libonnx's schema of its op (at `opset`, or the newest the
/// library knows when `opset` is newer); a message ("expects 2 to 3 inputs,
/// has 1") or nothing. Ops the library does not know pass when they have an
/// input and an output. The importers index inputs and outputs by position,
/// and the checker skips models newer than libonnx: this guards them.
std::optional<std::string> checkNodeArity(const onnx::NodeProto &node,
                                          int64_t opset);

/// The newest ai.onnx opset the linked libonnx knows (17 for 1.12).
int64_t getCheckerMaxOpset();

} // namespace mlir::tessel::detail

#endif // TESSEL_LIB_IMPORT_ONNXCHECKER_H
