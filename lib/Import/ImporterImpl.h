//===- ImporterImpl.h - the ONNX importer's internals -----------*- C++ -*-===//
//
// GraphImporter walks one ONNX graph; NodeContext is what an op importer sees
// of one node: typed inputs (materialised on demand, or known constants),
// attributes, and ways to define outputs and to fail with a message that names
// the node. The op table (OpImporters.cpp) maps (op type, since-version) to an
// import function.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_LIB_IMPORT_IMPORTERIMPL_H
#define TESSEL_LIB_IMPORT_IMPORTERIMPL_H

#include "ConstTensor.h"

#include "dialects/tessel/TesselOps.h"
#include "tessel/Extension/Op.h"

#include "llvm/ADT/StringMap.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "onnx/onnx_pb.h"

#include <memory>
#include <optional>
#include <string>

namespace mlir::tessel::detail {

class GraphImporter;

/// One ONNX value during import.
struct ValueInfo {
  std::string name;
  int32_t dtype = kUndefined;
  RankedTensorType type;
  /// The SSA value, once materialised.
  Value value;
  /// The contents, when known at import (foldable).
  std::shared_ptr<const ConstTensor> cst;
  /// The initializer (or Constant tensor) that backs the value as a weight.
  const onnx::TensorProto *tensor = nullptr;
  /// Whether `tensor` is an initializer (a parameter) rather than a Constant.
  bool isInitializer = false;
  /// The weight's name when it is not `tensor`'s: a parameter that the
  /// exporter deduplicated into an Identity of another one with equal data.
  std::string parameterName;
  /// A sequence of tensors (SplitToSequence, SequenceConstruct), known
  /// element by element at import; then `type` is null. Only the sequence
  /// ops read it (SequenceImporters.cpp).
  std::shared_ptr<const std::vector<std::shared_ptr<ValueInfo>>> sequence;
};

/// The MLIR element type of an ONNX dtype, or null when unsupported.
Type getElementType(MLIRContext *ctx, int32_t dtype);

class NodeContext {
public:
  NodeContext(GraphImporter &importer, const onnx::NodeProto &node,
              Location loc);

  const onnx::NodeProto &getNode() const { return node; }
  OpBuilder &getBuilder();
  MLIRContext *getContext();
  Location getLoc() const { return loc; }

  // Inputs.
  unsigned getNumInputs() const { return node.input_size(); }
  /// Input `i` exists and is not the empty name of an omitted optional input.
  bool hasInput(unsigned i) const {
    return int(i) < node.input_size() && !node.input(i).empty();
  }
  ValueInfo &getInput(unsigned i);
  RankedTensorType getType(unsigned i) { return getInput(i).type; }
  ArrayRef<int64_t> getShape(unsigned i) { return getInput(i).type.getShape(); }
  int64_t getRank(unsigned i) { return getInput(i).type.getRank(); }
  int32_t getDType(unsigned i) { return getInput(i).dtype; }
  /// The contents of input `i` when known at import, else null.
  const ConstTensor *getConst(unsigned i);
  /// As getConst, but also a float initializer's contents: for operands
  /// that configure the op rather than hold parameters (Resize's scales,
  /// Pad's constant_value), which exporters store as initializers.
  const ConstTensor *getOperandConst(unsigned i);
  /// When importing for training, the module of the batch norm PyTorch ran
  /// in training mode that this node comes from (ExporterMetadata).
  std::optional<std::string> trainingBatchNorm();
  /// The padding_idx of the torch.nn.Embedding this Gather comes from
  /// (ExporterMetadata), where the exporter recorded one.
  std::optional<int64_t> embeddingPaddingIdx();
  /// Whether every present input is known at import.
  bool allInputsConst();
  /// The SSA value of input `i`, materialising weights and constants.
  FailureOr<Value> getValue(unsigned i);
  /// A zero bias of `n` elements of `elementType` (f32, bf16 or f16), named
  /// after the parameter, when the exporter's optimizer dropped the
  /// parameter the node's FX node reads as its bias (its initial value was
  /// zero); a null value otherwise.
  FailureOr<Value> droppedBias(int64_t n, Type elementType);
  /// The integer contents of constant input `i`; fails naming `what`.
  FailureOr<SmallVector<int64_t>> getConstInts(unsigned i, StringRef what);
  /// Notes that this pooling node's ceil_mode drops a last window that
  /// would start in the end padding (PyTorch's rule, ONNX's since opset
  /// 19), where the formula before it counts one more: an exporter that
  /// declares shapes by that formula declares a larger output.
  void noteCeilModeDrop();

  // Attributes.
  const onnx::AttributeProto *getAttr(StringRef name) const;
  int64_t getInt(StringRef name, int64_t dflt) const;
  float getFloat(StringRef name, float dflt) const;
  std::string getString(StringRef name, StringRef dflt) const;
  std::optional<SmallVector<int64_t>> getInts(StringRef name) const;

  // Outputs.
  unsigned getNumOutputs() const { return node.output_size(); }
  /// Whether output `i` exists and something reads it.
  bool isOutputUsed(unsigned i) const;
  void setOutput(unsigned i, Value value, int32_t dtype);
  /// Defines output `i` as a value known at import.
  void setConst(unsigned i, ConstTensor value);
  /// Output `i` is input `j` (Identity, no-op reshapes).
  void forward(unsigned i, unsigned j);
  /// Identity: as forward(), except that an initializer's Identity is a
  /// parameter of its own, named after the output, with the input's data.
  /// (PyTorch's exporter turns parameters with equal initial values, such
  /// as every LayerNorm's ones, into Identities of one initializer; training
  /// must keep them apart.)
  void forwardParameter(unsigned i, unsigned j);
  /// Defines output `i` as the data of `tensor` (a Constant node's value).
  LogicalResult setTensor(unsigned i, const onnx::TensorProto &tensor);
  /// The SSA value of a tensor computed by the importer, named `name` if it
  /// has to become a weight.
  FailureOr<Value> materialize(const ConstTensor &value, StringRef name);

  // Sequences (SequenceImporters.cpp): a sequence value holds its elements'
  // ValueInfos.
  using Elements = std::vector<std::shared_ptr<ValueInfo>>;
  /// Input `i`'s elements, or null when it is not a sequence.
  const Elements *getSequence(unsigned i);
  /// Input `i`'s ValueInfo itself (shared: an element of a sequence).
  std::shared_ptr<ValueInfo> getInputInfo(unsigned i);
  /// A tensor ValueInfo of `value`, not (yet) any output.
  std::shared_ptr<ValueInfo> makeInfo(Value value, int32_t dtype);
  /// The SSA value of an element.
  FailureOr<Value> getValue(ValueInfo &element);
  /// Defines output `i` as the sequence of `elements`.
  void setSequence(unsigned i, Elements elements);
  /// Defines output `i` as `info` (an element of a sequence).
  void setOutputInfo(unsigned i, std::shared_ptr<ValueInfo> info);

  /// Fails with "node 'NAME' (OP): message".
  LogicalResult error(const Twine &message);
  /// Normalises a possibly negative axis against `rank`; fails naming `what`.
  FailureOr<int64_t> normalizeAxis(int64_t axis, int64_t rank, StringRef what);

  /// Creates a tessel op from operands and attributes. With no result types,
  /// the op infers them (InferTypeOpInterface); `numResults` placeholders are
  /// used meanwhile. The op is verified; failures become node errors.
  template <typename OpTy>
  FailureOr<Operation *> create(ValueRange operands,
                                ArrayRef<NamedAttribute> attrs = {},
                                TypeRange resultTypes = {},
                                unsigned numResults = 1) {
    return createOp(OpTy::getOperationName(), operands, attrs, resultTypes,
                    numResults);
  }
  /// create<OpTy> for an op known by its name (the op table's one-to-one
  /// rows).
  FailureOr<Operation *> createNamed(StringRef name, ValueRange operands,
                                     ArrayRef<NamedAttribute> attrs,
                                     TypeRange resultTypes) {
    return createOp(name, operands, attrs, resultTypes, resultTypes.size());
  }
  /// A rank-0 tessel.constant of `value` with element type `elemType`.
  Value scalarConstant(double value, Type elemType);

private:
  FailureOr<Operation *> createOp(StringRef name, ValueRange operands,
                                  ArrayRef<NamedAttribute> attrs,
                                  TypeRange resultTypes, unsigned numResults);

  GraphImporter &importer;
  const onnx::NodeProto &node;
  Location loc;
};

using ImportFn = LogicalResult (*)(NodeContext &);

/// One row of the op table: `opType` as of opset `sinceVersion`.
struct OpImporter {
  const char *opType;
  int sinceVersion;
  ImportFn fn;
};

/// The importer of `opType` for `opset`: the newest row whose since-version
/// is not newer than the opset. Null when there is none; `*oldest` then gets
/// the oldest since-version known for the op (0 when the op is unknown).
const OpImporter *lookupOpImporter(StringRef opType, int64_t opset,
                                   int *oldest = nullptr);

/// Imports `c`'s node as the plugin op `def` (CustomOpImporter.cpp).
LogicalResult importCustomOp(NodeContext &c, const ::tessel::ext::CustomOp &def);

/// The plugin op that imports `node` (of a domain other than ai.onnx) at the
/// model's opset of that domain (`opsets`: domain -> version); null when
/// none, `*oldest` then gets the oldest since-version registered (0: none).
const ::tessel::ext::CustomOp *
lookupCustomOp(const onnx::NodeProto &node,
               const llvm::StringMap<int64_t> &opsets, int *oldest = nullptr);

} // namespace mlir::tessel::detail

#endif // TESSEL_LIB_IMPORT_IMPORTERIMPL_H
