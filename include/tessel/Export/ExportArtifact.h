//===- ExportArtifact.h - tessel IR -> runtime artifact ---------*- C++ -*-===//
//
// Lowers a (partitioned, or single-device) tessel module into the artifact
// that tessel-run executes: one program per rank, an instruction per compute
// or communication op, buffers planned by liveness, weights in a safetensors
// file beside the program. The runtime's ArtifactBuilder is the only contract.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_EXPORT_EXPORTARTIFACT_H
#define TESSEL_EXPORT_EXPORTARTIFACT_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"

#include <functional>
#include <string>

namespace mlir::tessel {

/// The data of a named weight as the model holds it (its global shape, before
/// any slicing or sharding), row-major in the weight's element type (bools as
/// one byte each).
struct WeightData {
  /// The bytes in memory, or null when `read` gives them.
  const void *data = nullptr;
  /// Reads bytes [offset, offset + size) of the weight into `dst` (a model's
  /// external data, read a window at a time and never held whole); false
  /// with `error` set on failure.
  std::function<bool(uint64_t offset, size_t size, char *dst,
                     std::string &error)>
      read;
  size_t size = 0;
  SmallVector<int64_t> shape;
  /// The data's element type where it is not the weight op's: the bf16 or
  /// f16 data of an f32 master copy (-tessel-master-weights), widened
  /// exactly as the artifact is written. Null: the op's.
  Type elementType;
};

/// Finds the bytes of weight `name`; fails with a message naming it.
using WeightLookup =
    std::function<FailureOr<WeightData>(StringRef name, std::string &error)>;

struct ExportOptions {
  /// The entry function; the module's only public function when empty.
  std::string entry;
  /// Written into the manifest as its producer.
  std::string producer = "tesselc";
  /// The weights the entry's `tessel.gradients` names become zero-filled
  /// STATE buffers (no data stored) that the runtime fills: the gradient
  /// program of tessel-run --grads, which reads the training's parameters.
  bool gradientWeightsAsStates = false;
  /// The same for the weights the module's `tessel.trainable` names: the
  /// evaluation program of tessel-run --eval, which reads the training's
  /// parameters.
  bool trainableWeightsAsStates = false;
  /// The path that errors name when `path` is a temporary directory that
  /// becomes the artifact afterwards; `path` itself when empty.
  std::string displayPath;
};

/// The name under which the artifact stores the `tessel.weight` `weight`
/// (a weight, or a STATE buffer's key): its name, and for a piece of a fused
/// parameter (`tessel.source_slice`) "NAME[dim D: START..LIMIT]".
std::string weightStorageName(Operation *weight);

/// Writes the artifact for `module` into the directory `path`: one program
/// per rank of the module's mesh (one rank when it has none). A partitioned
/// module's weights are cut per rank from their global data by their
/// `tessel.global_sharding` (and `tessel.source_slice`); inputs arrive whole and each rank
/// slices its shard; outputs are gathered so that every rank, and rank 0
/// which writes them, holds them whole. Emits an error on the offending op
/// (an op the runtime has no instruction for, an element type it does not
/// hold, a missing weight, a padded input) and fails.
LogicalResult exportArtifact(ModuleOp module, const WeightLookup &weights,
                             StringRef path, const ExportOptions &options = {});

} // namespace mlir::tessel

#endif // TESSEL_EXPORT_EXPORTARTIFACT_H
