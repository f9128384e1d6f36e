//===- OnnxExport.cpp - tessel-run --export-onnx --------------------------===//
#include "tessel/tooling/OnnxExport.h"
#include "tessel/tooling/TrainedTensors.h"
#include "tessel/tooling/TrainingInfo.h"

#include "tessel/runtime/MappedFile.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <fcntl.h>
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
  case DType::F16: return 10; // FLOAT16
  case DType::BF16: return 16; // BFLOAT16
  case DType::F64:
    return 11; // DOUBLE
  }
  return 0;
}

/// An onnx.TensorProto's dims = 1, data_type = 2 and name = 8.
std::string tensorHeader(const std::string &name, const Tensor &t) {
  std::string out;
  for (int64_t d : t.shape()) {
    key(out, 1, 0);
    varint(out, static_cast<uint64_t>(d));
  }
  key(out, 2, 0);
  varint(out, onnxType(t.dtype()));
  bytesField(out, 8, name);
  return out;
}

/// An onnx.TensorProto: its header and raw_data = 9.
std::string tensorProto(const std::string &name, const Tensor &t) {
  std::string out = tensorHeader(name, t);
  bytesField(out, 9,
             std::string(static_cast<const char *>(t.data()), t.byteSize()));
  return out;
}

/// An onnx.TensorProto whose data lies in `location` at [offset, offset +
/// length): external_data = 13 (StringStringEntryProto: key = 1, value =
/// 2), data_location = 14 (EXTERNAL = 1).
std::string externalTensorProto(const std::string &name, const Tensor &t,
                                const std::string &location, uint64_t offset) {
  std::string out = tensorHeader(name, t);
  auto entry = [&](const std::string &k, const std::string &v) {
    std::string e;
    bytesField(e, 1, k);
    bytesField(e, 2, v);
    bytesField(out, 13, e);
  };
  entry("location", location);
  entry("offset", std::to_string(offset));
  entry("length", std::to_string(t.byteSize()));
  key(out, 14, 0);
  varint(out, 1);
  return out;
}

/// The file name of `path` (its last component).
std::string baseName(const std::string &path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

/// Writes `bytes` to `fd` whole.
bool writeAll(int fd, const char *bytes, size_t n) {
  while (n > 0) {
    ssize_t w = ::write(fd, bytes, n);
    if (w < 0) {
      if (errno == EINTR)
        continue;
      return false;
    }
    bytes += w;
    n -= size_t(w);
  }
  return true;
}

} // namespace

Status exportOnnx(const std::string &artifactDir,
                  const artifact::TrainingInfo &info, const SavedStates &saved,
                  const std::string &outPath, const ExportOptions &options) {
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
  const TrainedPieces pieces = trainedPieces(info);
  uint64_t total = 0;
  for (const auto &[name, list] : pieces) {
    auto state = saved.states.find(list[0]->state());
    uint64_t n = state == saved.states.end()
                     ? 4
                     : dtypeSize(trainedDType(*list[0], state->second.dtype));
    for (int64_t d : list[0]->shape())
      n *= uint64_t(std::max<int64_t>(d, 0));
    total += n;
  }
  const bool external = options.external || total > options.inlineLimit;
  const std::string pid = std::to_string(::getpid());
  const std::string dataPath = outPath + ".data";
  const std::string dataTmp = dataPath + ".tmp-" + pid;
  int fd = -1;
  if (external) {
    fd = ::open(dataTmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
      return Status::error(what + ": cannot write " + dataTmp + ": " +
                           std::strerror(errno));
  }
  auto fail = [&](const std::string &message) {
    if (fd >= 0) {
      ::close(fd);
      std::remove(dataTmp.c_str());
    }
    return Status::error(message);
  };
  // Each trained tensor, put together from its pieces' states, one at a
  // time: inline, or streamed into the data file (offsets aligned to 4 KiB,
  // as onnx.save's external data is, so that readers may map them).
  std::string graph;
  uint64_t offset = 0;
  static const char zeros[4096] = {};
  for (const auto &[name, list] : pieces) {
    Tensor whole;
    if (Status st = assembleTrained(what, name, list, saved, whole); !st)
      return fail(st.message());
    if (!external) {
      bytesField(graph, 5, tensorProto(name, whole)); // GraphProto.initializer
      continue;
    }
    const uint64_t pad = (4096 - offset % 4096) % 4096;
    if (!writeAll(fd, zeros, pad) ||
        !writeAll(fd, static_cast<const char *>(whole.data()),
                  whole.byteSize()))
      return fail(what + ": cannot write " + dataTmp + ": " +
                  std::strerror(errno));
    offset += pad;
    bytesField(graph, 5,
               externalTensorProto(name, whole, baseName(dataPath), offset));
    offset += whole.byteSize();
  }
  if (external) {
    if (::fsync(fd) != 0)
      return fail(what + ": cannot sync " + dataTmp + ": " +
                  std::strerror(errno));
    ::close(fd);
    fd = -1;
  }
  // ModelProto.graph = 7, merged into the source model's graph.
  std::string bytes(reinterpret_cast<const char *>(source->data()),
                    source->size());
  bytesField(bytes, 7, graph);
  // The data first: a model file never names data that is not there.
  if (external && std::rename(dataTmp.c_str(), dataPath.c_str()) != 0) {
    std::remove(dataTmp.c_str());
    return Status::error(what + ": cannot rename " + dataTmp);
  }
  if (Status s = writeBytesAtomic(outPath, bytes); !s)
    return Status::error(what + ": " + s.message());
  return Status::ok();
}

} // namespace tessel::tooling
