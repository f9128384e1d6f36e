//===- ExporterMetadata.h - what the exporter recorded of each tensor -----===//
//
// torch.onnx.export's default (dynamo) exporter records, in ONNX's
// metadata_props, what torch.export knew and ONNX does not:
//   - on an initializer's value: its InputSpec kind (PARAMETER, BUFFER,
//     CONSTANT_TENSOR) and its torch.export placeholder name (p_...);
//   - on a value the optimizer folded into an initializer: the values it was
//     folded from (a transposed nn.Linear weight: its parameter; a rotary
//     table: the inv_freq buffer and the arithmetic);
//   - on a node: the FX node it came from, naming the placeholders it reads,
//     and its module scopes.
// The optimizer also merges initializers with equal contents (every
// LayerNorm's ones, every zero bias) into one; the FX node of each reader
// still names the parameter it read, which undoes the merge.
//
// ONNX 1.12 (Debian's libonnx) predates metadata_props on values and nodes;
// the fields arrive as unknown fields and are read from there.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_LIB_IMPORT_EXPORTERMETADATA_H
#define TESSEL_LIB_IMPORT_EXPORTERMETADATA_H

#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"

#include <optional>
#include <string>
#include <vector>

namespace onnx {
class GraphProto;
class ModelProto;
class NodeProto;
} // namespace onnx

namespace mlir::tessel::detail {

/// What an importer knows of a weight: `kind` is "parameter", "buffer",
/// "constant" or "initializer" (nothing known); `detail` says why.
struct WeightOrigin {
  std::string kind;
  std::string detail;
  /// The PyTorch parameter it holds, when its own name is the exporter's
  /// (a folded copy: val_12, onnx::MatMul_7); plans and patterns match it.
  std::string parameter = {};
  /// How it holds `parameter`: "transposed" (a 2-D copy the exporter
  /// transposed: nn.Linear's weight), "rows" (folded with other values: the
  /// rows the model reads, as a position embedding gathered at
  /// arange(seq)), "" as it is.
  std::string layout = {};
};

class ExporterMetadata {
public:
  /// Reads the graph's values' metadata and the model's
  /// `tessel.parameters` record (tessel.export, python-bindings/tessel).
  /// Fails with a message when that record is not valid JSON of its form.
  std::optional<std::string> read(const onnx::ModelProto &model);

  /// Whether the model carries torch.export's metadata at all.
  bool present() const { return !specs.empty(); }

  /// What tessel.export recorded of `name` (a parameter of the module, its
  /// requires_grad, or a buffer); nullopt when it has no record or the
  /// record does not name it.
  std::optional<WeightOrigin> recorded(llvm::StringRef name) const;
  /// Whether a tessel.export record came with the model.
  bool hasRecord() const { return record; }
  /// The record's ties: (a parameter's second name, the name it is tied
  /// to), as named_parameters(remove_duplicate=False) lists them.
  const std::vector<std::pair<std::string, std::string>> &recordedTies() const {
    return ties;
  }
  /// The record's trainable parameters (requires_grad, not a second name
  /// of a tied one), in its order.
  const std::vector<std::string> &recordedTrainable() const {
    return trainableOrder;
  }

  /// What the metadata says of initializer `name`; nullopt when nothing.
  std::optional<WeightOrigin> origin(llvm::StringRef name) const;

  /// The parameter initializer `name` was folded from when it was folded
  /// from exactly one known parameter and nothing else (a transposed copy).
  std::optional<std::string> foldedFromOne(llvm::StringRef name) const;

  /// The parameter that `node` reads where it reads initializer `name`,
  /// when that is another parameter whose contents the exporter merged
  /// into `name`; nullopt when it reads `name` itself (or nothing is known).
  std::optional<std::string> mergedParameter(const onnx::NodeProto &node,
                                             llvm::StringRef name) const;

  /// Where `node` is the op of a torch.nn module (its FX node's innermost
  /// class is torch.nn.modules.*: Embedding, Linear, LayerNorm, ...) that
  /// reads parameter `name` of another module, the name that parameter has
  /// in `node`'s module: a tie (GPT-2's `transformer.wte` reading
  /// `lm_head.weight` is `transformer.wte.weight`). A torch.nn module reads
  /// only its own parameters, so such a read is one parameter under two
  /// names.
  std::optional<std::string> moduleAlias(const onnx::NodeProto &node,
                                         llvm::StringRef name) const;

  /// When `node`'s FX node reads a parameter as its bias while the ONNX
  /// node has no bias input (the exporter's optimizer drops a bias whose
  /// initial value is zero): that parameter's name. The FX nodes: an addmm
  /// (nn.Linear, GPT-2's Conv1D), a linear written as a Gemm, a conv as a
  /// Conv (torchvision's ConvNeXt initialises every bias to zero).
  std::optional<std::string> droppedBias(const onnx::NodeProto &node) const;
  /// The padding_idx of the torch.nn.Embedding a Gather node comes from
  /// (aten.embedding's third argument), where it names one.
  std::optional<int64_t> embeddingPaddingIdx(const onnx::NodeProto &node) const;

  /// When `node` comes from a batch norm that PyTorch ran in training mode
  /// (its FX node is _native_batch_norm_legit_functional with training
  /// true), whatever the exporter made of it: the batch norm's module
  /// name.
  std::optional<std::string>
  trainingBatchNorm(const onnx::NodeProto &node) const;

private:
  struct Spec {
    std::string kind;        // PARAMETER, BUFFER, CONSTANT_TENSOR, ...
    std::string placeholder; // torch.export's p_... name
    std::vector<std::string> foldedFrom;
  };
  llvm::StringMap<Spec> specs;
  /// The spec of `name` when it is a parameter with a placeholder, with
  /// `node`'s metadata and the FX values its FX node reads; else null.
  const Spec *
  parameterRead(const onnx::NodeProto &node, llvm::StringRef name,
                std::vector<std::pair<std::string, std::string>> &props,
                std::vector<std::string> &reads) const;
  bool record = false;
  llvm::StringMap<bool> torchParameters; // name -> requires_grad
  llvm::StringMap<bool> torchBuffers;
  std::vector<std::string> trainableOrder;
  std::vector<std::pair<std::string, std::string>> ties;
  bool isParameterName(llvm::StringRef name) const;
};

} // namespace mlir::tessel::detail

#endif // TESSEL_LIB_IMPORT_EXPORTERMETADATA_H
