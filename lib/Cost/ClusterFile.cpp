//===- ClusterFile.cpp - cluster descriptions in YAML ---------------------===//

#include "tessel/Cost/ClusterFile.h"
#include "tessel/Support/YamlGuard.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/YAMLParser.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <cstdio>
#include <functional>

using namespace llvm;

namespace tessel::cost {

namespace {

/// What a value must be: a number or a whole number in the field's range
/// (the ranges ClusterSpec::validate() holds), one line of text, a link kind.
enum class Bound { Number, Count, Text, Kind };

/// One key of a cluster file: its dotted name, its rule, and where it lands.
struct Field {
  const char *key;
  Bound bound;
  FigureRange range;
  std::function<void(ClusterSpec &, double)> setNumber;
  std::function<void(ClusterSpec &, StringRef)> setText;
  std::function<void(ClusterSpec &, LinkKind)> setKind;
  /// Needed when the file has no `base`.
  bool required = true;
};

std::vector<Field> getFields() {
  std::vector<Field> f;
  using namespace figure;
  auto number = [&](const char *key, FigureRange range,
                    double DeviceSpec::*m, bool required = true) {
    f.push_back({key, Bound::Number, range,
                 [m](ClusterSpec &c, double v) { c.device.*m = v; }, nullptr,
                 nullptr, required});
  };
  auto linkNumber = [&](const char *key, FigureRange range,
                        LinkSpec ClusterSpec::*link, double LinkSpec::*m,
                        bool required = true) {
    f.push_back({key, Bound::Number, range,
                 [link, m](ClusterSpec &c, double v) { (c.*link).*m = v; },
                 nullptr, nullptr, required});
  };
  const FigureRange text{0, 0};
  f.push_back({"name", Bound::Text, text, nullptr,
               [](ClusterSpec &c, StringRef v) { c.name = v.str(); }, nullptr,
               false});
  f.push_back({"devices_per_node", Bound::Count, kDevicesPerNode,
               [](ClusterSpec &c, double v) { c.devicesPerNode = int64_t(v); },
               nullptr, nullptr});
  f.push_back({"nodes", Bound::Count, kNodes,
               [](ClusterSpec &c, double v) { c.nodes = int64_t(v); }, nullptr,
               nullptr, false});
  f.push_back({"device.name", Bound::Text, text, nullptr,
               [](ClusterSpec &c, StringRef v) { c.device.name = v.str(); },
               nullptr, false});
  number("device.peak_flops_f32", kRate, &DeviceSpec::peakFlopsF32);
  number("device.peak_flops_bf16", kOptionalRate, &DeviceSpec::peakFlopsBF16);
  number("device.matmul_efficiency", kFraction, &DeviceSpec::matmulEfficiency);
  number("device.convolution_efficiency", kFraction,
         &DeviceSpec::convolutionEfficiency);
  number("device.memory_bytes", kBytes, &DeviceSpec::memoryBytes);
  number("device.memory_bandwidth", kRate, &DeviceSpec::memoryBandwidth);
  number("device.op_overhead", kSeconds, &DeviceSpec::opOverhead);
  number("device.matmul_saturation_dim", kDim,
         &DeviceSpec::matmulSaturationDim, /*required=*/false);
  for (const auto &link :
       {std::pair<const char *, LinkSpec ClusterSpec::*>{
            "intra_node", &ClusterSpec::intraNode},
        {"inter_node", &ClusterSpec::interNode}}) {
    // Not a structured binding: the lambdas below capture it (C++17).
    const char *prefix = link.first;
    LinkSpec ClusterSpec::*member = link.second;
    // The keys outlive the table: they are string literals by prefix.
    bool intra = StringRef(prefix) == "intra_node";
    f.push_back({intra ? "intra_node.kind" : "inter_node.kind", Bound::Kind,
                 text, nullptr, nullptr,
                 [member](ClusterSpec &c, LinkKind k) { (c.*member).kind = k; }});
    linkNumber(intra ? "intra_node.latency" : "inter_node.latency", kSeconds,
               member, &LinkSpec::latency);
    linkNumber(intra ? "intra_node.bandwidth" : "inter_node.bandwidth", kRate,
               member, &LinkSpec::bandwidth);
    linkNumber(intra ? "intra_node.async_overhead" : "inter_node.async_overhead",
               kSeconds, member, &LinkSpec::asyncOverhead, /*required=*/false);
    linkNumber(intra ? "intra_node.shared_latency" : "inter_node.shared_latency",
               kSeconds, member, &LinkSpec::sharedLatency, /*required=*/false);
    linkNumber(intra ? "intra_node.all_reduce_bandwidth"
                     : "inter_node.all_reduce_bandwidth",
               kOptionalRate, member, &LinkSpec::allReduceBandwidth,
               /*required=*/false);
  }
  return f;
}

std::string describe(const Field &f) {
  switch (f.bound) {
  case Bound::Number:
    return f.range.describe();
  case Bound::Count: {
    char buffer[64];
    snprintf(buffer, sizeof(buffer), "a whole number in [%.0f, %.0f]",
             f.range.min, f.range.max);
    return buffer;
  }
  case Bound::Text:
    return "a string";
  case Bound::Kind:
    return "one of " + getLinkKindNames();
  }
  return "";
}

class Parser {
public:
  Parser(StringRef text, StringRef fileName)
      : fileName(fileName), fields(getFields()) {
    sm.setDiagHandler(
        [](const SMDiagnostic &d, void *ctx) {
          auto *self = static_cast<Parser *>(ctx);
          if (self->yamlError.empty())
            self->yamlError = (Twine(d.getLineNo()) + ": " + d.getMessage())
                                  .str();
        },
        this);
    stream = std::make_unique<yaml::Stream>(text, sm, /*ShowColors=*/false);
  }

  Expected<ClusterSpec> run();

private:
  Error fail(yaml::Node *at, const Twine &msg) {
    std::string where = fileName.str();
    // A node the parser made up (an alias's target, an error's stand-in)
    // may have no place in the buffer: then the file alone is named.
    SMLoc loc = at ? at->getSourceRange().Start : SMLoc();
    if (loc.isValid() && sm.FindBufferContainingLoc(loc))
      where += ":" + std::to_string(sm.getLineAndColumn(loc).first);
    return createStringError(where + ": " + msg);
  }
  Error yamlFailure() {
    return createStringError(fileName + ":" + yamlError);
  }
  /// The scalar text of `node`, or an error naming `key`.
  Expected<StringRef> getScalar(yaml::Node *node, StringRef key,
                                SmallVectorImpl<char> &storage);
  /// Walks `map` (the mapping under `prefix`), collecting leaf values.
  Error collect(yaml::MappingNode *map, StringRef prefix);
  /// Reads device.op_rates into `opRates`.
  Error collectOpRates(yaml::MappingNode *map);
  Error apply(const Field &field, yaml::Node *node, ClusterSpec &c);

  StringRef fileName;
  SourceMgr sm;
  std::string yamlError;
  std::unique_ptr<yaml::Stream> stream;
  std::vector<Field> fields;
  /// Leaf key -> its value node, in file order.
  std::vector<std::pair<std::string, yaml::Node *>> leaves;
  std::map<std::string, double> opRates;
};

Error Parser::collectOpRates(yaml::MappingNode *map) {
  for (yaml::KeyValueNode &kv : *map) {
    SmallString<32> keyStorage, valueStorage;
    Expected<StringRef> op = getScalar(kv.getKey(), "key", keyStorage);
    if (stream->failed())
      return yamlFailure();
    if (!op)
      return op.takeError();
    const std::string key = "device.op_rates." + op->str();
    if (!isOpRateName(*op))
      return fail(kv.getKey(),
                  "'" + key + "': an op name is lower-case letters, digits "
                              "and '_' (at most 64), without the dialect");
    yaml::Node *value = kv.getValue();
    if (stream->failed())
      return yamlFailure();
    Expected<StringRef> text = getScalar(value, key, valueStorage);
    if (!text)
      return text.takeError();
    double rate;
    if (text->trim().getAsDouble(rate) || !figure::kRate.contains(rate))
      return fail(value, key + " is '" + text->trim() + "'; it must be " +
                             figure::kRate.describe() +
                             " (elements per second)");
    if (!opRates.emplace(op->str(), rate).second)
      return fail(kv.getKey(), "'" + key + "' is given twice");
  }
  if (stream->failed())
    return yamlFailure();
  return Error::success();
}

Expected<StringRef> Parser::getScalar(yaml::Node *node, StringRef key,
                                      SmallVectorImpl<char> &storage) {
  auto *scalar = dyn_cast_or_null<yaml::ScalarNode>(node);
  if (!scalar)
    return fail(node, "'" + key + "' must be a single value");
  return scalar->getValue(storage);
}

Error Parser::collect(yaml::MappingNode *map, StringRef prefix) {
  StringSet<> seen;
  for (yaml::KeyValueNode &kv : *map) {
    SmallString<32> keyStorage;
    Expected<StringRef> key = getScalar(kv.getKey(), "key", keyStorage);
    if (stream->failed())
      return yamlFailure();
    if (!key)
      return key.takeError();
    std::string full = prefix.empty() ? key->str() : (prefix + "." + *key).str();
    if (!seen.insert(*key).second)
      return fail(kv.getKey(), "'" + full + "' is given twice");
    yaml::Node *value = kv.getValue();
    if (stream->failed())
      return yamlFailure();
    if (full == "device.op_rates") {
      auto *rates = dyn_cast_or_null<yaml::MappingNode>(value);
      if (!rates)
        return fail(value, "'device.op_rates' must be a mapping of op names "
                           "to elements per second");
      if (Error e = collectOpRates(rates))
        return e;
      continue;
    }
    if (auto *sub = dyn_cast_or_null<yaml::MappingNode>(value)) {
      if (full != "device" && full != "intra_node" && full != "inter_node")
        return fail(kv.getKey(), "unknown key '" + full + "'");
      if (Error e = collect(sub, full))
        return e;
      continue;
    }
    if (full == "device" || full == "intra_node" || full == "inter_node")
      return fail(value, "'" + full + "' must be a mapping of its figures");
    bool known = full == "base" || llvm::any_of(fields, [&](const Field &f) {
                   return full == f.key;
                 });
    if (!known)
      return fail(kv.getKey(), "unknown key '" + full + "'");
    leaves.emplace_back(full, value);
  }
  if (stream->failed())
    return yamlFailure();
  return Error::success();
}

Error Parser::apply(const Field &field, yaml::Node *node, ClusterSpec &c) {
  SmallString<32> storage;
  Expected<StringRef> text = getScalar(node, field.key, storage);
  if (!text)
    return text.takeError();
  StringRef value = text->trim();
  auto refuse = [&] {
    return fail(node, Twine(field.key) + " is '" + value + "'; it must be " +
                          describe(field));
  };
  switch (field.bound) {
  case Bound::Text:
    // Names stand in one-line messages and are written back quoted.
    if (llvm::any_of(value, [](char ch) {
          return static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f;
        }))
      return fail(node, Twine(field.key) +
                            " holds a control character (a line break, a "
                            "tab); it must be one line of text");
    // And are written back as they are: llvm's scanner refuses a file
    // that is not UTF-8 (a double-quoted "\ud800" decodes to one).
    if (!json::isUTF8(value))
      return fail(node, Twine(field.key) + " is not UTF-8 text");
    field.setText(c, value);
    return Error::success();
  case Bound::Kind:
    if (std::optional<LinkKind> kind = parseLinkKind(value)) {
      field.setKind(c, *kind);
      return Error::success();
    }
    return refuse();
  case Bound::Count: {
    int64_t n;
    if (value.getAsInteger(10, n) || !field.range.contains(double(n)))
      return refuse();
    field.setNumber(c, double(n));
    return Error::success();
  }
  case Bound::Number:
    break;
  }
  double v;
  if (value.getAsDouble(v) || !field.range.contains(v))
    return refuse();
  field.setNumber(c, v);
  return Error::success();
}

Expected<ClusterSpec> Parser::run() {
  auto doc = stream->begin();
  if (doc == stream->end() || stream->failed())
    return stream->failed() ? yamlFailure() : fail(nullptr, "empty file");
  yaml::Node *root = doc->getRoot();
  if (stream->failed())
    return yamlFailure();
  if (!root || isa<yaml::NullNode>(root))
    return fail(nullptr, "empty file");
  auto *map = dyn_cast<yaml::MappingNode>(root);
  if (!map)
    return fail(root, "a cluster file is a mapping of fields (name, device, "
                      "devices_per_node, nodes, intra_node, inter_node)");
  if (Error e = collect(map, ""))
    return std::move(e);
  ClusterSpec c;
  c.nodes = 1;
  bool hasBase = false;
  for (auto &[key, node] : leaves) {
    if (key != "base")
      continue;
    SmallString<16> storage;
    Expected<StringRef> name = getScalar(node, key, storage);
    if (!name)
      return name.takeError();
    std::optional<ClusterSpec> base = getBuiltinCluster(name->trim());
    if (!base) {
      std::string names;
      for (StringRef n : getBuiltinClusterNames())
        names += (names.empty() ? "" : ", ") + n.str();
      return fail(node, "base is '" + name->trim() +
                            "'; it must name a built-in cluster (" + names +
                            ")");
    }
    c = std::move(*base);
    hasBase = true;
  }
  if (!hasBase)
    c.name = sys::path::stem(fileName).str();
  StringSet<> given;
  for (auto &[key, node] : leaves) {
    if (key == "base")
      continue;
    const Field *field = nullptr;
    for (const Field &f : fields)
      if (key == f.key)
        field = &f;
    if (Error e = apply(*field, node, c))
      return std::move(e);
    given.insert(key);
  }
  for (const auto &[op, rate] : opRates)
    c.device.opRates[op] = rate;
  if (!hasBase)
    for (const Field &f : fields)
      if (f.required && !given.contains(f.key))
        return fail(nullptr, Twine("missing ") + f.key + " (" +
                                 describe(f) +
                                 "; or give 'base: <built-in>' to start "
                                 "from a built-in cluster)");
  if (Error e = c.validate())
    return fail(nullptr, toString(std::move(e)));
  // Last: moving on to a next document frees this one's nodes.
  if (++doc != stream->end() || stream->failed())
    return stream->failed() ? yamlFailure()
                            : fail(nullptr, "holds more than one YAML document");
  return c;
}

std::string formatNumber(double v) {
  char buffer[40];
  snprintf(buffer, sizeof(buffer), "%.17g", v);
  return buffer;
}

/// A YAML double-quoted scalar that any YAML reader takes back byte for byte:
/// ASCII as it is (quote and backslash escaped), every other character of
/// the (UTF-8, parse-checked) text as its \u or \U escape. Written as they
/// are, some characters do not read back: llvm's scanner ends a scalar at a
/// U+FEFF (the fuzzer's find).
std::string quote(StringRef s) {
  std::string out = "\"";
  for (size_t i = 0; i < s.size();) {
    const auto lead = static_cast<unsigned char>(s[i]);
    if (lead < 0x80) {
      if (lead == '"' || lead == '\\')
        out += '\\';
      out += char(lead);
      ++i;
      continue;
    }
    const size_t length = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : 2;
    uint32_t code = lead & (0x7F >> length);
    for (size_t k = 1; k < length && i + k < s.size(); ++k)
      code = (code << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
    char buffer[16];
    snprintf(buffer, sizeof(buffer), code > 0xFFFF ? "\\U%08X" : "\\u%04X",
             unsigned(code));
    out += buffer;
    i += length;
  }
  return out + "\"";
}

} // namespace

Expected<ClusterSpec> parseClusterFile(StringRef text, StringRef fileName) {
  // A cluster file nests 2 deep (a link's figures); what llvm's parser
  // cannot take is refused first.
  if (Error e = checkYamlText(text, fileName, "a cluster file", 8))
    return std::move(e);
  Parser parser(text, fileName);
  return parser.run();
}

Expected<ClusterSpec> loadClusterFile(StringRef path) {
  ErrorOr<std::unique_ptr<MemoryBuffer>> buffer =
      MemoryBuffer::getFile(path, /*IsText=*/true);
  if (!buffer)
    return createStringError("cannot read cluster file '" + path +
                             "': " + buffer.getError().message());
  return parseClusterFile((*buffer)->getBuffer(), path);
}

std::string printClusterFile(const ClusterSpec &c) {
  std::string text;
  raw_string_ostream os(text);
  const DeviceSpec &d = c.device;
  os << "# Written by Tessel (docs/auto-plan.md): seconds, bytes, FLOP/s, "
        "bytes/s.\n";
  os << "name: " << quote(c.name) << "\n";
  os << "devices_per_node: " << c.devicesPerNode << "\n";
  os << "nodes: " << c.nodes << "\n";
  os << "device:\n";
  os << "  name: " << quote(d.name) << "\n";
  os << "  peak_flops_f32: " << formatNumber(d.peakFlopsF32) << "\n";
  os << "  peak_flops_bf16: " << formatNumber(d.peakFlopsBF16) << "\n";
  os << "  matmul_efficiency: " << formatNumber(d.matmulEfficiency) << "\n";
  os << "  convolution_efficiency: " << formatNumber(d.convolutionEfficiency)
     << "\n";
  os << "  memory_bytes: " << formatNumber(d.memoryBytes) << "\n";
  os << "  memory_bandwidth: " << formatNumber(d.memoryBandwidth) << "\n";
  os << "  op_overhead: " << formatNumber(d.opOverhead) << "\n";
  os << "  matmul_saturation_dim: " << formatNumber(d.matmulSaturationDim)
     << "\n";
  if (!d.opRates.empty()) {
    os << "  op_rates:\n";
    for (const auto &[op, rate] : d.opRates)
      os << "    " << op << ": " << formatNumber(rate) << "\n";
  }
  for (auto [key, link] : {std::pair<const char *, const LinkSpec *>{
                               "intra_node", &c.intraNode},
                           {"inter_node", &c.interNode}})
    os << key << ":\n  kind: " << getLinkKindName(link->kind)
       << "\n  latency: " << formatNumber(link->latency)
       << "\n  bandwidth: " << formatNumber(link->bandwidth)
       << "\n  async_overhead: " << formatNumber(link->asyncOverhead)
       << "\n  shared_latency: " << formatNumber(link->sharedLatency)
       << "\n  all_reduce_bandwidth: " << formatNumber(link->allReduceBandwidth)
       << "\n";
  return text;
}

Error writeClusterFile(const ClusterSpec &cluster, StringRef path) {
  std::error_code ec;
  raw_fd_ostream os(path, ec, sys::fs::OF_Text);
  if (ec)
    return createStringError("cannot write cluster file '" + path +
                             "': " + ec.message());
  os << printClusterFile(cluster);
  os.close();
  if (os.has_error())
    return createStringError("cannot write cluster file '" + path +
                             "': " + os.error().message());
  return Error::success();
}

} // namespace tessel::cost
