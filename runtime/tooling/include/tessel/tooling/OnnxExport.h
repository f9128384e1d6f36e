//===- OnnxExport.h - tessel-run --export-onnx ------------------*- C++ -*-===//
//
// Writes the trained ONNX model: the artifact's source model (the original
// without the tensors training changes, `tesselc --train`) with those
// tensors appended as initializers holding their trained values, each put
// together from the states of a checkpoint (the pieces of a fused
// parameter, the blocks of every rank). The ONNX file is the protobuf
// ModelProto; the initializers are appended as a second serialized
// `graph` field, which protobuf merges into the first (repeated fields
// concatenate), so the runtime needs no ONNX library.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_TOOLING_ONNXEXPORT_H
#define TESSEL_TOOLING_ONNXEXPORT_H

#include "tessel/tooling/Checkpoint.h"

#include "artifact.pb.h"

#include <cstdint>
#include <string>

namespace tessel::tooling {

/// Where the trained tensors' bytes go.
struct ExportOptions {
  /// In `OUT.data` beside the model (ONNX external data: location, offset,
  /// length; offsets aligned to 4 KiB), streamed one tensor at a time, so
  /// that neither the model file nor tessel-run's memory holds them all:
  /// always with `external`, else when they exceed `inlineLimit` bytes (a
  /// protobuf holds at most 2 GiB; torch.onnx.export moves data out from
  /// 2 GiB on).
  bool external = false;
  uint64_t inlineLimit = uint64_t(1) << 30;
};

/// Writes `outPath` (atomically: a temporary file, fsync'ed, renamed; the
/// data file first) from `artifactDir`'s source model and the trained
/// tensors `info` lists, their values from `saved`.
runtime::Status exportOnnx(const std::string &artifactDir,
                           const artifact::TrainingInfo &info,
                           const SavedStates &saved,
                           const std::string &outPath,
                           const ExportOptions &options = {});

} // namespace tessel::tooling

#endif // TESSEL_TOOLING_ONNXEXPORT_H
