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

#include <algorithm>
#include <exception>
#include <limits>

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

namespace {
std::string countRange(int lo, int hi, const char *what) {
  std::string r = std::to_string(lo);
  if (hi != lo)
    r += hi == std::numeric_limits<int>::max() ? " or more"
                                               : " to " + std::to_string(hi);
  return r + " " + what + (hi == 1 && lo == 1 ? "" : "s");
}
} // namespace

std::optional<std::string>
mlir::tessel::detail::checkNodeArity(const onnx::NodeProto &node, int64_t opset) {
  try {
    int64_t known = getCheckerMaxOpset();
    const onnx::OpSchema *schema = onnx::OpSchemaRegistry::Schema(
        node.op_type(), static_cast<int>(std::min(opset, known)), node.domain());
    if (!schema) {
      if (node.input_size() < 1 || node.input(0).empty())
        return std::string("has no input");
      if (node.output_size() < 1)
        return std::string("has no output");
      return std::nullopt;
    }
    // A newer opset may add optional inputs and outputs (ReduceMax-18's
    // axes): then only the lower bounds hold.
    bool newer = opset > known;
    int nin = node.input_size(), nout = node.output_size();
    int maxIn = newer ? std::numeric_limits<int>::max() : schema->max_input();
    int maxOut = newer ? std::numeric_limits<int>::max() : schema->max_output();
    if (nin < schema->min_input() || nin > maxIn)
      return "expects " + countRange(schema->min_input(), maxIn, "input") +
             ", has " + std::to_string(nin);
    if (nout < schema->min_output() || nout > maxOut)
      return "expects " + countRange(schema->min_output(), maxOut, "output") +
             ", has " + std::to_string(nout);
    const auto &formal = schema->inputs();
    for (int i = 0; i < nin && !formal.empty(); ++i) {
      if (size_t(i) >= formal.size() &&
          formal.back().GetOption() != onnx::OpSchema::FormalParameterOption::Variadic)
        break;
      const auto &f = formal[std::min<size_t>(i, formal.size() - 1)];
      if (node.input(i).empty() &&
          f.GetOption() != onnx::OpSchema::FormalParameterOption::Optional)
        return "input " + std::to_string(i) + " ('" + f.GetName() +
               "') is required";
    }
  } catch (...) {
    return std::string("unknown error in libonnx's schema lookup");
  }
  return std::nullopt;
}
