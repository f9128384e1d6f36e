//===- OnnxExport.cpp - tessel-run --export-onnx --------------------------===//
#include "tessel/tooling/OnnxExport.h"
#include "tessel/tooling/TrainedTensors.h"
#include "tessel/tooling/TrainingInfo.h"

#include "tessel/runtime/MappedFile.h"

#include <cstdio>
#include <cstring>
#include <unistd.h>

using namespace tessel::runtime;

namespace tessel::tooling {

namespace {

// Protobuf wire format: a varint, a key (field << 3 | wire type), a
// length-delimited field.
void varint(std::string &out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}
void key(std::string &out, int field, int wireType) {
  varint(out, static_cast<uint64_t>(field) << 3 | wireType);
}
void bytesField(std::string &out, int field, const std::string &bytes) {
  key(out, field, 2);
  varint(out, bytes.size());
  out += bytes;
}

/// onnx.TensorProto.DataType of a runtime dtype.
int onnxType(DType t) {
  switch (t) {
  case DType::F32: return 1;  // FLOAT
  case DType::I64: return 7;  // INT64
  case DType::I32: return 6;  // INT32
  case DType::Bool: return 9; // BOOL
  }
  return 0;
}

/// An onnx.TensorProto: dims = 1, data_type = 2, name = 8, raw_data = 9.
std::string tensorProto(const std::string &name, const Tensor &t) {
  std::string out;
  for (int64_t d : t.shape()) {
    key(out, 1, 0);
    varint(out, static_cast<uint64_t>(d));
  }
  key(out, 2, 0);
  varint(out, onnxType(t.dtype()));
  bytesField(out, 8, name);
  bytesField(out, 9,
             std::string(static_cast<const char *>(t.data()), t.byteSize()));
  return out;
}

} // namespace

Status exportOnnx(const std::string &artifactDir,
                  const artifact::TrainingInfo &info, const SavedStates &saved,
                  const std::string &outPath) {
  const std::string what = "--export-onnx " + outPath;
  if (info.source_model().empty())
    return Status::error(what + ": " + artifactDir + " has no source model");
  std::shared_ptr<MappedFile> source;
  bool present = false;
  TSL_RETURN_IF_ERROR(
      openArtifactFile(artifactDir, info.source_model(), source, present));
  if (!present)
    return Status::error(what + ": " + artifactDir + "/" +
                         info.source_model() + ": missing from the artifact");
  // Each trained tensor, put together from its pieces' states.
  std::string graph;
  for (const auto &[name, pieces] : trainedPieces(info)) {
    Tensor whole;
    TSL_RETURN_IF_ERROR(assembleTrained(what, name, pieces, saved, whole));
    bytesField(graph, 5, tensorProto(name, whole)); // GraphProto.initializer
  }
  // ModelProto.graph = 7, merged into the source model's graph.
  std::string bytes(reinterpret_cast<const char *>(source->data()),
                    source->size());
  bytesField(bytes, 7, graph);
  const std::string tmp = outPath + ".tmp-" + std::to_string(::getpid());
  if (Status s = writeBytesSynced(tmp, bytes); !s) {
    std::remove(tmp.c_str());
    return Status::error(what + ": " + s.message());
  }
  if (std::rename(tmp.c_str(), outPath.c_str()) != 0) {
    std::remove(tmp.c_str());
    return Status::error(what + ": cannot rename " + tmp);
  }
  return Status::ok();
}

} // namespace tessel::tooling
