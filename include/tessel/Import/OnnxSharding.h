//===- OnnxSharding.h - ONNX's multi-device annotations ---------*- C++ -*-===//
//
// ONNX (>= 1.16) annotates a model for several devices: the model lists
// device configurations (a name, a device count), and each node may carry,
// per configuration, a sharding spec for some of its inputs and outputs and
// a pipeline stage (onnx/docs/proposals/ShardingFormalism.md). A spec names
// the tensor, the axes it splits and into how many shards, and which device
// holds each shard (shards in row-major order over the split axes; an entry
// may name a group of devices that each hold the shard).
//
// Here they are plain data: read from a model (`tesselc --plan=onnx`,
// docs/plans.md) and written into one (`tesselc --emit=onnx`). Matching
// them to a mesh is the driver's (lib/Driver/OnnxPlan.cpp).
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_IMPORT_ONNXSHARDING_H
#define TESSEL_IMPORT_ONNXSHARDING_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace mlir::tessel {

struct OnnxDeviceConfiguration {
  std::string name;
  int64_t numDevices = 0;
};

/// One split axis of a tensor.
struct OnnxShardedDim {
  /// In [0, rank): negative axes are normalised on reading.
  int64_t axis = 0;
  int64_t numShards = 1;
};

struct OnnxShardingSpec {
  std::string tensor;
  /// One entry per shard: a device, or a key of `groups`.
  std::vector<int64_t> devices;
  std::map<int64_t, std::vector<int64_t>> groups;
  std::vector<OnnxShardedDim> dims;

  /// The devices that hold shard `i`.
  std::vector<int64_t> getShardDevices(size_t i) const;
};

struct OnnxNodeSharding {
  /// The node's name, and where it is in the graph (for messages when it
  /// has none).
  std::string node;
  int64_t nodeIndex = 0;
  std::string configuration;
  /// -1: none given.
  int64_t stage = -1;
  std::vector<OnnxShardingSpec> specs;
};

struct OnnxShardingAnnotations {
  std::vector<OnnxDeviceConfiguration> configurations;
  std::vector<OnnxNodeSharding> nodes;
  /// The model's `tessel.mesh` metadata (what --emit=onnx wrote), or "".
  std::string mesh;
  /// Initializer and graph input names: what a plan can name.
  std::vector<std::string> initializers, inputs;
  /// Every node of the graph: its name and its inputs (what --emit=onnx
  /// annotates).
  std::vector<std::pair<std::string, std::vector<std::string>>> graph;

  bool empty() const { return configurations.empty() && nodes.empty(); }
};

/// The annotations of the ONNX model at `path`. Each is checked against the
/// model: a configuration it names exists, its tensor is an input or output
/// of its node, devices lie in [0, num_devices), group keys resolve, the
/// shard counts multiply to the device list's length. Fails with one message
/// naming the node and the tensor.
llvm::Expected<OnnxShardingAnnotations>
readOnnxShardingAnnotations(llvm::StringRef path);
/// As readOnnxShardingAnnotations, from a serialized model; `name` names it
/// in messages (the importer's fuzz target reads every input with it).
llvm::Expected<OnnxShardingAnnotations>
parseOnnxShardingAnnotations(llvm::StringRef bytes, llvm::StringRef name);

/// Writes the ONNX model at `modelPath` to `outPath` with `annotations`
/// (their configurations and node annotations replace any the model had;
/// nodes are found by name) and `tessel.mesh` metadata when
/// `annotations.mesh` is set. A model with initializers in external data is
/// written only into its own folder (their locations are relative to it).
llvm::Error writeOnnxShardingAnnotations(
    llvm::StringRef modelPath, const OnnxShardingAnnotations &annotations,
    llvm::StringRef outPath);

} // namespace mlir::tessel

#endif // TESSEL_IMPORT_ONNXSHARDING_H
