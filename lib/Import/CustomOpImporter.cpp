//===- CustomOpImporter.cpp - ONNX nodes of plugins' domains --------------===//
//
// A node of a domain other than ai.onnx imports into the tessel.custom_call
// of the plugin op registered for (domain, op type, since-version)
// (include/tessel/Extension/Op.h): its inputs become the operands, the ONNX
// attributes the op declares (with their defaults) its attributes, and its
// type rule gives the results.
//
//===----------------------------------------------------------------------===//

#include "ImporterImpl.h"

#include "dialects/tessel/ExtensionBridge.h"
#include "tessel/ExtensionHost/Host.h"

using namespace mlir;
using namespace mlir::tessel;
using namespace mlir::tessel::detail;
namespace ext = ::tessel::ext;

namespace {

/// The ONNX dtype of an element type (TensorProto.DataType).
int32_t onnxDType(Type elem) {
  if (elem.isF32())
    return onnx::TensorProto::FLOAT;
  if (elem.isF16())
    return onnx::TensorProto::FLOAT16;
  if (elem.isBF16())
    return onnx::TensorProto::BFLOAT16;
  if (elem.isInteger(64))
    return onnx::TensorProto::INT64;
  if (elem.isInteger(32))
    return onnx::TensorProto::INT32;
  if (elem.isInteger(1))
    return onnx::TensorProto::BOOL;
  return onnx::TensorProto::UNDEFINED;
}

} // namespace

LogicalResult mlir::tessel::detail::importCustomOp(NodeContext &c,
                                                   const ext::CustomOp &def) {
  const onnx::NodeProto &node = c.getNode();
  ext::Attrs attrs;
  for (const ext::OnnxAttr &a : def.onnx.attrs) {
    const onnx::AttributeProto *p = c.getAttr(a.name);
    if (!p) {
      if (a.required)
        return c.error("missing attribute '" + a.name + "' (required by " +
                       def.name + ")");
      attrs[a.name] = a.dflt;
      continue;
    }
    switch (a.dflt.kind) {
    case ext::AttrValue::Kind::Ints:
      if (p->type() == onnx::AttributeProto::INTS) {
        SmallVector<int64_t> v = *c.getInts(a.name);
        attrs[a.name] = ext::AttrValue::ofInts({v.begin(), v.end()});
      } else
        attrs[a.name] = ext::AttrValue::ofInt(c.getInt(a.name, 0));
      break;
    case ext::AttrValue::Kind::Floats:
      attrs[a.name] = ext::AttrValue::ofFloat(c.getFloat(a.name, 0));
      break;
    case ext::AttrValue::Kind::Str:
      attrs[a.name] = ext::AttrValue::ofStr(c.getString(a.name, ""));
      break;
    }
  }
  for (const onnx::AttributeProto &p : node.attribute()) {
    bool known = false;
    for (const ext::OnnxAttr &a : def.onnx.attrs)
      known |= a.name == p.name();
    if (!known)
      return c.error("attribute '" + p.name() + "' is not one " + def.name +
                     " takes");
  }
  SmallVector<Value> operands;
  for (unsigned i = 0; i < c.getNumInputs(); ++i) {
    if (!c.hasInput(i))
      continue;
    FailureOr<Value> v = c.getValue(i);
    if (failed(v))
      return failure();
    operands.push_back(*v);
  }
  std::string error;
  FailureOr<Operation *> op =
      createCustomCall(c.getBuilder(), c.getLoc(), def.name, operands,
                       fromExtAttrs(c.getContext(), attrs), error);
  if (failed(op))
    return c.error(error);
  if ((*op)->getNumResults() < c.getNumOutputs())
    return c.error(def.name + " gives " +
                   std::to_string((*op)->getNumResults()) +
                   " results; the node has " +
                   std::to_string(c.getNumOutputs()) + " outputs");
  for (unsigned i = 0; i < c.getNumOutputs(); ++i) {
    Value r = (*op)->getResult(i);
    c.setOutput(i, r,
                onnxDType(cast<RankedTensorType>(r.getType()).getElementType()));
  }
  return success();
}

const ext::CustomOp *
mlir::tessel::detail::lookupCustomOp(const onnx::NodeProto &node,
                                     const llvm::StringMap<int64_t> &opsets,
                                     int *oldest) {
  auto it = opsets.find(node.domain());
  int64_t version = it == opsets.end() ? 0 : it->second;
  return ext::host::findOnnxOp(node.domain(), node.op_type(), version, oldest);
}
