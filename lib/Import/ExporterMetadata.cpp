//===- ExporterMetadata.cpp - what the exporter recorded of each tensor ---===//

#include "ExporterMetadata.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/JSON.h"

#include <google/protobuf/unknown_field_set.h>
#include <onnx/onnx_pb.h>

namespace mlir::tessel::detail {

namespace {

constexpr llvm::StringLiteral kKindKey =
    "pkg.torch.export.graph_signature.InputSpec.kind";
constexpr llvm::StringLiteral kPlaceholderKey =
    "pkg.torch.onnx.original_node_name";
constexpr llvm::StringLiteral kFoldedFromKey =
    "pkg.onnxscript.optimizer.folded_from";
constexpr llvm::StringLiteral kFxNodeKey = "pkg.torch.onnx.fx_node";
constexpr llvm::StringLiteral kScopesKey = "pkg.torch.onnx.name_scopes";
constexpr llvm::StringLiteral kClassesKey = "pkg.torch.onnx.class_hierarchy";

/// The metadata_props of `m` (field `number` of its message: 4 on a
/// ValueInfoProto, 9 on a NodeProto), whether this libonnx knows the field
/// or keeps it as an unknown field.
std::vector<std::pair<std::string, std::string>>
metadataProps(const google::protobuf::Message &m, int number) {
  std::vector<std::pair<std::string, std::string>> out;
  const google::protobuf::Reflection *r = m.GetReflection();
  if (const auto *f = m.GetDescriptor()->FindFieldByNumber(number);
      f && f->name() == "metadata_props") {
    for (int i = 0; i < r->FieldSize(m, f); ++i) {
      const auto &e = static_cast<const onnx::StringStringEntryProto &>(
          r->GetRepeatedMessage(m, f, i));
      out.emplace_back(e.key(), e.value());
    }
    return out;
  }
  const google::protobuf::UnknownFieldSet &unknown = r->GetUnknownFields(m);
  for (int i = 0; i < unknown.field_count(); ++i) {
    const google::protobuf::UnknownField &f = unknown.field(i);
    if (f.number() != number ||
        f.type() != google::protobuf::UnknownField::TYPE_LENGTH_DELIMITED)
      continue;
    onnx::StringStringEntryProto e;
    if (e.ParseFromString(f.length_delimited()))
      out.emplace_back(e.key(), e.value());
  }
  return out;
}

std::string lookupProp(
    const std::vector<std::pair<std::string, std::string>> &props,
    llvm::StringRef key) {
  for (const auto &[k, v] : props)
    if (k == key)
      return v;
  return "";
}

/// The strings of a Python list literal: "['a', 'b.c']" -> {a, b.c}.
std::vector<std::string> parseList(llvm::StringRef text) {
  std::vector<std::string> out;
  while (true) {
    size_t open = text.find('\'');
    if (open == llvm::StringRef::npos)
      break;
    size_t close = text.find('\'', open + 1);
    if (close == llvm::StringRef::npos)
      break;
    out.push_back(text.slice(open + 1, close).str());
    text = text.drop_front(close + 1);
  }
  return out;
}

/// The FX values a node's `fx_node` text reads: "%y : ... = f(args = (%a,
/// %b), ...)" -> {a, b} (the node's own name, before '=', left out).
std::vector<std::string> fxOperands(llvm::StringRef fx) {
  std::vector<std::string> out;
  size_t eq = fx.find('=');
  if (eq == llvm::StringRef::npos)
    return out;
  llvm::StringRef rest = fx.drop_front(eq);
  while (true) {
    size_t pct = rest.find('%');
    if (pct == llvm::StringRef::npos)
      break;
    rest = rest.drop_front(pct + 1);
    size_t len = 0;
    while (len < rest.size() &&
           (llvm::isAlnum(rest[len]) || rest[len] == '_'))
      ++len;
    if (len)
      out.push_back(rest.take_front(len).str());
    rest = rest.drop_front(len);
  }
  return out;
}

/// The positional arguments of an FX node's text, "args = (a, b, 1)" ->
/// {a, b, 1}, as written (no nesting: a list argument splits too); empty
/// where the text has none.
llvm::SmallVector<llvm::StringRef> fxArgs(llvm::StringRef fx) {
  llvm::SmallVector<llvm::StringRef> parts;
  const size_t args = fx.find("args = (");
  if (args != llvm::StringRef::npos)
    fx.drop_front(args + 8)
        .take_until([](char ch) { return ch == ')'; })
        .split(parts, ", ");
  return parts;
}

llvm::StringRef lastComponent(llvm::StringRef dotted) {
  llvm::StringRef tail = dotted.rsplit('.').second;
  return tail.empty() ? dotted : tail;
}

std::string joinFirst(llvm::ArrayRef<std::string> names, size_t max) {
  return llvm::join(names.take_front(max), ", ") +
         (names.size() > max ? ", ..." : "");
}

/// torch.export's placeholder `p_model_h_0_ln_1_weight` as the dotted
/// parameter name, from the FX node's module scopes: the scope whose mangled
/// form prefixes it ("model.h.0.ln_1") and `local` ("weight", as cased in
/// the model); the placeholder without its p_ when no scope fits.
std::string dottedName(llvm::StringRef placeholder,
                       const std::vector<std::string> &scopes,
                       llvm::StringRef local) {
  std::string want = placeholder.lower();
  for (const std::string &scope : llvm::reverse(scopes)) {
    if (scope.empty())
      continue;
    std::string mangled = "p_" + scope + "_" + local.str();
    std::replace(mangled.begin(), mangled.end(), '.', '_');
    if (llvm::StringRef(mangled).lower() == want)
      return scope + "." + local.str();
  }
  return placeholder.drop_front(2).str();
}

} // namespace

std::optional<std::string> ExporterMetadata::read(const onnx::ModelProto &model) {
  const onnx::GraphProto &graph = model.graph();
  auto take = [&](const onnx::ValueInfoProto &v) {
    auto props = metadataProps(v, /*metadata_props=*/4);
    if (props.empty())
      return;
    Spec s;
    s.kind = lookupProp(props, kKindKey);
    s.placeholder = lookupProp(props, kPlaceholderKey);
    s.foldedFrom = parseList(lookupProp(props, kFoldedFromKey));
    if (!s.kind.empty() || !s.foldedFrom.empty())
      specs[v.name()] = std::move(s);
  };
  for (const auto &v : graph.input())
    take(v);
  for (const auto &v : graph.value_info())
    take(v);
  for (const auto &prop : model.metadata_props()) {
    if (prop.key() != "tessel.parameters")
      continue;
    auto bad = [](const llvm::Twine &why) -> std::optional<std::string> {
      return ("the model's metadata 'tessel.parameters' (tessel.export) " + why)
          .str();
    };
    llvm::Expected<llvm::json::Value> json = llvm::json::parse(prop.value());
    if (!json)
      return bad("is not JSON: " + llvm::toString(json.takeError()));
    const llvm::json::Object *root = json->getAsObject();
    if (!root)
      return bad("is not a JSON object");
    record = true;
    for (llvm::StringRef list : {"parameters", "buffers"}) {
      const llvm::json::Array *items = root->getArray(list);
      if (!items)
        return bad("has no array '" + list + "'");
      for (const llvm::json::Value &item : *items) {
        const llvm::json::Object *o = item.getAsObject();
        std::optional<llvm::StringRef> name = o ? o->getString("name") : std::nullopt;
        if (!name)
          return bad("has an entry of '" + list + "' without a name");
        if (list == "buffers") {
          torchBuffers[*name] = true;
          continue;
        }
        std::optional<bool> grad = o->getBoolean("requires_grad");
        torchParameters[*name] = grad.value_or(true);
        const llvm::json::Value *tied = o->get("tied_to");
        if (tied && tied->getAsString())
          ties.emplace_back(name->str(), tied->getAsString()->str());
        if (grad.value_or(true) && (!tied || tied->kind() == llvm::json::Value::Null))
          trainableOrder.push_back(name->str());
      }
    }
  }
  return std::nullopt;
}

std::optional<WeightOrigin>
ExporterMetadata::recorded(llvm::StringRef name) const {
  if (!record)
    return std::nullopt;
  auto p = torchParameters.find(name);
  if (p != torchParameters.end())
    return p->second
               ? WeightOrigin{"parameter", "a parameter of the torch.nn.Module "
                                           "(tessel.export)"}
               : WeightOrigin{"buffer", "a parameter with requires_grad=False "
                                        "(tessel.export)"};
  if (torchBuffers.count(name))
    return WeightOrigin{"buffer",
                        "a buffer of the torch.nn.Module (tessel.export)"};
  return std::nullopt;
}

bool ExporterMetadata::isParameterName(llvm::StringRef name) const {
  if (record)
    return torchParameters.lookup(name);
  auto it = specs.find(name);
  if (it != specs.end() && !it->second.kind.empty())
    return it->second.kind == "PARAMETER";
  // A name the graph no longer holds (the optimizer folded it away): a
  // module's parameters are its weights and biases; its buffers have names
  // of their own (inv_freq, position_ids, running_mean, ...).
  return name.contains('.') &&
         (name.ends_with(".weight") || name.ends_with(".bias"));
}

std::optional<WeightOrigin>
ExporterMetadata::origin(llvm::StringRef name) const {
  auto it = specs.find(name);
  if (it == specs.end())
    return std::nullopt;
  const Spec &s = it->second;
  if (s.kind == "PARAMETER")
    return WeightOrigin{"parameter", "torch.export PARAMETER"};
  if (s.kind == "BUFFER")
    return WeightOrigin{"buffer", "torch.export BUFFER"};
  if (s.kind == "CONSTANT_TENSOR")
    return WeightOrigin{"constant", "torch.export CONSTANT_TENSOR"};
  if (s.foldedFrom.empty())
    return std::nullopt;
  std::vector<std::string> params, named;
  for (const std::string &n : s.foldedFrom) {
    if (isParameterName(n))
      params.push_back(n);
    else if (llvm::StringRef(n).contains('.'))
      named.push_back(n);
  }
  if (!params.empty())
    return WeightOrigin{"parameter",
                        "folded by the exporter from " + joinFirst(params, 4),
                        params.size() == 1 ? params.front() : "",
                        params.size() != 1         ? ""
                        : s.foldedFrom.size() == 1 ? "transposed"
                                                   : "rows"};
  return WeightOrigin{
      "constant",
      "folded by the exporter from " +
          (named.empty() ? std::string("constants") : joinFirst(named, 4))};
}

std::optional<std::string>
ExporterMetadata::foldedFromOne(llvm::StringRef name) const {
  auto it = specs.find(name);
  if (it == specs.end() || it->second.foldedFrom.size() != 1)
    return std::nullopt;
  const std::string &from = it->second.foldedFrom.front();
  auto src = specs.find(from);
  if (src == specs.end() || src->second.kind != "PARAMETER")
    return std::nullopt;
  return from;
}

const ExporterMetadata::Spec *ExporterMetadata::parameterRead(
    const onnx::NodeProto &node, llvm::StringRef name,
    std::vector<std::pair<std::string, std::string>> &props,
    std::vector<std::string> &reads) const {
  auto it = specs.find(name);
  if (it == specs.end() || it->second.kind != "PARAMETER" ||
      it->second.placeholder.empty())
    return nullptr;
  props = metadataProps(node, /*metadata_props=*/9);
  reads = fxOperands(lookupProp(props, kFxNodeKey));
  return &it->second;
}

std::optional<std::string>
ExporterMetadata::mergedParameter(const onnx::NodeProto &node,
                                  llvm::StringRef name) const {
  std::vector<std::pair<std::string, std::string>> props;
  std::vector<std::string> reads;
  const Spec *spec = parameterRead(node, name, props, reads);
  if (!spec || reads.empty() || llvm::is_contained(reads, spec->placeholder))
    return std::nullopt;
  // The parameter of the same local name ("weight", "bias") that the FX
  // node reads instead.
  std::string local = lastComponent(name).lower();
  std::vector<std::string> candidates;
  for (const std::string &r : reads)
    if (llvm::StringRef(r).starts_with("p_") &&
        llvm::StringRef(llvm::StringRef(r).lower()).ends_with("_" + local))
      candidates.push_back(r);
  if (candidates.size() != 1)
    return std::nullopt;
  return dottedName(candidates.front(),
                    parseList(lookupProp(props, kScopesKey)),
                    lastComponent(name));
}

std::optional<std::string>
ExporterMetadata::moduleAlias(const onnx::NodeProto &node,
                              llvm::StringRef name) const {
  std::vector<std::pair<std::string, std::string>> props;
  std::vector<std::string> reads;
  const Spec *spec = parameterRead(node, name, props, reads);
  if (!spec || !llvm::is_contained(reads, spec->placeholder))
    return std::nullopt;
  // The innermost entries are the op's (aten.embedding.default, embedding);
  // the ones before them its module's.
  std::vector<std::string> classes = parseList(lookupProp(props, kClassesKey));
  std::vector<std::string> scopes = parseList(lookupProp(props, kScopesKey));
  if (classes.size() < 2 || scopes.size() < 2 ||
      !llvm::StringRef(classes[classes.size() - 2]).starts_with(
          "torch.nn.modules."))
    return std::nullopt;
  const std::string &scope = scopes[scopes.size() - 2];
  if (scope.empty() || name.starts_with(scope + "."))
    return std::nullopt;
  return scope + "." + lastComponent(name).str();
}

std::optional<std::string>
ExporterMetadata::droppedBias(const onnx::NodeProto &node) const {
  if (node.input_size() > 2 && !node.input(2).empty())
    return std::nullopt;
  auto props = metadataProps(node, /*metadata_props=*/9);
  const std::string fxText = lookupProp(props, kFxNodeKey);
  const llvm::StringRef fx = fxText;
  std::vector<std::string> reads = fxOperands(fx);
  // Where the FX node reads its bias: addmm(bias, x, w); linear(x, w, bias)
  // as a Gemm; conv*(x, w, bias, ...) as a Conv (a bias=None reads no
  // placeholder there).
  std::string bias;
  if (fx.contains("aten.addmm"))
    bias = reads.empty() ? "" : reads.front();
  else if ((node.op_type() == "Gemm" && fx.contains("aten.linear")) ||
           (node.op_type() == "Conv" &&
            (fx.contains("aten.conv1d") || fx.contains("aten.conv2d") ||
             fx.contains("aten.conv3d") || fx.contains("aten.convolution"))))
    bias = reads.size() > 2 ? reads[2] : "";
  if (!llvm::StringRef(bias).starts_with("p_"))
    return std::nullopt;
  return dottedName(bias, parseList(lookupProp(props, kScopesKey)),
                    llvm::StringRef(bias).rsplit('_').second);
}

std::optional<int64_t>
ExporterMetadata::embeddingPaddingIdx(const onnx::NodeProto &node) const {
  auto props = metadataProps(node, /*metadata_props=*/9);
  const std::string fxText = lookupProp(props, kFxNodeKey);
  const llvm::StringRef fx = fxText;
  // args = (weight, indices, padding_idx[, scale_grad_by_freq, sparse])
  if (!fx.contains("aten.embedding.default"))
    return std::nullopt;
  llvm::SmallVector<llvm::StringRef> parts = fxArgs(fx);
  int64_t pad = -1;
  if (parts.size() < 3 || parts[2].trim().getAsInteger(10, pad) || pad < 0)
    return std::nullopt;
  return pad;
}

std::optional<std::string>
ExporterMetadata::trainingBatchNorm(const onnx::NodeProto &node) const {
  auto props = metadataProps(node, /*metadata_props=*/9);
  const std::string fxText = lookupProp(props, kFxNodeKey);
  const llvm::StringRef fx = fxText;
  // args = (input, weight, bias, running_mean, running_var, training, ...)
  if (!fx.contains("aten._native_batch_norm_legit_functional") &&
      !fx.contains("aten._native_batch_norm_legit.default") &&
      !fx.contains("aten.batch_norm"))
    return std::nullopt;
  llvm::SmallVector<llvm::StringRef> parts = fxArgs(fx);
  if (parts.size() < 6 || parts[5] != "True")
    return std::nullopt;
  std::vector<std::string> scopes = parseList(lookupProp(props, kScopesKey));
  return scopes.size() >= 2 ? scopes[scopes.size() - 2] : std::string("?");
}

} // namespace mlir::tessel::detail
