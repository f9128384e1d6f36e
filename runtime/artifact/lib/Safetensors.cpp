//===- Safetensors.cpp - The safetensors weight file format ---------------===//
#include "tessel/runtime/Safetensors.h"
#include "tessel/runtime/Artifact.h"
#include "tessel/runtime/Json.h"
#include "DTypeNames.h"
#include "tessel/support/Checked.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <memory>
#include <unistd.h>

namespace tessel::runtime {

namespace {

/// How deep a header's arrays and objects may nest (a real one nests 3).
constexpr size_t kMaxJsonDepth = 32;

/// The "dtype" of each dtype.
constexpr DTypeNames kDTypeNames = {"F32",  "I64", "I32", "BOOL",
                                    "BF16", "F16", "F64"};

} // namespace

Status parseSafetensorsHeader(
    const unsigned char *data, size_t size, const std::string &what,
    const std::function<size_t(std::string_view)> &elementSize,
    SafetensorsHeader &out) {
  auto fail = [&](const std::string &m) {
    return Status::error(what + ": invalid safetensors file: " + m);
  };
  if (size < 8)
    return fail("truncated: " + std::to_string(size) +
                " bytes, shorter than the 8-byte header length");
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i)
    n |= static_cast<uint64_t>(data[i]) << (8 * i);
  if (n > size - 8)
    return fail("truncated: header length " + std::to_string(n) +
                " exceeds the file size " + std::to_string(size));
  const std::string_view header(reinterpret_cast<const char *>(data + 8),
                                static_cast<size_t>(n));
  Json root;
  std::string error;
  bool tooDeep = false;
  if (!parseJson(header, root, error, kMaxJsonDepth, &tooDeep))
    return fail((tooDeep ? "JSON header " : "bad JSON header: ") + error);
  if (root.kind != Json::Object)
    return fail("the JSON header is not an object");
  out.tensors.clear();
  out.metadata.clear();
  out.dataStart = 8 + n;
  uint64_t dataSize = size - out.dataStart;
  for (auto &member : root.members) {
    // Not a structured binding: the lambda below captures `name`.
    const std::string &name = member.first;
    const Json &v = member.second;
    if (name == "__metadata__") {
      for (const auto &[k, m] : v.members)
        if (m.kind == Json::String)
          out.metadata.emplace(k, m.str);
      continue;
    }
    auto bad = [&](const std::string &m) { return fail("tensor '" + name + "': " + m); };
    if (v.kind != Json::Object)
      return bad("entry is not an object");
    const Json *dt = nullptr, *sh = nullptr, *off = nullptr;
    for (auto &[k, m] : v.members) {
      if (k == "dtype")
        dt = &m;
      else if (k == "shape")
        sh = &m;
      else if (k == "data_offsets")
        off = &m;
    }
    if (!dt || dt->kind != Json::String || !sh || sh->kind != Json::Array ||
        !off || off->kind != Json::Array || off->items.size() != 2)
      return bad("needs \"dtype\", \"shape\" and \"data_offsets\": [begin, end]");
    SafetensorsHeaderEntry e;
    const size_t width = elementSize(dt->str);
    if (!width)
      return bad("unsupported dtype " + dt->str);
    e.dtype = dt->str;
    for (const Json &d : sh->items) {
      if (!d.isInteger || d.integer > (uint64_t(1) << 62))
        return bad("shape entries must be non-negative integers");
      e.shape.push_back(static_cast<int64_t>(d.integer));
    }
    if (!off->items[0].isInteger || !off->items[1].isInteger)
      return bad("data_offsets must be integers");
    e.begin = off->items[0].integer;
    e.end = off->items[1].integer;
    std::optional<uint64_t> bytes =
        checkedBytes(numElements(e.shape), width, uint64_t(1) << 62);
    if (!bytes)
      return bad("shape " + shapeToString(e.shape) + " is too large (more "
                 "than 2^62 bytes of " + e.dtype + ")");
    if (e.begin > e.end || e.end > dataSize)
      return bad("data_offsets [" + std::to_string(e.begin) + ", " +
                 std::to_string(e.end) + "] outside the data section of " +
                 std::to_string(dataSize) + " bytes (truncated file?)");
    if (e.end - e.begin != *bytes)
      return bad("data_offsets span " + std::to_string(e.end - e.begin) +
                 " bytes but " + dt->str + " " + shapeToString(e.shape) +
                 " needs " + std::to_string(*bytes));
    if (!out.tensors.emplace(name, std::move(e)).second)
      return bad("duplicate tensor name");
  }
  return Status::ok();
}

Status parseSafetensors(const unsigned char *data, size_t size,
                        const std::string &what, SafetensorsIndex &out) {
  SafetensorsHeader header;
  TSL_RETURN_IF_ERROR(parseSafetensorsHeader(
      data, size, what,
      [](std::string_view name) -> size_t {
        std::optional<DType> dtype = parseDTypeIn(kDTypeNames, name);
        return dtype ? dtypeSize(*dtype) : 0;
      },
      header));
  out.tensors.clear();
  for (auto &[name, e] : header.tensors)
    out.tensors.emplace(
        name, SafetensorsEntry{*parseDTypeIn(kDTypeNames, e.dtype),
                               std::move(e.shape), e.begin, e.end});
  out.metadata = std::move(header.metadata);
  out.dataStart = header.dataStart;
  return Status::ok();
}

std::string encodeSafetensorsHeader(
    const std::vector<SafetensorsTensor> &tensors,
    const std::vector<std::pair<std::string, std::string>> &metadata,
    std::vector<size_t> &order,
    std::vector<std::pair<uint64_t, uint64_t>> &offsets) {
  order.clear();
  for (size_t i = 0; i < tensors.size(); ++i)
    order.push_back(i);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return dtypeSize(tensors[a].dtype) > dtypeSize(tensors[b].dtype);
  });
  offsets.assign(tensors.size(), {0, 0});
  // "format": "tessel" unless the metadata names one ("pt": PyTorch's
  // weights, which transformers' from_pretrained asks for).
  bool format = false;
  for (const auto &entry : metadata)
    format |= entry.first == "format";
  std::string header = "{\"__metadata__\":{";
  if (!format)
    header += "\"format\":\"tessel\"";
  for (const auto &[key, value] : metadata)
    header += std::string(header.back() == '{' ? "" : ",") + jsonQuote(key) +
              ":" + jsonQuote(value);
  header += "}";
  uint64_t offset = 0;
  for (size_t i : order) {
    const SafetensorsTensor &t = tensors[i];
    uint64_t bytes = static_cast<uint64_t>(numElements(t.shape)) * dtypeSize(t.dtype);
    header += "," + jsonQuote(t.name) + ":{\"dtype\":\"" +
              dtypeNameIn(kDTypeNames, t.dtype, "") + "\",\"shape\":[";
    for (size_t d = 0; d < t.shape.size(); ++d)
      header += (d ? "," : "") + std::to_string(t.shape[d]);
    header += "],\"data_offsets\":[" + std::to_string(offset) + "," +
              std::to_string(offset + bytes) + "]}";
    offsets[i] = {offset, offset + bytes};
    offset += bytes;
  }
  header += "}";
  header.append((64 - (8 + header.size()) % 64) % 64, ' ');
  std::string out(8, '\0');
  uint64_t n = header.size();
  for (int i = 0; i < 8; ++i)
    out[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  out += header;
  return out;
}

Status writeSafetensors(
    const std::string &path, const std::vector<SafetensorsSource> &tensors,
    const std::vector<std::pair<std::string, std::string>> &metadata,
    bool sync, WrittenFile &out) {
  std::vector<SafetensorsTensor> heads;
  for (const SafetensorsSource &t : tensors)
    heads.push_back({t.name, t.dtype, t.shape, nullptr});
  std::vector<size_t> order;
  out = WrittenFile();
  std::string head = encodeSafetensorsHeader(heads, metadata, order,
                                             out.offsets);
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    return Status::error(path + ": cannot open for writing: " +
                         std::strerror(errno));
  // Pieces are gathered into a window of 4 MiB before each write().
  constexpr size_t kWindow = size_t(4) << 20;
  std::string window;
  window.reserve(kWindow);
  auto flush = [&]() -> Status {
    size_t done = 0;
    while (done < window.size()) {
      ssize_t n = ::write(fd, window.data() + done, window.size() - done);
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0)
        return Status::error(path + ": write failed: " + std::strerror(errno));
      done += static_cast<size_t>(n);
    }
    out.crc32c = crc32c(window.data(), window.size(), out.crc32c);
    out.size += window.size();
    window.clear();
    return Status::ok();
  };
  auto put = [&](const char *data, size_t n) -> Status {
    while (n) {
      size_t k = std::min(n, kWindow - window.size());
      window.append(data, k);
      data += k;
      n -= k;
      if (window.size() == kWindow)
        TSL_RETURN_IF_ERROR(flush());
    }
    return Status::ok();
  };
  Status status = put(head.data(), head.size());
  for (size_t i : order) {
    if (!status)
      break;
    const SafetensorsSource &t = tensors[i];
    uint64_t want = out.offsets[i].second - out.offsets[i].first, got = 0;
    status = t.write([&](const void *data, size_t n) -> Status {
      if (got + n > want)
        return Status::error("weight '" + t.name + "': its source gives "
                             "more than its " + std::to_string(want) +
                             " bytes");
      got += n;
      return put(static_cast<const char *>(data), n);
    });
    if (status && got != want)
      status = Status::error("weight '" + t.name + "': its source gave " +
                             std::to_string(got) + " of its " +
                             std::to_string(want) + " bytes");
  }
  if (status)
    status = flush();
  if (status && sync && ::fsync(fd) != 0)
    status = Status::error(path + ": fsync failed: " + std::strerror(errno));
  if (::close(fd) != 0 && status)
    status = Status::error(path + ": close failed: " + std::strerror(errno));
  return status;
}

std::string encodeSafetensors(
    const std::vector<SafetensorsTensor> &tensors,
    const std::vector<std::pair<std::string, std::string>> &metadata) {
  std::vector<size_t> order;
  std::vector<std::pair<uint64_t, uint64_t>> offsets;
  std::string out =
      encodeSafetensorsHeader(tensors, metadata, order, offsets);
  out.reserve(out.size() + (offsets.empty() ? 0 : offsets[order.back()].second));
  for (size_t i : order)
    out.append(static_cast<const char *>(tensors[i].data),
               offsets[i].second - offsets[i].first);
  return out;
}

} // namespace tessel::runtime
