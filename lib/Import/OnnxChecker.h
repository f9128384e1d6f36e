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

/// The newest ai.onnx opset the linked libonnx knows (17 for 1.12).
int64_t getCheckerMaxOpset();

} // namespace mlir::tessel::detail

#endif // TESSEL_LIB_IMPORT_ONNXCHECKER_H
