//===- OnnxImporter.cpp - ONNX protobuf to the tessel dialect -------------===//
//
// Parses the model, checks what can be checked up front (opset, operators,
// input shapes), then walks the nodes in order. Values known at import
// (constants, shapes, integer initializers) are folded by the op importers;
// everything else becomes tessel ops in `func.func @main`. Initializers become
// `tessel.weight` ops whose data stays in the WeightTable.
//
//===----------------------------------------------------------------------===//

#include "tessel/Import/OnnxImporter.h"

#include "ExternalData.h"
#include "ExporterMetadata.h"
#include "ImporterImpl.h"
#include "OnnxChecker.h"

#include "dialects/tessel/TesselOps.h"
#include "dialects/tessel/Verifiers.h"
#include "tessel/support/Checked.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Errc.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/ADT/StringSet.h"

#include <climits>
#include <cstring>
#include <limits>

using namespace mlir;
using namespace mlir::tessel;
using namespace mlir::tessel::detail;

static llvm::Error makeError(const Twine &message) {
  return llvm::createStringError(llvm::errc::invalid_argument, message);
}

Type mlir::tessel::detail::getElementType(MLIRContext *ctx, int32_t dtype) {
  switch (dtype) {
  case kFloat: return Float32Type::get(ctx);
  case kDouble: return Float64Type::get(ctx);
  case kFloat16: return Float16Type::get(ctx);
  case kBFloat16: return BFloat16Type::get(ctx);
  case kBool: return IntegerType::get(ctx, 1);
  case kInt8: return IntegerType::get(ctx, 8);
  case kInt16: return IntegerType::get(ctx, 16);
  case kInt32: return IntegerType::get(ctx, 32);
  case kInt64: return IntegerType::get(ctx, 64);
  case kUInt8: return IntegerType::get(ctx, 8, IntegerType::Unsigned);
  default: return {};
  }
}

/// Whether an initializer holds no values at all (a shapes-only export):
/// not external, no raw_data, every typed field empty.
static bool hasNoData(const onnx::TensorProto &t) {
  return t.data_location() != onnx::TensorProto::EXTERNAL &&
         !t.has_raw_data() && t.float_data_size() == 0 &&
         t.double_data_size() == 0 && t.int32_data_size() == 0 &&
         t.int64_data_size() == 0 && t.uint64_data_size() == 0 &&
         t.string_data_size() == 0;
}

static std::optional<WeightDType> getWeightDType(int32_t dtype) {
  switch (dtype) {
  case kFloat: return WeightDType::F32;
  case kDouble: return WeightDType::F64;
  case kFloat16: return WeightDType::F16;
  case kBFloat16: return WeightDType::BF16;
  case kBool: return WeightDType::Bool;
  case kInt8: return WeightDType::I8;
  case kInt16: return WeightDType::I16;
  case kInt32: return WeightDType::I32;
  case kInt64: return WeightDType::I64;
  case kUInt8: return WeightDType::U8;
  default: return std::nullopt;
  }
}

//===----------------------------------------------------------------------===//
// GraphImporter
//===----------------------------------------------------------------------===//

namespace mlir::tessel::detail {

/// The bytes of a tensor: in memory, or a slice of an external file.
struct TensorData {
  ArrayRef<char> bytes;
  std::string path;
  uint64_t offset = 0;
};

class GraphImporter {
public:
  GraphImporter(MLIRContext *ctx, WeightTable &weights, StringRef modelDir,
                StringRef modelName)
      : ctx(ctx), builder(ctx), weights(weights), modelDir(modelDir.str()),
        modelName(modelName.str()) {}

  LogicalResult run(const onnx::ModelProto &model,
                    const OnnxImportOptions &options, ModuleOp module);
  const std::string &getError() const { return errorMessage; }

  LogicalResult fail(const Twine &message) {
    if (errorMessage.empty())
      errorMessage = message.str();
    return failure();
  }

  MLIRContext *ctx;
  OpBuilder builder;
  WeightTable &weights;
  std::string modelDir;
  std::string modelName;
  int64_t opset = 0;
  /// The opset of every other domain the model imports (plugins' ops).
  llvm::StringMap<int64_t> domainOpsets;
  llvm::StringMap<std::shared_ptr<ValueInfo>> values;
  llvm::StringMap<unsigned> useCounts;
  /// Diagnostics emitted while creating or verifying ops.
  std::vector<std::string> diagnostics;
  /// Pooling nodes whose ceil_mode drops a last window that starts in the
  /// end padding (NodeContext::noteCeilModeDrop).
  std::vector<std::string> ceilModeDrops;

  ValueInfo *lookup(StringRef name) {
    auto it = values.find(name);
    return it == values.end() ? nullptr : it->second.get();
  }
  /// `info`'s contents when known at import; a float initializer (a
  /// parameter) only with `evenParameters`.
  const ConstTensor *getConst(ValueInfo &info, bool evenParameters = false);
  FailureOr<Value> materialize(ValueInfo &info, Location loc);
  /// Adds `entry` to the weight table and its tessel.weight (of `type`,
  /// named as the entry) to the function: weightOps holds it from then on.
  Value addWeight(WeightInfo entry, RankedTensorType type);
  FailureOr<TensorData> getTensorData(const onnx::TensorProto &tensor);
  /// The bytes of `info`'s tensor, read from its external-data file into
  /// `file` when it has one.
  FailureOr<ArrayRef<char>> readBytes(const ValueInfo &info,
                                      std::unique_ptr<llvm::MemoryBuffer> &file);
  LogicalResult defineTensor(const onnx::TensorProto &tensor, StringRef name,
                             bool isInitializer);
  DenseElementsAttr toAttr(const ConstTensor &c, RankedTensorType type);

private:
  LogicalResult checkOperators(const onnx::GraphProto &graph);
  FailureOr<RankedTensorType> getInputType(const onnx::ValueInfoProto &input,
                                           const OnnxImportOptions &options,
                                           int32_t &dtype);
  LogicalResult importNode(const onnx::NodeProto &node, unsigned index);

  std::string errorMessage;

public:
  llvm::StringMap<Value> weightOps;
  /// What torch.export recorded of the model's tensors (ExporterMetadata.h).
  ExporterMetadata exporterMeta;
  /// OnnxImportOptions::training.
  bool training = false;
  /// What is known of each weight created, by weight name: the module
  /// attribute tessel.weight_origins.
  llvm::StringMap<WeightOrigin> origins;
  /// Other PyTorch names of a weight's parameter (ties), by weight name.
  llvm::StringMap<SmallVector<std::string, 1>> aliases;
  /// Initializers read as another weight: copy -> (the weight, layout), ""
  /// or "transposed" for a retied copy (retie()), "expand" for a row read
  /// at every position (broadcastRow()); tesselc --train's source model
  /// computes them from the trained weight.
  llvm::StringMap<std::pair<std::string, std::string>> tiedCopies;
  void addAlias(StringRef weight, StringRef alias) {
    auto &list = aliases[weight];
    if (alias != weight && !llvm::is_contained(list, alias))
      list.push_back(alias.str());
  }
  /// Parameters the exporter merged into one initializer because their
  /// contents were equal, apart again: by parameter name.
  llvm::StringMap<std::shared_ptr<ValueInfo>> mergedParameters;
  /// What NodeContext::getInput gives for an input the node lacks.
  ValueInfo missingInput;
  /// The nodes that read each value, in graph order.
  llvm::StringMap<SmallVector<const onnx::NodeProto *, 1>> readers;
  const onnx::GraphProto *graph = nullptr;
  /// The parameter an initializer that the TorchScript exporter folded
  /// (onnx::MatMul_N: nn.Linear's weight, transposed) was made from, named
  /// after the module scope of the one node that reads it.
  std::optional<std::string> legacyTransposedParameter(StringRef name) const;
  /// The initializers `info` could be a copy of (retie()): those the
  /// metadata names, or for a folded initializer without metadata, the
  /// named initializers of the same or the transposed shape.
  SmallVector<std::string> tieCandidates(const ValueInfo &info, StringRef name) const;
  /// `info` as `node` reads it: the parameter the exporter merged into it
  /// where it was one, else `info` itself.
  ValueInfo &asReadBy(const onnx::NodeProto &node, StringRef input,
                      ValueInfo &info);
  /// `info`, a folded copy of a parameter's rows (origin layout "rows"),
  /// as one row read at every position where all its rows are equal (and
  /// not all its elements): a row gathered at constant indices (BERT's
  /// token-type embedding at token_type_ids = 0, which the default
  /// exporter folds into a per-position constant). The row is the weight
  /// `NAME.row` ([1, ..., 1, H]), expanded to `info`'s shape, so that it
  /// trains once on the sum of its positions' gradients, as PyTorch's
  /// parameter does. Null where the rows differ (a position embedding).
  FailureOr<Value> broadcastRow(ValueInfo &info, StringRef name, Location loc);
  /// The module attributes tessel.parameter_names and tessel.tied_copies
  /// (TesselDialect.td), from `origins`, `aliases`, `tiedCopies` and the
  /// ties of tessel.export's record.
  void setParameterNames(ModuleOp module);
  /// The origin of the weight `name` materialised from `info`.
  WeightOrigin originOf(const ValueInfo &info, StringRef name) const;
  /// `info` (an initializer the exporter folded) as a read of the first of
  /// `sources` whose contents it holds as they are or transposed: the tie
  /// PyTorch had (GPT-2's LM head and embedding). Null when none.
  FailureOr<Value> retie(ValueInfo &info, ArrayRef<std::string> sources,
                         Location loc);
};

} // namespace mlir::tessel::detail

/// "WHAT of dtype[d0, d1, ..]: N elements, more than the M a tensor may
/// have", for a shape checkedByteSize refused. The importer sizes every
/// tensor at 8 bytes an element (what folding holds), so M is
/// (2^63 - 1) / 8 whatever the dtype.
static std::string describeOversizedTensor(const Twine &what, int32_t dtype,
                                           ArrayRef<int64_t> shape) {
  if (llvm::any_of(shape, [](int64_t d) { return d < 0; }))
    return (what + " of " + getDTypeName(dtype) + formatShape(shape) +
            ": a negative dim")
        .str();
  std::optional<int64_t> n = ::tessel::checkedProduct(shape);
  return (what + " of " + getDTypeName(dtype) + formatShape(shape) + ": " +
          (n ? Twine(*n) : Twine("more than 2^63")) +
          " elements, more than the " + Twine(INT64_MAX / 8) +
          " a tensor may have (2^63 - 1 bytes at 8 bytes an element)")
      .str();
}

FailureOr<TensorData>
GraphImporter::getTensorData(const onnx::TensorProto &t) {
  int32_t dtype = t.data_type();
  SmallVector<int64_t> shape(t.dims().begin(), t.dims().end());
  auto wdt = getWeightDType(dtype);
  if (!wdt)
    return fail("tensor '" + t.name() + "' has element type " +
                getDTypeName(dtype) + ", which Tessel does not support");
  uint64_t width = getByteWidth(*wdt);
  // Sizes from the model's dims, checked before anything is allocated.
  std::optional<CheckedSize> size = checkedByteSize(shape, width);
  if (!size)
    return fail(describeOversizedTensor("tensor '" + t.name() + "'", dtype,
                                        shape));
  int64_t n = size->elements;
  uint64_t expected = uint64_t(size->bytes);
  TensorData data;

  if (t.data_location() == onnx::TensorProto::EXTERNAL) {
    ExternalSlice slice;
    std::string refused;
    if (!locateExternalData(modelDir, t, expected,
                            (getDTypeName(dtype) + formatShape(shape)).str(), slice,
                            refused))
      return fail(refused);
    data.path = slice.file.path;
    data.offset = slice.offset;
    return data;
  }

  if (t.has_raw_data()) {
    const std::string &raw = t.raw_data();
    if (raw.size() != expected)
      return fail("tensor '" + t.name() + "' holds " + Twine(raw.size()) +
                  " bytes of data; " + getDTypeName(dtype) + formatShape(shape) +
                  " needs " + Twine(expected));
    data.bytes = ArrayRef<char>(raw.data(), raw.size());
    return data;
  }

  // Typed fields: re-encode as little-endian bytes, once the field is known
  // to hold exactly the n elements the dims promise.
  int64_t present;
  switch (dtype) {
  case kFloat: present = t.float_data_size(); break;
  case kDouble: present = t.double_data_size(); break;
  case kInt64: present = t.int64_data_size(); break;
  default: present = t.int32_data_size(); break;
  }
  if (present != n)
    return fail("tensor '" + t.name() + "' holds " + Twine(present) +
                " elements; " + getDTypeName(dtype) + formatShape(shape) +
                " needs " + Twine(n));
  ConstTensor c = ConstTensor::zeros(dtype, shape);
  // Passes the first min(size, n) elements of a repeated field to `set`;
  // returns the field's size.
  auto copyField = [n](const auto &field, auto set) -> int64_t {
    int64_t count = field.size();
    for (int64_t k = 0; k < std::min(count, n); ++k)
      set(k, field.Get(k));
    return count;
  };
  int64_t count = -1;
  switch (dtype) {
  case kFloat:
    count = copyField(t.float_data(), [&](int64_t k, float v) { c.f[k] = v; });
    break;
  case kDouble:
    count =
        copyField(t.double_data(), [&](int64_t k, double v) { c.f[k] = v; });
    break;
  case kInt64:
    count =
        copyField(t.int64_data(), [&](int64_t k, int64_t v) { c.i[k] = v; });
    break;
  case kFloat16:
  case kBFloat16: {
    std::vector<char> bits(2 * n);
    count = copyField(t.int32_data(), [&](int64_t k, int32_t v) {
      uint16_t half = uint16_t(v);
      std::memcpy(bits.data() + 2 * k, &half, 2);
    });
    if (count == n)
      return TensorData{weights.own(std::move(bits)), "", 0};
    break;
  }
  default:
    count = copyField(t.int32_data(),
                      [&](int64_t k, int32_t v) { c.setInt(k, v); });
    break;
  }
  if (count != n)
    return fail("tensor '" + t.name() + "' holds " + Twine(count) +
                " elements; " + getDTypeName(dtype) + formatShape(shape) +
                " needs " + Twine(n));
  data.bytes = weights.own(c.toBytes());
  return data;
}

LogicalResult GraphImporter::defineTensor(const onnx::TensorProto &tensor,
                                          StringRef name, bool isInitializer) {
  auto info = std::make_shared<ValueInfo>();
  info->name = name.str();
  info->dtype = tensor.data_type();
  Type elemType = getElementType(ctx, info->dtype);
  if (!elemType)
    return fail("tensor '" + name + "' has element type " +
                getDTypeName(info->dtype) + ", which Tessel does not support");
  SmallVector<int64_t> shape;
  for (int64_t d : tensor.dims()) {
    if (d < 0)
      return fail("tensor '" + name + "' has a negative dim");
    shape.push_back(d);
  }
  if (!checkedByteSize(shape, 8))
    return fail(describeOversizedTensor("tensor '" + name + "'", info->dtype,
                                        shape));
  info->type = RankedTensorType::get(shape, elemType);
  info->tensor = &tensor;
  info->isInitializer = isInitializer;
  values[name] = std::move(info);
  return success();
}

FailureOr<ArrayRef<char>>
GraphImporter::readBytes(const ValueInfo &info,
                         std::unique_ptr<llvm::MemoryBuffer> &file) {
  auto data = getTensorData(*info.tensor);
  if (failed(data))
    return failure();
  if (data->path.empty())
    return data->bytes;
  auto buffer = llvm::MemoryBuffer::getFileSlice(
      data->path,
      info.type.getNumElements() * getByteWidth(*getWeightDType(info.dtype)),
      data->offset);
  if (!buffer)
    return fail("tensor '" + info.name + "': cannot read '" + data->path +
                "': " + buffer.getError().message());
  file = std::move(*buffer);
  return ArrayRef<char>(file->getBufferStart(), file->getBufferSize());
}

const ConstTensor *GraphImporter::getConst(ValueInfo &info,
                                           bool evenParameters) {
  if (info.cst)
    return info.cst.get();
  if (!info.tensor)
    return nullptr;
  // Parameters stay parameters: only integer (shape) initializers fold;
  // Constant nodes fold whatever their type.
  if (info.isInitializer && isFloatDType(info.dtype) && !evenParameters)
    return nullptr;
  if (info.type.getNumElements() > kMaxFoldElements)
    return nullptr;
  std::unique_ptr<llvm::MemoryBuffer> file;
  auto bytes = readBytes(info, file);
  if (failed(bytes))
    return nullptr;
  auto c = ConstTensor::fromBytes(info.dtype, info.type.getShape(), *bytes);
  if (!c)
    return nullptr;
  info.cst = std::make_shared<ConstTensor>(std::move(*c));
  return info.cst.get();
}

DenseElementsAttr GraphImporter::toAttr(const ConstTensor &c,
                                        RankedTensorType type) {
  Type et = type.getElementType();
  int64_t n = c.isSplat() ? std::min<int64_t>(1, c.size()) : c.size();
  if (auto ft = dyn_cast<FloatType>(et)) {
    SmallVector<APFloat> v;
    for (int64_t k = 0; k < n; ++k) {
      APFloat a(c.f[k]);
      bool lost;
      a.convert(ft.getFloatSemantics(), APFloat::rmNearestTiesToEven, &lost);
      v.push_back(a);
    }
    return DenseElementsAttr::get(type, v);
  }
  if (et.isInteger(1)) {
    SmallVector<bool> v;
    for (int64_t k = 0; k < n; ++k)
      v.push_back(c.i[k] != 0);
    return DenseElementsAttr::get(type, v);
  }
  SmallVector<APInt> v;
  unsigned width = et.getIntOrFloatBitWidth();
  for (int64_t k = 0; k < n; ++k)
    v.push_back(APInt(width, uint64_t(c.i[k]), /*isSigned=*/true,
                      /*implicitTrunc=*/true));
  return DenseElementsAttr::get(type, v);
}

FailureOr<Value> GraphImporter::materialize(ValueInfo &info, Location loc) {
  if (info.value)
    return info.value;
  // Small and splat constants go into the IR; everything else is a weight.
  const ConstTensor *c = info.isInitializer ? nullptr : getConst(info);
  if (c && (c->size() < 64 || c->isSplat())) {
    info.value = ConstantOp::create(builder, NameLoc::get(builder.getStringAttr(info.name)),
                                    info.type, toAttr(*c, info.type));
    return info.value;
  }
  std::string name = !info.isInitializer        ? info.name
                     : !info.parameterName.empty() ? info.parameterName
                                                   : info.tensor->name();
  if (Value w = weightOps.lookup(name)) {
    info.value = w;
    return w;
  }
  if (info.isInitializer && info.parameterName.empty()) {
    auto tied = retie(info, tieCandidates(info, name), loc);
    if (failed(tied))
      return failure();
    if (*tied) {
      info.value = *tied;
      return *tied;
    }
  }
  origins[name] = originOf(info, name);
  // One f32 the exporter made (no parameter or buffer of the module: an
  // attention's scale, a mask's fill): a constant in the IR, as a Constant
  // node's would be, which the fusion patterns read. torch.export's
  // metadata names every parameter and buffer, so where it is present an
  // initializer it does not name is the exporter's too.
  const bool exporterMade =
      origins[name].kind == "constant" ||
      (origins[name].kind == "initializer" && exporterMeta.present());
  if (exporterMade && info.isInitializer && info.tensor &&
      !hasNoData(*info.tensor) && info.type.hasStaticShape() &&
      info.type.getNumElements() == 1 && info.type.getElementType().isF32()) {
    std::unique_ptr<llvm::MemoryBuffer> file;
    FailureOr<ArrayRef<char>> bytes = readBytes(info, file);
    if (failed(bytes))
      return failure();
    float value;
    std::memcpy(&value, bytes->data(), sizeof(value));
    origins.erase(name);
    info.value = ConstantOp::create(
        builder, NameLoc::get(builder.getStringAttr(name)), info.type,
        DenseElementsAttr::get(info.type, value));
    return info.value;
  }
  if (origins[name].layout == "rows") {
    FailureOr<Value> row = broadcastRow(info, name, loc);
    if (failed(row))
      return failure();
    if (*row) {
      info.value = *row;
      return *row;
    }
  }
  WeightInfo entry;
  entry.name = name;
  entry.dtype = *getWeightDType(info.dtype);
  entry.shape.assign(info.type.getShape().begin(), info.type.getShape().end());
  entry.origin = info.isInitializer ? WeightInfo::Origin::Initializer
                                    : WeightInfo::Origin::Constant;
  if (c) {
    entry.bytes = weights.own(c->toBytes());
  } else if (info.tensor && info.isInitializer && hasNoData(*info.tensor) &&
             entry.getNumElements() > 0) {
    entry.shapesOnly = true;
  } else if (info.tensor) {
    auto data = getTensorData(*info.tensor);
    if (failed(data))
      return failure();
    entry.bytes = data->bytes;
    entry.externalPath = data->path;
    entry.offset = data->offset;
  } else {
    return fail("internal error: value '" + info.name + "' has no definition");
  }
  Value w = addWeight(std::move(entry), info.type);
  info.value = w;
  return w;
}

ValueInfo &GraphImporter::asReadBy(const onnx::NodeProto &node,
                                   StringRef input, ValueInfo &info) {
  if (!info.isInitializer || !info.tensor || !info.parameterName.empty() ||
      !exporterMeta.present())
    return info;
  std::optional<std::string> merged = exporterMeta.mergedParameter(node, input);
  if (!merged) {
    if (auto alias = exporterMeta.moduleAlias(node, input))
      addAlias(info.tensor->name(), *alias);
    return info;
  }
  std::shared_ptr<ValueInfo> &slot = mergedParameters[*merged];
  if (!slot) {
    slot = std::make_shared<ValueInfo>(info);
    slot->parameterName = *merged;
    slot->value = Value();
  }
  return *slot;
}

WeightOrigin GraphImporter::originOf(const ValueInfo &info,
                                     StringRef name) const {
  if (!info.isInitializer)
    return {"constant", "a Constant node, or computed from constants at import"};
  if (auto o = exporterMeta.recorded(name))
    return *o;
  if (!info.parameterName.empty()) {
    std::string from = info.tensor ? info.tensor->name() : "";
    if (mergedParameters.count(name))
      return {"parameter", "torch.export PARAMETER that the exporter merged "
                           "into '" + from + "' (equal contents); its "
                           "readers' FX nodes name it"};
    return {"initializer",
            "the exporter's Identity of '" + from + "' (equal contents)"};
  }
  if (auto o = exporterMeta.origin(name))
    return *o;
  if (auto p = legacyTransposedParameter(name)) {
    auto source = exporterMeta.recorded(*p);
    if (!exporterMeta.hasRecord() || (source && source->kind == "parameter"))
      return {"parameter", "folded by the exporter from " + *p, *p,
              info.type.getRank() == 2 ? "transposed" : ""};
    if (source)
      return {source->kind, "folded by the exporter from " + *p + ", " +
                                source->detail};
  }
  if (exporterMeta.hasRecord())
    return {"constant", "no parameter or buffer of the torch.nn.Module "
                        "(tessel.export): a value the exporter folded"};
  return {"initializer", ""};
}

Value GraphImporter::addWeight(WeightInfo entry, RankedTensorType type) {
  StringAttr name = builder.getStringAttr(entry.name);
  weights.add(std::move(entry));
  Value w = WeightOp::create(builder, NameLoc::get(name), type, name);
  weightOps[name.getValue()] = w;
  return w;
}

FailureOr<Value> GraphImporter::broadcastRow(ValueInfo &info, StringRef name,
                                             Location loc) {
  ArrayRef<int64_t> shape = info.type.getShape();
  if (!info.tensor || hasNoData(*info.tensor) || !isFloatDType(info.dtype) ||
      shape.size() < 2 || !info.type.hasStaticShape() || shape.back() < 1)
    return Value();
  const size_t width = getByteWidth(*getWeightDType(info.dtype));
  const size_t rowBytes = size_t(shape.back()) * width;
  const size_t rows = size_t(info.type.getNumElements()) / size_t(shape.back());
  if (rows < 2)
    return Value();
  std::unique_ptr<llvm::MemoryBuffer> file;
  auto bytes = readBytes(info, file);
  if (failed(bytes))
    return failure();
  if (bytes->size() != rows * rowBytes)
    return Value();
  for (size_t r = 1; r < rows; ++r)
    if (std::memcmp(bytes->data(), bytes->data() + r * rowBytes, rowBytes))
      return Value();
  bool uniform = true;
  for (size_t k = 1; uniform && k < size_t(shape.back()); ++k)
    uniform = std::memcmp(bytes->data(), bytes->data() + k * width, width) == 0;
  if (uniform)
    return Value();
  WeightOrigin origin = origins[name];
  origins.erase(name);
  std::string rowName = (name + ".row").str();
  origin.detail = "one row of " + origin.parameter + " that the exporter " +
                  "folded into '" + name.str() + "' at every position: " +
                  "trained once, on the sum of their gradients";
  origins[rowName] = origin;
  SmallVector<int64_t> rowShape(shape.size(), 1);
  rowShape.back() = shape.back();
  WeightInfo entry;
  entry.name = rowName;
  entry.dtype = *getWeightDType(info.dtype);
  entry.shape.assign(rowShape.begin(), rowShape.end());
  entry.origin = WeightInfo::Origin::Initializer;
  entry.bytes = weights.own(
      std::vector<char>(bytes->data(), bytes->data() + rowBytes));
  Value w = addWeight(std::move(entry), RankedTensorType::get(
                                           rowShape, info.type.getElementType()));
  tiedCopies[name] = {rowName, "expand"};
  return ExpandOp::create(builder, loc, info.type, w).getResult();
}

void GraphImporter::setParameterNames(ModuleOp module) {
  // tessel.export's ties: the second name joins the weight that holds the
  // first (under its name, or as the parameter a folded copy holds).
  for (const auto &[second, first] : exporterMeta.recordedTies()) {
    if (weightOps.count(first)) {
      addAlias(first, second);
      continue;
    }
    for (const auto &entry : origins)
      if (entry.getValue().parameter == first)
        addAlias(entry.getKey(), second);
  }
  SmallVector<NamedAttribute> names;
  for (const auto &entry : origins) {
    const WeightOrigin &o = entry.getValue();
    auto it = aliases.find(entry.getKey());
    if (o.parameter.empty() && it == aliases.end())
      continue;
    SmallVector<NamedAttribute> fields;
    if (!o.parameter.empty())
      fields.push_back(builder.getNamedAttr(
          "parameter", builder.getStringAttr(o.parameter)));
    if (!o.parameter.empty() && !o.layout.empty())
      fields.push_back(
          builder.getNamedAttr("layout", builder.getStringAttr(o.layout)));
    if (it != aliases.end())
      fields.push_back(builder.getNamedAttr(
          "aliases", builder.getStrArrayAttr(SmallVector<StringRef>(
                         it->second.begin(), it->second.end()))));
    names.push_back(builder.getNamedAttr(entry.getKey(),
                                         builder.getDictionaryAttr(fields)));
  }
  if (!names.empty())
    module->setAttr(TesselDialect::kParameterNamesAttrName,
                    builder.getDictionaryAttr(names));
  SmallVector<NamedAttribute> copies;
  for (const auto &entry : tiedCopies)
    copies.push_back(builder.getNamedAttr(
        entry.getKey(), builder.getStrArrayAttr({entry.getValue().first,
                                                 entry.getValue().second})));
  if (!copies.empty())
    module->setAttr(TesselDialect::kTiedCopiesAttrName,
                    builder.getDictionaryAttr(copies));
}

std::optional<std::string>
GraphImporter::legacyTransposedParameter(StringRef name) const {
  if (!name.starts_with("onnx::MatMul_") && !name.starts_with("onnx::Gemm_"))
    return std::nullopt;
  auto it = readers.find(name);
  if (it == readers.end() || it->second.size() != 1)
    return std::nullopt;
  // "/model/layers.0/self_attn/q_proj/MatMul" -> model.layers.0.self_attn.q_proj
  StringRef node = it->second.front()->name();
  if (!node.consume_front("/"))
    return std::nullopt;
  StringRef scope = node.rsplit('/').first;
  if (scope.empty() || scope == node)
    return std::nullopt;
  std::string dotted = scope.str();
  std::replace(dotted.begin(), dotted.end(), '/', '.');
  return dotted + ".weight";
}

SmallVector<std::string> GraphImporter::tieCandidates(const ValueInfo &info,
                                                      StringRef name) const {
  SmallVector<std::string> out;
  if (auto source = exporterMeta.foldedFromOne(name)) {
    out.push_back(*source);
    return out;
  }
  if (!graph || !name.starts_with("onnx::") || info.type.getRank() != 2)
    return out;
  ArrayRef<int64_t> a = info.type.getShape();
  for (const onnx::TensorProto &t : graph->initializer()) {
    if (StringRef(t.name()).starts_with("onnx::") || t.dims_size() != 2 ||
        t.data_type() != info.dtype)
      continue;
    bool same = t.dims(0) == a[0] && t.dims(1) == a[1];
    bool transposed = t.dims(0) == a[1] && t.dims(1) == a[0];
    if (same || transposed)
      out.push_back(t.name());
  }
  return out;
}

FailureOr<Value> GraphImporter::retie(ValueInfo &info,
                                      ArrayRef<std::string> sources,
                                      Location loc) {
  // Ties are found by equal contents: a shapes-only tensor has none.
  if (sources.empty() || !isFloatDType(info.dtype) ||
      (info.tensor && hasNoData(*info.tensor)))
    return Value();
  const size_t width = getByteWidth(*getWeightDType(info.dtype));
  const size_t n = size_t(info.type.getNumElements());
  std::unique_ptr<llvm::MemoryBuffer> mineFile;
  auto mine = readBytes(info, mineFile);
  if (failed(mine))
    return failure();
  if (mine->size() != n * width)
    return Value();
  // Equal contents tie only where they cannot be chance: a tensor whose
  // elements are all equal (ones, zeros) is left alone.
  bool uniform = true;
  for (size_t k = 1; uniform && k < n; ++k)
    uniform = std::memcmp(mine->data(), mine->data() + k * width, width) == 0;
  if (uniform)
    return Value();
  ArrayRef<int64_t> a = info.type.getShape();
  for (const std::string &source : sources) {
    ValueInfo *src = lookup(source);
    if (!src || !src->isInitializer || !src->tensor ||
        !src->parameterName.empty() || src->dtype != info.dtype)
      continue;
    ArrayRef<int64_t> b = src->type.getShape();
    const bool same = a == b;
    const bool transposed =
        a.size() == 2 && b.size() == 2 && a[0] == b[1] && a[1] == b[0];
    if (!same && !transposed)
      continue;
    std::unique_ptr<llvm::MemoryBuffer> theirFile;
    auto theirs = readBytes(*src, theirFile);
    if (failed(theirs))
      return failure();
    if (theirs->size() != n * width)
      continue;
    bool equal = true;
    if (same) {
      equal = std::memcmp(mine->data(), theirs->data(), n * width) == 0;
    } else {
      for (int64_t i = 0; equal && i < a[0]; ++i)
        for (int64_t j = 0; equal && j < a[1]; ++j)
          equal = std::memcmp(mine->data() + (i * a[1] + j) * width,
                              theirs->data() + (j * a[0] + i) * width,
                              width) == 0;
    }
    if (!equal)
      continue;
    FailureOr<Value> p = materialize(*src, loc);
    if (failed(p))
      return p;
    const std::string &weight = src->tensor->name();
    tiedCopies[info.name] = {weight, same ? "" : "transposed"};
    // The copy's own parameter name (the TorchScript exporter's
    // onnx::MatMul_N read by /lm_head/MatMul: lm_head.weight) is the tie's
    // second name.
    if (auto p2 = legacyTransposedParameter(info.name))
      addAlias(weight, *p2);
    if (same)
      return p;
    return TransposeOp::create(builder,
                               NameLoc::get(builder.getStringAttr(info.name)),
                               info.type, *p, builder.getDenseI64ArrayAttr({1, 0}))
        .getResult();
  }
  return Value();
}

/// How PyTorch's exporters avoid writing `opType` (an ai.onnx op Tessel
/// does not import), or "" when no option of theirs does.
static StringRef exporterHint(StringRef opType) {
  // torch.onnx.export(dynamo=True)'s torchlib writes split and chunk
  // through sequences (SplitToSequence, SequenceAt: imported); its optimizer
  // (optimize=True, the default) rewrites them into Split and plain values.
  // TorchScript's exporter writes a Python list built in a loop so too
  // (MViT's pooling: a Loop over a sequence).
  if (llvm::is_contained({"SequenceEmpty", "SequenceInsert", "SequenceErase"},
                         opType))
    return "torch.onnx.export writes it for split and chunk with "
           "dynamo=True and optimize=False, and for a Python list built in "
           "a loop with dynamo=False; export with dynamo=True and "
           "optimize=True (the defaults)";
  // Random ops: stochastic depth (drop_path) in training mode, sampling.
  if (llvm::is_contained({"RandomUniformLike", "RandomNormalLike",
                          "RandomUniform", "RandomNormal", "Bernoulli",
                          "Multinomial"},
                         opType))
    return "a random op, as stochastic depth (drop_path) writes in training "
           "mode: Tessel's programs are deterministic; export the model in "
           "eval mode, or with its drop-path and dropout rates 0 to train it";
  if (opType == "NonZero")
    return "its output's shape depends on the data (masked indexing, "
           "SpecAugment's masks in training mode, a mixture of experts' "
           "routing loop); Tessel compiles static shapes: export in eval "
           "mode, or a form without it (transformers' experts: "
           "set_experts_implementation(\"batched_mm\"))";
  if (opType == "ATen")
    return "torch.onnx.export(dynamo=False) writes it with "
           "operator_export_type=ONNX_ATEN_FALLBACK; export with the default "
           "ONNX";
  return "";
}

LogicalResult GraphImporter::checkOperators(const onnx::GraphProto &graph) {
  // Every unsupported operator at once: "Foo in node 'a', Bar in nodes ...".
  std::vector<std::pair<std::string, std::vector<std::string>>> unsupported;
  for (int k = 0; k < graph.node_size(); ++k) {
    const onnx::NodeProto &node = graph.node(k);
    std::string nodeName =
        node.name().empty() ? "#" + std::to_string(k) : node.name();
    std::string key = node.op_type();
    if (!node.domain().empty() && node.domain() != "ai.onnx") {
      int oldest = 0;
      if (lookupCustomOp(node, domainOpsets, &oldest))
        continue;
      key = node.domain() + "." + node.op_type();
      if (oldest)
        key += " (needs opset " + std::to_string(oldest) + " of " +
               node.domain() + ")";
    } else {
      int oldest = 0;
      if (lookupOpImporter(node.op_type(), opset, &oldest))
        continue;
      if (oldest)
        key += " (needs opset " + std::to_string(oldest) + ")";
    }
    auto it = llvm::find_if(unsupported,
                            [&](const auto &entry) { return entry.first == key; });
    if (it == unsupported.end())
      unsupported.push_back({key, {nodeName}});
    else
      it->second.push_back(nodeName);
  }
  if (unsupported.empty())
    return success();
  std::string message = "unsupported ONNX operator" +
                        std::string(unsupported.size() > 1 ? "s" : "") +
                        " (opset " + std::to_string(opset) + "): ";
  bool first = true;
  for (auto &[op, nodes] : unsupported) {
    message += (first ? "" : "; ") + op + " in node" +
               (nodes.size() > 1 ? "s " : " ");
    first = false;
    for (size_t k = 0; k < nodes.size(); ++k) {
      if (k == 8) {
        message += " and " + std::to_string(nodes.size() - 8) + " more";
        break;
      }
      message += (k ? ", '" : "'") + nodes[k] + "'";
    }
    // The op type of an ai.onnx key ("Foo" or "Foo (needs opset N)").
    if (StringRef hint = exporterHint(StringRef(op).split(' ').first);
        !hint.empty())
      message += " (" + hint.str() + ")";
  }
  return fail(message);
}

FailureOr<RankedTensorType>
GraphImporter::getInputType(const onnx::ValueInfoProto &input,
                            const OnnxImportOptions &options, int32_t &dtype) {
  const std::string &name = input.name();
  if (!input.type().has_tensor_type())
    return fail("graph input '" + name + "' is not a tensor");
  const auto &tt = input.type().tensor_type();
  dtype = tt.elem_type();
  Type elemType = getElementType(ctx, dtype);
  if (!elemType)
    return fail("graph input '" + name + "' has element type " +
                getDTypeName(dtype) + ", which Tessel does not support");
  auto given = options.inputShapes.find(name);
  const SmallVector<int64_t> *fixed =
      given == options.inputShapes.end() ? nullptr : &given->second;
  std::string flag = "--shape " + name + "=";
  if (!tt.has_shape()) {
    if (!fixed)
      return fail("graph input '" + name +
                  "' has no shape; give it with --shape " + name +
                  "=D0xD1x...");
    if (!checkedByteSize(*fixed, 8))
      return fail(describeOversizedTensor("graph input '" + name + "'", dtype,
                                          *fixed));
    return RankedTensorType::get(*fixed, elemType);
  }
  const auto &dims = tt.shape().dim();
  if (fixed && int64_t(fixed->size()) != dims.size())
    return fail(flag + llvm::join(llvm::map_range(*fixed, [](int64_t d) {
                                    return std::to_string(d);
                                  }),
                                  "x") +
                " has rank " + Twine(fixed->size()) + " but graph input '" +
                name + "' has rank " + Twine(dims.size()));
  SmallVector<int64_t> shape;
  for (int k = 0; k < dims.size(); ++k) {
    const auto &dim = dims.Get(k);
    bool isStatic = dim.has_dim_value() && dim.dim_value() > 0;
    if (fixed) {
      if (isStatic && dim.dim_value() != (*fixed)[k])
        return fail("--shape for '" + name + "' sets dim " + Twine(k) +
                    " to " + Twine((*fixed)[k]) + " but the model fixes it to " +
                    Twine(dim.dim_value()));
      shape.push_back((*fixed)[k]);
      continue;
    }
    if (!isStatic) {
      std::string what = dim.has_dim_param() && !dim.dim_param().empty()
                             ? " ('" + dim.dim_param() + "')"
                             : "";
      return fail("graph input '" + name + "' has a dynamic dim " + Twine(k) +
                  what + "; fix its shape with --shape " + name +
                  "=D0xD1x... (" + Twine(dims.size()) + " dims)");
    }
    shape.push_back(dim.dim_value());
  }
  if (!checkedByteSize(shape, 8))
    return fail(describeOversizedTensor("graph input '" + name + "'", dtype,
                                        shape));
  return RankedTensorType::get(shape, elemType);
}

LogicalResult GraphImporter::importNode(const onnx::NodeProto &node,
                                        unsigned index) {
  std::string nodeName =
      node.name().empty() ? "#" + std::to_string(index) : node.name();
  for (const std::string &in : node.input())
    if (!in.empty() && !lookup(in))
      return fail("node '" + nodeName + "' (" + node.op_type() + "): input '" +
                  in +
                  "' is not defined by a graph input, an initializer or an "
                  "earlier node");
  if (!node.domain().empty() && node.domain() != "ai.onnx") {
    const ::tessel::ext::CustomOp *def = lookupCustomOp(node, domainOpsets);
    if (!def)
      return fail("node '" + nodeName + "': unsupported operator " +
                  node.domain() + "." + node.op_type());
    NodeContext c(*this, node, NameLoc::get(builder.getStringAttr(nodeName)));
    return importCustomOp(c, *def);
  }
  const OpImporter *imp = lookupOpImporter(node.op_type(), opset);
  if (!imp)
    return fail("node '" + nodeName + "': unsupported operator " +
                node.op_type());
  if (auto bad = checkNodeArity(node, opset))
    return fail("node '" + nodeName + "' (" + node.op_type() + "): " + *bad);
  // Sequences: input 0 of the ops that read one, and nothing else.
  const bool readsSequence = llvm::is_contained(
      {"SequenceAt", "SequenceLength", "ConcatFromSequence"}, node.op_type());
  for (int k = 0; k < node.input_size(); ++k) {
    if (node.input(k).empty())
      continue;
    const bool isSequence = lookup(node.input(k))->sequence != nullptr;
    if (isSequence != (readsSequence && k == 0))
      return fail("node '" + nodeName + "' (" + node.op_type() + "): input " +
                  std::to_string(k) + " ('" + node.input(k) + "') " +
                  (isSequence ? "is a sequence, which only SequenceAt, "
                                "SequenceLength and ConcatFromSequence read"
                              : "must be a sequence"));
  }
  Location loc = NameLoc::get(builder.getStringAttr(nodeName));
  NodeContext c(*this, node, loc);
  if (node.op_type() != "BatchNormalization")
    if (std::optional<std::string> bn = c.trainingBatchNorm())
      return c.error("the exporter fused the training-mode batch norm '" + *bn +
                     "' into this node (onnxscript's FuseBatchNormIntoConv), "
                     "so training would use its running statistics, not the "
                     "batch's: export with optimize=False (Tessel restores "
                     "the batch norm's training mode) or with dynamo=False "
                     "and training=torch.onnx.TrainingMode.TRAINING");
  if (failed(imp->fn(c)))
    return failure();
  for (int k = 0; k < node.output_size(); ++k) {
    ValueInfo *out = node.output(k).empty() ? nullptr : lookup(node.output(k));
    if (c.isOutputUsed(k) && !out)
      return c.error("output " + Twine(k) + " ('" + node.output(k) +
                     "') is used but Tessel does not produce it");
    // Shapes computed from the model's values (Expand, ConstantOfShape,
    // Tile, ...): every later size is computed from them.
    if (out && out->type && out->type.hasStaticShape() &&
        !checkedByteSize(out->type.getShape(), 8))
      return c.error(describeOversizedTensor(
          "output " + Twine(k) + " ('" + node.output(k) + "')", out->dtype,
          out->type.getShape()));
  }
  return success();
}

LogicalResult GraphImporter::run(const onnx::ModelProto &model,
                                 const OnnxImportOptions &options,
                                 ModuleOp module) {
  training = options.training;
  // The ai.onnx opset.
  bool found = false;
  for (const auto &o : model.opset_import())
    if (o.domain().empty() || o.domain() == "ai.onnx") {
      opset = o.version();
      found = true;
    } else {
      domainOpsets[o.domain()] = o.version();
    }
  if (!found)
    return fail("the model imports no ai.onnx opset");
  if (opset < kMinOnnxOpset || opset > kMaxOnnxOpset)
    return fail("opset " + Twine(opset) + " is not supported; Tessel imports "
                "ai.onnx opsets " + Twine(kMinOnnxOpset) + " to " +
                Twine(kMaxOnnxOpset));
  if (!model.has_graph())
    return fail("the model has no graph");
  const onnx::GraphProto &graph = model.graph();

  // Every unsupported operator at once, before anything else complains.
  if (failed(checkOperators(graph)))
    return failure();
  if (auto error = exporterMeta.read(model))
    return fail(*error);

  // libonnx's checker knows opsets up to its own release; newer models are
  // checked by the importer alone. External data is checked below, relative
  // to the model's directory, so skip the checker for such models.
  bool hasExternal = llvm::any_of(graph.initializer(), [](const auto &t) {
    return t.data_location() == onnx::TensorProto::EXTERNAL;
  });
  // A shapes-only model's initializers hold no values, which the checker
  // refuses; the importer checks what it reads.
  bool shapesOnly = llvm::any_of(graph.initializer(), [](const auto &t) {
    return hasNoData(t);
  });
  // Nor does it take a newer IR version (onnx >= 1.16 writes 10 by default,
  // with any opset): those too are checked by the importer alone.
  const bool newerIr = model.ir_version() > onnx::Version::IR_VERSION;
  if (opset <= getCheckerMaxOpset() && !hasExternal && !shapesOnly && !newerIr)
    if (auto message = checkOnnxModel(model))
      return fail("invalid ONNX model: " + *message);

  // Names given to --shape must be graph inputs.
  for (const auto &entry : options.inputShapes) {
    bool isInput = llvm::any_of(graph.input(), [&](const auto &in) {
      return in.name() == entry.getKey();
    });
    if (!isInput) {
      std::vector<std::string> names;
      for (const auto &in : graph.input())
        names.push_back("'" + in.name() + "'");
      return fail("--shape names '" + entry.getKey() +
                  "', which is not a graph input (inputs: " +
                  llvm::join(names, ", ") + ")");
    }
  }

  for (const auto &node : graph.node())
    for (const std::string &in : node.input())
      if (!in.empty()) {
        ++useCounts[in];
        readers[in].push_back(&node);
      }
  this->graph = &graph;
  for (const auto &out : graph.output())
    ++useCounts[out.name()];

  for (const auto &init : graph.initializer())
    if (failed(defineTensor(init, init.name(), /*isInitializer=*/true)))
      return failure();

  // Inputs that are not initializers (old exporters list both).
  SmallVector<Type> argTypes;
  SmallVector<const onnx::ValueInfoProto *> args;
  SmallVector<int32_t> argDTypes;
  for (const auto &input : graph.input()) {
    if (values.count(input.name()))
      continue;
    int32_t dtype;
    auto type = getInputType(input, options, dtype);
    if (failed(type))
      return failure();
    argTypes.push_back(*type);
    args.push_back(&input);
    argDTypes.push_back(dtype);
  }

  builder.setInsertionPointToEnd(module.getBody());
  auto func = func::FuncOp::create(
      builder, NameLoc::get(builder.getStringAttr(graph.name())), "main",
      builder.getFunctionType(argTypes, {}));
  Block *entry = func.addEntryBlock();
  builder.setInsertionPointToStart(entry);
  SmallVector<Attribute> inputNames;
  for (size_t k = 0; k < args.size(); ++k) {
    auto info = std::make_shared<ValueInfo>();
    info->name = args[k]->name();
    info->dtype = argDTypes[k];
    info->type = cast<RankedTensorType>(argTypes[k]);
    info->value = entry->getArgument(k);
    // The ONNX input name as the argument's location: printed with
    // --mlir-print-debuginfo, and as its SSA name with
    // --mlir-use-nameloc-as-prefix (%input_ids).
    entry->getArgument(k).setLoc(
        NameLoc::get(builder.getStringAttr(args[k]->name())));
    values[info->name] = std::move(info);
    inputNames.push_back(builder.getStringAttr(args[k]->name()));
  }

  for (int k = 0; k < graph.node_size(); ++k)
    if (failed(importNode(graph.node(k), k)))
      return failure();

  SmallVector<Value> results;
  SmallVector<Attribute> outputNames;
  for (const auto &out : graph.output()) {
    ValueInfo *info = lookup(out.name());
    if (!info)
      return fail("graph output '" + out.name() + "' is not defined");
    if (info->sequence)
      return fail("graph output '" + out.name() +
                  "' is a sequence; Tessel's outputs are tensors");
    auto value = materialize(*info, func.getLoc());
    if (failed(value))
      return failure();
    // The model's declared type, where static, must agree with ours.
    if (out.type().has_tensor_type()) {
      const auto &tt = out.type().tensor_type();
      if (tt.elem_type() != 0 && tt.elem_type() != info->dtype)
        return fail("graph output '" + out.name() + "' is declared " +
                    getDTypeName(tt.elem_type()) + " but computes " +
                    getDTypeName(info->dtype));
      if (tt.has_shape()) {
        ArrayRef<int64_t> shape = info->type.getShape();
        bool mismatch = tt.shape().dim_size() != int(shape.size());
        for (int d = 0; !mismatch && d < tt.shape().dim_size(); ++d) {
          const auto &dim = tt.shape().dim(d);
          if (dim.has_dim_value() && dim.dim_value() > 0 &&
              dim.dim_value() != shape[d])
            mismatch = true;
        }
        if (mismatch) {
          SmallVector<int64_t> declared;
          for (const auto &dim : tt.shape().dim())
            declared.push_back(dim.has_dim_value() && dim.dim_value() > 0
                                   ? dim.dim_value()
                                   : ShapedType::kDynamic);
          // torch's TorchScript exporter declares a ceil_mode pooling's
          // output by the formula that counts a last window starting in
          // the end padding, and computes (as ONNX Runtime does) without
          // it: the computed shape stands, and the declaration is named.
          if (ceilModeDrops.empty())
            return fail("graph output '" + out.name() + "' is declared " +
                        formatShape(declared) + " but computes " +
                        formatShape(shape));
          emitWarning(UnknownLoc::get(builder.getContext()))
              << "graph output '" << out.name() << "' is declared "
              << formatShape(declared) << " but computes " << formatShape(shape)
              << ": node '" << ceilModeDrops.front() << "'"
              << (ceilModeDrops.size() > 1 ? " (and others)" : "")
              << " pools with ceil_mode, whose last window would start in "
                 "the end padding and is dropped, as PyTorch and ONNX (since "
                 "opset 19) do; the declaration counts it. The computed "
                 "shape stands";
        }
      }
    }
    results.push_back(*value);
    outputNames.push_back(builder.getStringAttr(out.name()));
  }
  func::ReturnOp::create(builder, func.getLoc(), results);
  func.setFunctionType(builder.getFunctionType(argTypes, TypeRange(results)));
  func->setAttr(TesselDialect::kInputNamesAttrName, builder.getArrayAttr(inputNames));
  func->setAttr(TesselDialect::kOutputNamesAttrName, builder.getArrayAttr(outputNames));
  SmallVector<NamedAttribute> originAttrs;
  for (const auto &entry : origins)
    if (entry.getValue().kind != "initializer" || !entry.getValue().detail.empty())
      originAttrs.push_back(builder.getNamedAttr(
        entry.getKey(),
        entry.getValue().parameter.empty()
            ? builder.getStrArrayAttr({entry.getValue().kind, entry.getValue().detail})
            : builder.getStrArrayAttr({entry.getValue().kind, entry.getValue().detail,
                                       entry.getValue().parameter})));
  if (!originAttrs.empty())
    module->setAttr(TesselDialect::kWeightOriginsAttrName,
                    builder.getDictionaryAttr(originAttrs));
  setParameterNames(module);
  // tessel.export's parameters that no weight holds: the graph does not
  // read them (an unused module), or the exporter merged what reads them
  // into an equal computation. Say so: they will not train.
  if (exporterMeta.hasRecord()) {
    llvm::StringSet<> held;
    for (const auto &entry : origins) {
      held.insert(entry.getKey());
      if (!entry.getValue().parameter.empty())
        held.insert(entry.getValue().parameter);
    }
    std::vector<std::string> missing;
    for (const std::string &p : exporterMeta.recordedTrainable())
      if (!held.contains(p))
        missing.push_back(p);
    if (!missing.empty())
      emitWarning(UnknownLoc::get(builder.getContext()))
          << missing.size() << " of the module's parameters (tessel.export) "
          << "are not in the exported graph, so they will not train: "
          << llvm::join(llvm::ArrayRef(missing).take_front(6), ", ")
          << (missing.size() > 6 ? ", ..." : "")
          << " (the outputs do not use them, or the exporter merged the "
             "computation that reads them with an equal one: "
             "docs/training.md)";
  }
  return success();
}

//===----------------------------------------------------------------------===//
// NodeContext
//===----------------------------------------------------------------------===//

NodeContext::NodeContext(GraphImporter &importer, const onnx::NodeProto &node,
                         Location loc)
    : importer(importer), node(node), loc(loc) {}

OpBuilder &NodeContext::getBuilder() { return importer.builder; }
MLIRContext *NodeContext::getContext() { return importer.ctx; }

ValueInfo &NodeContext::getInput(unsigned i) {
  // An input the node does not have (models are untrusted; importers check
  // hasInput() first): an undefined value, which nothing can materialise.
  if (!hasInput(i)) {
    importer.missingInput = ValueInfo();
    return importer.missingInput;
  }
  return importer.asReadBy(node, node.input(i), *importer.lookup(node.input(i)));
}

const ConstTensor *NodeContext::getConst(unsigned i) {
  return importer.getConst(getInput(i));
}

std::optional<int64_t> NodeContext::embeddingPaddingIdx() {
  if (!importer.exporterMeta.present())
    return std::nullopt;
  return importer.exporterMeta.embeddingPaddingIdx(node);
}

std::optional<std::string> NodeContext::trainingBatchNorm() {
  if (!importer.training || !importer.exporterMeta.present())
    return std::nullopt;
  return importer.exporterMeta.trainingBatchNorm(node);
}

const ConstTensor *NodeContext::getOperandConst(unsigned i) {
  return importer.getConst(getInput(i), /*evenParameters=*/true);
}

bool NodeContext::allInputsConst() {
  for (unsigned i = 0; i < getNumInputs(); ++i)
    if (hasInput(i) && !getConst(i))
      return false;
  return true;
}

void NodeContext::noteCeilModeDrop() {
  importer.ceilModeDrops.push_back(cast<NameLoc>(loc).getName().str());
}

FailureOr<Value> NodeContext::droppedBias(int64_t n, Type elementType) {
  std::optional<std::string> name = importer.exporterMeta.droppedBias(node);
  if (!name)
    return Value();
  if (Value w = importer.weightOps.lookup(*name))
    return w;
  auto type = RankedTensorType::get({n}, elementType);
  WeightInfo entry;
  entry.name = *name;
  entry.dtype = elementType.isBF16()  ? WeightDType::BF16
                : elementType.isF16() ? WeightDType::F16
                                      : WeightDType::F32;
  entry.shape = {n};
  entry.bytes = importer.weights.own(
      std::vector<char>(size_t(n) * getByteWidth(entry.dtype), 0));
  importer.origins[*name] = {
      "parameter", "torch.export PARAMETER read as the bias of node '" +
                       node.name() + "', which the exporter's optimizer "
                       "dropped (its value was zero): restored as zeros"};
  return importer.addWeight(std::move(entry), type);
}

FailureOr<Value> NodeContext::getValue(unsigned i) {
  return importer.materialize(getInput(i), loc);
}

FailureOr<SmallVector<int64_t>> NodeContext::getConstInts(unsigned i,
                                                          StringRef what) {
  const ConstTensor *c = getConst(i);
  if (!c) {
    if (!importer.getError().empty())
      return failure();
    return error(what + " ('" + node.input(i) +
                 "') must be known at import time; it depends on values "
                 "computed at run time (fix dynamic input dims with --shape)");
  }
  if (c->isFloat())
    return error(what + " ('" + node.input(i) + "') must be an integer tensor");
  return c->toInts();
}

const onnx::AttributeProto *NodeContext::getAttr(StringRef name) const {
  for (const auto &a : node.attribute())
    if (a.name() == name)
      return &a;
  return nullptr;
}

int64_t NodeContext::getInt(StringRef name, int64_t dflt) const {
  const auto *a = getAttr(name);
  return a ? a->i() : dflt;
}

float NodeContext::getFloat(StringRef name, float dflt) const {
  const auto *a = getAttr(name);
  return a ? a->f() : dflt;
}

std::string NodeContext::getString(StringRef name, StringRef dflt) const {
  const auto *a = getAttr(name);
  return a ? a->s() : dflt.str();
}

std::optional<SmallVector<int64_t>> NodeContext::getInts(StringRef name) const {
  const auto *a = getAttr(name);
  if (!a)
    return std::nullopt;
  return SmallVector<int64_t>(a->ints().begin(), a->ints().end());
}

bool NodeContext::isOutputUsed(unsigned i) const {
  return int(i) < node.output_size() && !node.output(i).empty() &&
         importer.useCounts.lookup(node.output(i)) > 0;
}

void NodeContext::setOutput(unsigned i, Value value, int32_t dtype) {
  if (int(i) >= node.output_size() || node.output(i).empty())
    return;
  std::shared_ptr<ValueInfo> info = makeInfo(value, dtype);
  info->name = node.output(i);
  importer.values[info->name] = std::move(info);
}

void NodeContext::setConst(unsigned i, ConstTensor value) {
  if (int(i) >= node.output_size() || node.output(i).empty())
    return;
  auto info = std::make_shared<ValueInfo>();
  info->name = node.output(i);
  info->dtype = value.dtype;
  info->type = RankedTensorType::get(value.shape,
                                     getElementType(getContext(), value.dtype));
  info->cst = std::make_shared<ConstTensor>(std::move(value));
  importer.values[info->name] = std::move(info);
}

const NodeContext::Elements *NodeContext::getSequence(unsigned i) {
  if (!hasInput(i))
    return nullptr;
  const ValueInfo *info = importer.lookup(node.input(i));
  return info && info->sequence ? info->sequence.get() : nullptr;
}

std::shared_ptr<ValueInfo> NodeContext::getInputInfo(unsigned i) {
  return hasInput(i) ? importer.values[node.input(i)] : nullptr;
}

std::shared_ptr<ValueInfo> NodeContext::makeInfo(Value value, int32_t dtype) {
  auto info = std::make_shared<ValueInfo>();
  info->dtype = dtype;
  info->type = cast<RankedTensorType>(value.getType());
  info->value = value;
  return info;
}

FailureOr<Value> NodeContext::getValue(ValueInfo &element) {
  return importer.materialize(element, loc);
}

void NodeContext::setSequence(unsigned i, Elements elements) {
  if (int(i) >= node.output_size() || node.output(i).empty())
    return;
  auto info = std::make_shared<ValueInfo>();
  info->name = node.output(i);
  info->sequence = std::make_shared<const Elements>(std::move(elements));
  importer.values[info->name] = std::move(info);
}

void NodeContext::setOutputInfo(unsigned i, std::shared_ptr<ValueInfo> info) {
  if (int(i) >= node.output_size() || node.output(i).empty())
    return;
  importer.values[node.output(i)] = std::move(info);
}

void NodeContext::forward(unsigned i, unsigned j) {
  if (int(i) >= node.output_size() || node.output(i).empty())
    return;
  importer.values[node.output(i)] = importer.values[node.input(j)];
}

void NodeContext::forwardParameter(unsigned i, unsigned j) {
  forward(i, j);
  if (int(i) >= node.output_size() || node.output(i).empty())
    return;
  auto &out = importer.values[node.output(i)];
  if (!out || !out->isInitializer || !out->tensor)
    return;
  auto param = std::make_shared<ValueInfo>(*out);
  param->parameterName = node.output(i);
  param->value = nullptr;
  out = std::move(param);
}

LogicalResult NodeContext::setTensor(unsigned i,
                                     const onnx::TensorProto &tensor) {
  if (int(i) >= node.output_size() || node.output(i).empty())
    return success();
  return importer.defineTensor(tensor, node.output(i), /*isInitializer=*/false);
}

FailureOr<Value> NodeContext::materialize(const ConstTensor &value,
                                          StringRef name) {
  ValueInfo info;
  info.name = name.str();
  info.dtype = value.dtype;
  info.type = RankedTensorType::get(value.shape,
                                    getElementType(getContext(), value.dtype));
  info.cst = std::make_shared<ConstTensor>(value);
  return importer.materialize(info, loc);
}

LogicalResult NodeContext::error(const Twine &message) {
  std::string name = cast<NameLoc>(loc).getName().str();
  return importer.fail("node '" + name + "' (" + node.op_type() +
                       "): " + message);
}

FailureOr<int64_t> NodeContext::normalizeAxis(int64_t axis, int64_t rank,
                                              StringRef what) {
  if (axis < -rank || axis >= rank || (rank == 0 && axis != 0))
    return error(what + " " + Twine(axis) + " is out of range for rank " +
                 Twine(rank));
  return axis < 0 ? axis + rank : axis;
}

FailureOr<Operation *> NodeContext::createOp(StringRef name,
                                             ValueRange operands,
                                             ArrayRef<NamedAttribute> attrs,
                                             TypeRange resultTypes,
                                             unsigned numResults) {
  OpBuilder &b = getBuilder();
  bool infer = resultTypes.empty();
  SmallVector<Type> types(resultTypes.begin(), resultTypes.end());
  if (infer)
    types.assign(numResults, b.getNoneType());
  OperationState state(loc, name);
  state.addOperands(operands);
  state.addAttributes(attrs);
  state.addTypes(types);
  Operation *op = b.create(state);
  importer.diagnostics.clear();
  auto fail = [&](StringRef what) -> FailureOr<Operation *> {
    op->erase();
    std::string detail = llvm::join(importer.diagnostics, "; ");
    return error(what + (detail.empty() ? "" : ": " + detail));
  };
  if (infer) {
    SmallVector<Type> inferred;
    auto iface = dyn_cast<InferTypeOpInterface>(op);
    if (!iface ||
        failed(iface.inferReturnTypes(getContext(), loc, op->getOperands(),
                                      op->getRawDictionaryAttrs(),
                                      op->getPropertiesStorage(),
                                      op->getRegions(), inferred)) ||
        inferred.size() != op->getNumResults())
      return fail("cannot infer the type of " + name.str());
    for (auto [result, type] : llvm::zip(op->getResults(), inferred))
      result.setType(type);
  }
  if (failed(mlir::verify(op)))
    return fail("invalid " + name.str());
  return op;
}

Value NodeContext::scalarConstant(double value, Type elemType) {
  auto type = RankedTensorType::get({}, elemType);
  Attribute attr;
  if (auto ft = dyn_cast<FloatType>(elemType)) {
    attr = FloatAttr::get(ft, value);
  } else {
    attr = IntegerAttr::get(elemType, int64_t(value));
  }
  return ConstantOp::create(getBuilder(), loc, type,
                            DenseElementsAttr::get(type, attr));
}

//===----------------------------------------------------------------------===//
// Entry points
//===----------------------------------------------------------------------===//

llvm::Error mlir::tessel::parseInputShape(StringRef spec,
                                          OnnxImportOptions &options) {
  auto bad = [&] {
    return makeError("--shape '" + spec +
                     "': expected NAME=D0xD1x... with positive dims, e.g. "
                     "input_ids=2x32");
  };
  size_t eq = spec.rfind('=');
  if (eq == StringRef::npos || eq == 0)
    return bad();
  StringRef name = spec.take_front(eq), dims = spec.drop_front(eq + 1);
  SmallVector<int64_t> shape;
  if (!dims.empty()) {
    SmallVector<StringRef> parts;
    dims.split(parts, 'x');
    for (StringRef p : parts) {
      int64_t d;
      if (p.getAsInteger(10, d) || d <= 0)
        return bad();
      shape.push_back(d);
    }
  }
  options.inputShapes[name] = std::move(shape);
  return llvm::Error::success();
}

llvm::Expected<ImportedModel>
mlir::tessel::importOnnxBuffer(MLIRContext &context, StringRef bytes,
                               StringRef modelDir, StringRef bufferName,
                               const OnnxImportOptions &options) {
  if (bytes.size() > size_t(INT_MAX))
    return makeError("'" + bufferName +
                     "' is larger than 2 GB; ONNX models that large keep "
                     "their weights in external data files");
  auto model = std::make_shared<onnx::ModelProto>();
  if (!model->ParseFromArray(bytes.data(), int(bytes.size())))
    return makeError("cannot parse '" + bufferName +
                     "' as an ONNX model (malformed or truncated protobuf)");
  if (!model->has_graph() || model->opset_import_size() == 0)
    return makeError("'" + bufferName +
                     "' is not an ONNX model (no graph or no opset; "
                     "truncated?)");

  context.loadDialect<TesselDialect, func::FuncDialect>();
  ImportedModel result;
  result.weights = std::make_unique<WeightTable>();
  result.weights->keepAlive(model);
  OpBuilder b(&context);
  result.module = ModuleOp::create(
      FileLineColLoc::get(b.getStringAttr(bufferName), 0, 0));

  GraphImporter importer(&context, *result.weights, modelDir, bufferName);
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
    // A warning goes on to the caller's handler (the driver's prints it).
    if (diag.getSeverity() == DiagnosticSeverity::Warning)
      return failure();
    importer.diagnostics.push_back(diag.str());
    return success();
  });
  if (failed(importer.run(*model, options, *result.module)) ||
      !importer.getError().empty())
    return makeError(importer.getError());
  importer.diagnostics.clear();
  if (failed(mlir::verify(*result.module)))
    return makeError("the imported module does not verify: " +
                     llvm::join(importer.diagnostics, "; "));
  return result;
}

llvm::Expected<ImportedModel>
mlir::tessel::importOnnxFile(MLIRContext &context, StringRef path,
                             const OnnxImportOptions &options) {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer)
    return makeError("cannot open '" + path +
                     "': " + buffer.getError().message());
  SmallString<256> dir(path);
  llvm::sys::path::remove_filename(dir);
  if (dir.empty())
    dir = ".";
  return importOnnxBuffer(context, (*buffer)->getBuffer(), dir, path, options);
}

llvm::Expected<std::unique_ptr<WeightTable>>
mlir::tessel::readOnnxInitializers(MLIRContext &context, StringRef path) {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer)
    return makeError("cannot open '" + path +
                     "': " + buffer.getError().message());
  StringRef bytes = (*buffer)->getBuffer();
  if (bytes.size() > size_t(INT_MAX))
    return makeError("'" + path +
                     "' is larger than 2 GB; ONNX models that large keep "
                     "their weights in external data files");
  auto model = std::make_shared<onnx::ModelProto>();
  if (!model->ParseFromArray(bytes.data(), int(bytes.size())) ||
      !model->has_graph())
    return makeError("cannot parse '" + path +
                     "' as an ONNX model (malformed or truncated protobuf)");
  SmallString<256> dir(path);
  llvm::sys::path::remove_filename(dir);
  if (dir.empty())
    dir = ".";
  auto table = std::make_unique<WeightTable>();
  table->keepAlive(model);
  GraphImporter importer(&context, *table, dir, path);
  for (const onnx::TensorProto &t : model->graph().initializer()) {
    auto data = importer.getTensorData(t);
    if (failed(data))
      return makeError("'" + path + "': " + importer.getError());
    WeightInfo entry;
    entry.name = t.name();
    entry.dtype = *getWeightDType(t.data_type());
    entry.shape.assign(t.dims().begin(), t.dims().end());
    entry.bytes = data->bytes;
    entry.externalPath = data->path;
    entry.offset = data->offset;
    table->add(std::move(entry));
  }
  return std::move(table);
}
