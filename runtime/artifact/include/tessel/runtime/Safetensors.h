//===- Safetensors.h - The safetensors weight file format -------*- C++ -*-===//
//
// 8-byte little-endian header length N, N bytes of JSON
// {"name": {"dtype": "F32", "shape": [..], "data_offsets": [b, e]}, ...,
//  "__metadata__": {..}}, then the data section the offsets index.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_RUNTIME_SAFETENSORS_H
#define TESSEL_RUNTIME_SAFETENSORS_H

#include "tessel/runtime/DType.h"
#include "tessel/runtime/Status.h"

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tessel::runtime {

struct SafetensorsEntry {
  DType dtype = DType::F32;
  Shape shape;
  uint64_t begin = 0, end = 0; // relative to the data section
};

struct SafetensorsIndex {
  std::map<std::string, SafetensorsEntry> tensors;
  /// "__metadata__": its string values by key (others are skipped).
  std::map<std::string, std::string> metadata;
  uint64_t dataStart = 0; // absolute offset of the data section
};

/// Parses and checks the header of an in-memory safetensors image; `what`
/// names the file in messages.
Status parseSafetensors(const unsigned char *data, size_t size,
                        const std::string &what, SafetensorsIndex &out);

/// A header's tensor with its dtype as the file names it ("F16").
struct SafetensorsHeaderEntry {
  std::string dtype;
  Shape shape;
  uint64_t begin = 0, end = 0; // relative to the data section
};

struct SafetensorsHeader {
  std::map<std::string, SafetensorsHeaderEntry> tensors;
  std::map<std::string, std::string> metadata;
  uint64_t dataStart = 0;
};

/// parseSafetensors for a reader with element types of its own (the
/// compiler's weights take F16, BF16, F64, I16, I8 and U8 too):
/// `elementSize` gives a dtype name's bytes per element, 0 for one the
/// reader does not take. The same checks and messages.
Status parseSafetensorsHeader(
    const unsigned char *data, size_t size, const std::string &what,
    const std::function<size_t(std::string_view)> &elementSize,
    SafetensorsHeader &out);

struct SafetensorsTensor {
  std::string name;
  DType dtype;
  Shape shape;
  const void *data; // numElements(shape) * dtypeSize(dtype) bytes
};

/// The head of a safetensors file holding `tensors` (their `data` unused):
/// the 8-byte length, the JSON header and its padding to 64 bytes. Sets
/// `order` to the order in which the data section holds them (indices into
/// `tensors`) and `offsets` to each tensor's [begin, end) in it.
std::string encodeSafetensorsHeader(
    const std::vector<SafetensorsTensor> &tensors,
    const std::vector<std::pair<std::string, std::string>> &metadata,
    std::vector<size_t> &order,
    std::vector<std::pair<uint64_t, uint64_t>> &offsets);
/// Receives bytes in order, in pieces of any size.
using ByteSink = std::function<Status(const void *data, size_t size)>;
/// Produces a tensor's bytes: passes exactly them, in order, to `sink`.
using TensorSource = std::function<Status(const ByteSink &sink)>;
/// A tensor of a safetensors file written by writeSafetensors.
struct SafetensorsSource {
  std::string name;
  DType dtype;
  Shape shape;
  TensorSource write;
};
/// The size and CRC-32C of a file written, and each tensor's [begin, end)
/// in its data section.
struct WrittenFile {
  uint64_t size = 0;
  uint32_t crc32c = 0;
  std::vector<std::pair<uint64_t, uint64_t>> offsets;
};
/// Writes a safetensors file of `tensors` to `path` (created or truncated;
/// fsync'ed when `sync`), streaming each tensor's bytes from its source
/// through a 4 MiB window: the header and the window are all it holds.
/// A source that gives more or fewer bytes than its tensor's size is an
/// error naming the tensor. The layout is encodeSafetensors'.
Status writeSafetensors(
    const std::string &path, const std::vector<SafetensorsSource> &tensors,
    const std::vector<std::pair<std::string, std::string>> &metadata,
    bool sync, WrittenFile &out);
/// Serialises tensors; the data section starts 64-byte aligned and tensors
/// are ordered by decreasing element size so each is naturally aligned.
/// `metadata` joins "__metadata__" (after "format": "tessel", unless it
/// has a "format" of its own).
std::string encodeSafetensors(
    const std::vector<SafetensorsTensor> &tensors,
    const std::vector<std::pair<std::string, std::string>> &metadata = {});

} // namespace tessel::runtime

#endif // TESSEL_RUNTIME_SAFETENSORS_H
