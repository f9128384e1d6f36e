//===- ListNodes.cpp - What a plan can match in an ONNX model -------------===//
#include "tessel/Import/ListNodes.h"

#include "onnx/onnx_pb.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Errc.h"
#include "llvm/Support/MemoryBuffer.h"

#include <climits>
#include <string>

using namespace llvm;

namespace mlir::tessel {

namespace {

std::string dtypeName(int type) {
  std::string name = onnx::TensorProto_DataType_Name(
      static_cast<onnx::TensorProto_DataType>(type));
  return name.empty() ? "type " + std::to_string(type) : name;
}

std::string shapeOf(const onnx::TensorProto &t) {
  std::string s = "[";
  for (int i = 0; i < t.dims_size(); ++i)
    s += (i ? ", " : "") + std::to_string(t.dims(i));
  return s + "]";
}

std::string shapeOf(const onnx::ValueInfoProto &v) {
  if (!v.type().has_tensor_type() || !v.type().tensor_type().has_shape())
    return "[?]";
  const auto &shape = v.type().tensor_type().shape();
  std::string s = "[";
  for (int i = 0; i < shape.dim_size(); ++i) {
    const auto &d = shape.dim(i);
    s += i ? ", " : "";
    s += d.has_dim_value() ? std::to_string(d.dim_value())
         : d.has_dim_param() ? d.dim_param()
                             : "?";
  }
  return s + "]";
}

} // namespace

Error listNodes(StringRef modelPath, raw_ostream &os) {
  auto buf = MemoryBuffer::getFile(modelPath);
  if (!buf)
    return createStringError(errc::invalid_argument,
                             modelPath + ": " + buf.getError().message());
  onnx::ModelProto model;
  if ((*buf)->getBufferSize() > static_cast<size_t>(INT_MAX) ||
      !model.ParseFromArray((*buf)->getBufferStart(),
                            static_cast<int>((*buf)->getBufferSize())))
    return createStringError(errc::invalid_argument,
                             modelPath + ": not an ONNX model");
  const onnx::GraphProto &g = model.graph();
  StringMap<const onnx::TensorProto *> initializers;
  for (const onnx::TensorProto &t : g.initializer())
    initializers[t.name()] = &t;

  os << "graph inputs (a plan's input: rules):\n";
  for (const onnx::ValueInfoProto &v : g.input()) {
    if (initializers.count(v.name()))
      continue; // an initializer listed as an input (older exports)
    os << "  " << v.name() << "  "
       << dtypeName(v.type().tensor_type().elem_type()) << " " << shapeOf(v)
       << "\n";
  }
  os << "nodes (node: rules), with their weights (weight: rules; 'operand "
        "N' for a rule's operand:):\n";
  for (int i = 0; i < g.node_size(); ++i) {
    const onnx::NodeProto &n = g.node(i);
    os << "  " << (n.name().empty() ? "(unnamed node " + std::to_string(i) + ")"
                                    : n.name())
       << "  " << n.op_type();
    bool first = true;
    for (int k = 0; k < n.input_size(); ++k) {
      auto it = initializers.find(n.input(k));
      if (it == initializers.end())
        continue;
      os << (first ? "  " : ", ") << "operand " << k << ": " << n.input(k)
         << " " << dtypeName(it->second->data_type()) << " "
         << shapeOf(*it->second);
      first = false;
    }
    os << "\n";
  }
  return Error::success();
}

} // namespace mlir::tessel
