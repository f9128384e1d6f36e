//===- OnnxSharding.cpp - ONNX's multi-device annotations ------------------===//
//
// Debian's libonnx (1.12) predates the annotations, so its protobuf parser
// keeps them as unknown fields of NodeProto (10) and ModelProto (26); they
// are parsed and written here with the same messages from ONNX's schema
// (schema/onnx_multi_device.proto).
//
//===----------------------------------------------------------------------===//
#include "tessel/Import/OnnxSharding.h"

#include "onnx_multi_device.pb.h"
#include "onnx/onnx_pb.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/Errc.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <google/protobuf/unknown_field_set.h>

#include <climits>

using namespace llvm;
namespace md = tessel::onnx_multi_device;

namespace mlir::tessel {

namespace {

/// NodeProto.device_configurations and ModelProto.configuration.
constexpr int kNodeDeviceConfigurations = 10;
constexpr int kModelConfiguration = 26;
/// More devices than any annotation needs; a bound before allocating.
constexpr int64_t kMaxDevices = 1 << 20;
/// ModelProto.metadata_props key of the mesh --emit=onnx annotated for.
constexpr const char *kMeshKey = "tessel.mesh";

Error fail(const Twine &msg) {
  return createStringError(errc::invalid_argument, msg);
}

Expected<onnx::ModelProto> parseModelBytes(StringRef bytes, StringRef name) {
  if (bytes.size() > size_t(INT_MAX))
    return fail("'" + name + "' is larger than 2 GB");
  onnx::ModelProto model;
  if (!model.ParseFromArray(bytes.data(), int(bytes.size())))
    return fail("cannot parse '" + name + "' as an ONNX model");
  return model;
}

Expected<onnx::ModelProto> parseModel(StringRef path) {
  auto buffer = MemoryBuffer::getFile(path, /*IsText=*/false,
                                      /*RequiresNullTerminator=*/false);
  if (!buffer)
    return fail("cannot open '" + path + "': " + buffer.getError().message());
  return parseModelBytes((*buffer)->getBuffer(), path);
}

/// The serialized messages of one length-delimited unknown field.
std::vector<std::string>
getUnknownMessages(const google::protobuf::UnknownFieldSet &fields,
                   int number) {
  std::vector<std::string> out;
  for (int i = 0; i < fields.field_count(); ++i) {
    const google::protobuf::UnknownField &f = fields.field(i);
    if (f.number() == number &&
        f.type() == google::protobuf::UnknownField::TYPE_LENGTH_DELIMITED)
      out.push_back(f.length_delimited());
  }
  return out;
}

void removeUnknownField(google::protobuf::UnknownFieldSet *fields,
                        int number) {
  for (int i = fields->field_count() - 1; i >= 0; --i)
    if (fields->field(i).number() == number)
      fields->DeleteSubrange(i, 1);
}

/// The rank of every tensor the graph declares (inputs, outputs, value
/// infos, initializers), by name.
StringMap<int64_t> getDeclaredRanks(const onnx::GraphProto &g) {
  StringMap<int64_t> ranks;
  for (const auto *list : {&g.input(), &g.output(), &g.value_info()})
    for (const onnx::ValueInfoProto &v : *list)
      if (v.type().has_tensor_type() && v.type().tensor_type().has_shape())
        ranks.try_emplace(v.name(), v.type().tensor_type().shape().dim_size());
  for (const onnx::TensorProto &t : g.initializer())
    ranks.try_emplace(t.name(), t.dims_size());
  return ranks;
}

/// Reads and checks one node's annotation.
Expected<OnnxNodeSharding>
readNode(const StringMap<int64_t> &ranks, const onnx::NodeProto &node,
         int64_t index, const std::string &bytes,
         const std::vector<OnnxDeviceConfiguration> &configurations) {
  OnnxNodeSharding out;
  out.node = node.name();
  out.nodeIndex = index;
  const std::string where =
      "node " + (node.name().empty() ? "#" + std::to_string(index)
                                     : "'" + node.name() + "'");
  md::NodeDeviceConfigurationProto proto;
  if (!proto.ParseFromString(bytes))
    return fail(where + ": its device_configurations do not parse");
  out.configuration = proto.configuration_id();
  auto config = llvm::find_if(configurations, [&](const auto &c) {
    return c.name == out.configuration;
  });
  if (config == configurations.end())
    return fail(where + ": device configuration '" + out.configuration +
                "' is not one of the model's (ModelProto.configuration)");
  if (proto.has_pipeline_stage()) {
    if (proto.pipeline_stage() < 0)
      return fail(where + ": pipeline_stage " +
                  Twine(proto.pipeline_stage()) + " is negative");
    out.stage = proto.pipeline_stage();
  }
  for (const md::ShardingSpecProto &s : proto.sharding_spec()) {
    OnnxShardingSpec spec;
    spec.tensor = s.tensor_name();
    const std::string at = where + ", tensor '" + spec.tensor + "'";
    if (!llvm::is_contained(node.input(), spec.tensor) &&
        !llvm::is_contained(node.output(), spec.tensor))
      return fail(at + ": the sharding spec names no input or output of "
                       "the node");
    auto declared = ranks.find(spec.tensor);
    const int64_t rank = declared == ranks.end() ? -1 : declared->second;
    auto checkDevice = [&](int64_t d) -> Error {
      if (d < 0 || d >= config->numDevices)
        return fail(at + ": device " + Twine(d) + " is not in [0, " +
                    Twine(config->numDevices) + ") (configuration '" +
                    config->name + "')");
      return Error::success();
    };
    for (const md::IntIntListEntryProto &e : s.index_to_device_group_map()) {
      if (spec.groups.count(e.key()))
        return fail(at + ": device group " + Twine(e.key()) +
                    " is given twice");
      if (e.value_size() == 0)
        return fail(at + ": device group " + Twine(e.key()) + " is empty");
      for (int64_t d : e.value())
        if (Error err = checkDevice(d))
          return std::move(err);
      spec.groups[e.key()].assign(e.value().begin(), e.value().end());
    }
    for (int64_t d : s.device()) {
      if (!spec.groups.count(d))
        if (Error err = checkDevice(d))
          return std::move(err);
      spec.devices.push_back(d);
    }
    int64_t shards = 1;
    for (const md::ShardedDimProto &dim : s.sharded_dim()) {
      if (dim.simple_sharding_size() != 1)
        return fail(at + ": axis " + Twine(dim.axis()) + " has " +
                    Twine(dim.simple_sharding_size()) +
                    " simple shardings; Tessel reads one per axis (a "
                    "reshape fusing sharded axes is not supported)");
      int64_t axis = dim.axis();
      if (rank >= 0 && (axis < -rank || axis >= rank))
        return fail(at + ": axis " + Twine(axis) + " is out of range for "
                         "its rank " + Twine(rank));
      if (rank < 0 && axis < 0)
        return fail(at + ": axis " + Twine(axis) +
                    " is negative and the tensor's rank is not declared");
      if (axis < 0)
        axis += rank;
      if (llvm::any_of(spec.dims, [&](const auto &d) { return d.axis == axis; }))
        return fail(at + ": axis " + Twine(axis) + " is sharded twice");
      int64_t n = dim.simple_sharding(0).num_shards();
      if (n < 1 || n > kMaxDevices)
        return fail(at + ": axis " + Twine(axis) + " has num_shards " +
                    Twine(n) + "; it must be in [1, " + Twine(kMaxDevices) +
                    "]");
      shards *= n;
      if (shards > kMaxDevices)
        return fail(at + ": more than " + Twine(kMaxDevices) + " shards");
      spec.dims.push_back({axis, n});
    }
    if (int64_t(spec.devices.size()) != shards)
      return fail(at + ": " + Twine(spec.devices.size()) +
                  " devices for " + Twine(shards) +
                  " shards; a sharding spec lists one device or device "
                  "group per shard");
    out.specs.push_back(std::move(spec));
  }
  return out;
}

} // namespace

std::vector<int64_t> OnnxShardingSpec::getShardDevices(size_t i) const {
  int64_t d = devices[i];
  auto group = groups.find(d);
  if (group != groups.end())
    return group->second;
  return {d};
}

Expected<OnnxShardingAnnotations> readOnnxShardingAnnotations(StringRef path) {
  auto buffer = MemoryBuffer::getFile(path, /*IsText=*/false,
                                      /*RequiresNullTerminator=*/false);
  if (!buffer)
    return fail("cannot open '" + path + "': " + buffer.getError().message());
  return parseOnnxShardingAnnotations((*buffer)->getBuffer(), path);
}

Expected<OnnxShardingAnnotations>
parseOnnxShardingAnnotations(StringRef bytes, StringRef path) {
  Expected<onnx::ModelProto> model = parseModelBytes(bytes, path);
  if (!model)
    return model.takeError();
  OnnxShardingAnnotations out;
  for (const std::string &bytes :
       getUnknownMessages(model->unknown_fields(), kModelConfiguration)) {
    md::DeviceConfigurationProto c;
    if (!c.ParseFromString(bytes))
      return fail("'" + path + "': a device configuration does not parse");
    if (c.num_devices() < 1 || c.num_devices() > kMaxDevices)
      return fail("'" + path + "': device configuration '" + c.name() +
                  "' has num_devices " + Twine(c.num_devices()) +
                  "; it must be in [1, " + Twine(kMaxDevices) + "]");
    if (llvm::any_of(out.configurations,
                     [&](const auto &o) { return o.name == c.name(); }))
      return fail("'" + path + "': device configuration '" + c.name() +
                  "' is given twice");
    out.configurations.push_back({c.name(), c.num_devices()});
  }
  for (const onnx::StringStringEntryProto &p : model->metadata_props())
    if (p.key() == kMeshKey)
      out.mesh = p.value();
  const onnx::GraphProto &g = model->graph();
  StringSet<> initializers;
  for (const onnx::TensorProto &t : g.initializer()) {
    out.initializers.push_back(t.name());
    initializers.insert(t.name());
  }
  // The exporter's Identity of a shared initializer is a weight of its own
  // name to the importer (a tied layer norm's copy).
  for (const onnx::NodeProto &n : g.node())
    if (n.op_type() == "Identity" && n.input_size() == 1 &&
        n.output_size() == 1 && initializers.contains(n.input(0)))
      out.initializers.push_back(n.output(0));
  for (const onnx::ValueInfoProto &v : g.input())
    out.inputs.push_back(v.name());
  for (const onnx::NodeProto &n : g.node())
    out.graph.push_back(
        {n.name(), std::vector<std::string>(n.input().begin(), n.input().end())});
  const StringMap<int64_t> ranks = getDeclaredRanks(g);
  for (int i = 0; i < g.node_size(); ++i)
    for (const std::string &bytes : getUnknownMessages(
             g.node(i).unknown_fields(), kNodeDeviceConfigurations)) {
      auto node = readNode(ranks, g.node(i), i, bytes, out.configurations);
      if (!node)
        return fail("'" + path + "': " + toString(node.takeError()));
      out.nodes.push_back(std::move(*node));
    }
  return out;
}

Error writeOnnxShardingAnnotations(StringRef modelPath,
                                   const OnnxShardingAnnotations &annotations,
                                   StringRef outPath) {
  Expected<onnx::ModelProto> model = parseModel(modelPath);
  if (!model)
    return model.takeError();
  // External data is named relative to the model's folder: the written
  // model must sit beside the same files, or it would name missing ones.
  SmallString<256> from(modelPath), to(outPath);
  sys::path::remove_filename(from);
  sys::path::remove_filename(to);
  if (from.empty())
    from = ".";
  if (to.empty())
    to = ".";
  sys::fs::make_absolute(from);
  sys::fs::make_absolute(to);
  sys::path::remove_dots(from, /*remove_dot_dot=*/true);
  sys::path::remove_dots(to, /*remove_dot_dot=*/true);
  if (from != to)
    for (const onnx::TensorProto &t : model->graph().initializer())
      if (t.data_location() == onnx::TensorProto::EXTERNAL)
        return fail("'" + modelPath + "' keeps initializer '" + t.name() +
                    "' in external data beside it; write the annotated "
                    "model into the same folder (" + from +
                    "), where its external data resolves");
  google::protobuf::UnknownFieldSet *modelFields =
      model->mutable_unknown_fields();
  removeUnknownField(modelFields, kModelConfiguration);
  for (const OnnxDeviceConfiguration &c : annotations.configurations) {
    md::DeviceConfigurationProto proto;
    proto.set_name(c.name);
    proto.set_num_devices(int32_t(c.numDevices));
    modelFields->AddLengthDelimited(kModelConfiguration,
                                    proto.SerializeAsString());
  }
  if (!annotations.mesh.empty()) {
    auto *props = model->mutable_metadata_props();
    auto it = llvm::find_if(*props, [](const auto &p) {
      return p.key() == kMeshKey;
    });
    onnx::StringStringEntryProto *entry =
        it != props->end() ? &*it : model->add_metadata_props();
    entry->set_key(kMeshKey);
    entry->set_value(annotations.mesh);
  }
  onnx::GraphProto *g = model->mutable_graph();
  // Nodes by name (the first of a name, as a plan's rules match it).
  StringMap<onnx::NodeProto *> byName;
  for (int i = 0; i < g->node_size(); ++i) {
    onnx::NodeProto *node = g->mutable_node(i);
    removeUnknownField(node->mutable_unknown_fields(),
                       kNodeDeviceConfigurations);
    byName.try_emplace(node->name(), node);
  }
  for (const OnnxNodeSharding &n : annotations.nodes) {
    onnx::NodeProto *node = byName.lookup(n.node);
    if (!node)
      return fail("'" + modelPath + "' has no node named '" + n.node + "'");
    md::NodeDeviceConfigurationProto proto;
    proto.set_configuration_id(n.configuration);
    if (n.stage >= 0)
      proto.set_pipeline_stage(int32_t(n.stage));
    for (const OnnxShardingSpec &s : n.specs) {
      md::ShardingSpecProto *spec = proto.add_sharding_spec();
      spec->set_tensor_name(s.tensor);
      for (int64_t d : s.devices)
        spec->add_device(d);
      for (const auto &[key, members] : s.groups) {
        md::IntIntListEntryProto *e = spec->add_index_to_device_group_map();
        e->set_key(key);
        for (int64_t m : members)
          e->add_value(m);
      }
      for (const OnnxShardedDim &d : s.dims) {
        md::ShardedDimProto *dim = spec->add_sharded_dim();
        dim->set_axis(d.axis);
        dim->add_simple_sharding()->set_num_shards(d.numShards);
      }
    }
    node->mutable_unknown_fields()->AddLengthDelimited(
        kNodeDeviceConfigurations, proto.SerializeAsString());
  }
  std::error_code ec;
  raw_fd_ostream os(outPath, ec, sys::fs::OF_None);
  if (ec)
    return fail("cannot write '" + outPath + "': " + ec.message());
  std::string bytes;
  if (!model->SerializeToString(&bytes))
    return fail("cannot serialize the annotated model for '" + outPath + "'");
  os << bytes;
  os.close();
  if (os.has_error())
    return fail("cannot write '" + outPath + "': " + os.error().message());
  return Error::success();
}

} // namespace mlir::tessel
