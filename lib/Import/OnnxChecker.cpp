//===- OnnxChecker.cpp - onnx::checker behind a no-throw wall -------------===//
//
// libonnx reports problems by throwing. LLVM and MLIR are built without
// exceptions, so this file alone is compiled with -fexceptions and every
// exception stops here, turned into a message.
//
//===----------------------------------------------------------------------===//

#include "OnnxChecker.h"

#include "onnx/checker.h"
#include "onnx/defs/schema.h"

#include <exception>

std::optional<std::string>
mlir::tessel::detail::checkOnnxModel(const onnx::ModelProto &model) {
  try {
    onnx::checker::check_model(model);
  } catch (const std::exception &e) {
    std::string message = e.what();
    // The checker's messages may span lines (a node's text form): one line,
    // of bounded length.
    std::string line;
    for (char ch : message) {
      if (ch == '\n' || ch == '\r' || ch == '\t')
        ch = ' ';
      if (ch == ' ' && !line.empty() && line.back() == ' ')
        continue;
      line += ch;
    }
    while (!line.empty() && line.back() == ' ')
      line.pop_back();
    if (line.size() > 300)
      line = line.substr(0, 297) + "...";
    return line;
  } catch (...) {
    return std::string("unknown error in onnx::checker");
  }
  return std::nullopt;
}

int64_t mlir::tessel::detail::getCheckerMaxOpset() {
  try {
    return onnx::OpSchemaRegistry::DomainToVersionRange::Instance()
        .Map()
        .at(onnx::ONNX_DOMAIN)
        .second;
  } catch (...) {
    return 0;
  }
}
