//===- Npy.cpp - NumPy .npy files -----------------------------------------===//
#include "tessel/runtime/Npy.h"

#include "DTypeNames.h"
#include "tessel/runtime/MappedFile.h"

#include <cstdio>
#include <fstream>
#include <sstream>

namespace tessel::runtime {

namespace {

const char kMagic[] = "\x93NUMPY";

/// The 'descr' of each dtype.
// numpy has no bf16: a bf16 tensor is written as f32, exactly (encodeNpy),
// and an input of bf16 takes f32 (Executor::setInputFrom).
constexpr DTypeNames kDescr = {"<f4",   "<i8", "<i4", "|b1",
                               nullptr, "<f2", "<f8"};

/// A tiny scanner over the header dict, e.g.
/// {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
struct HeaderScanner {
  std::string_view s;
  size_t pos = 0;
  void skipSpace() {
    while (pos < s.size() && (s[pos] == ' ' || s[pos] == '\t' ||
                              s[pos] == '\n' || s[pos] == '\r'))
      ++pos;
  }
  bool consume(char c) {
    skipSpace();
    if (pos < s.size() && s[pos] == c) {
      ++pos;
      return true;
    }
    return false;
  }
  bool string(std::string &out) {
    skipSpace();
    if (pos >= s.size() || (s[pos] != '\'' && s[pos] != '"'))
      return false;
    char q = s[pos++];
    size_t end = s.find(q, pos);
    if (end == std::string_view::npos)
      return false;
    out = std::string(s.substr(pos, end - pos));
    pos = end + 1;
    return true;
  }
  bool word(std::string &out) {
    skipSpace();
    size_t b = pos;
    while (pos < s.size() && isalpha(static_cast<unsigned char>(s[pos])))
      ++pos;
    out = std::string(s.substr(b, pos - b));
    return !out.empty();
  }
  bool integer(int64_t &out) {
    skipSpace();
    size_t b = pos;
    out = 0;
    while (pos < s.size() && isdigit(static_cast<unsigned char>(s[pos]))) {
      if (out > (int64_t(1) << 50))
        return false;
      out = out * 10 + (s[pos] - '0');
      ++pos;
    }
    // Python 2 era files may write longs as 3L.
    if (pos < s.size() && s[pos] == 'L')
      ++pos;
    return pos > b;
  }
};

} // namespace

namespace {

Status npyError(const std::string &what, const std::string &m) {
  return Status::error(what + ": not a valid .npy file: " + m);
}

} // namespace

Status parseNpyHeader(const void *data, size_t size, const std::string &what,
                      NpyHeader &out) {
  auto fail = [&](const std::string &m) { return npyError(what, m); };
  const char *p = static_cast<const char *>(data);
  if (size < 10 || std::memcmp(p, kMagic, 6) != 0)
    return fail("missing the \\x93NUMPY magic");
  int major = static_cast<unsigned char>(p[6]);
  size_t headerLen, headerStart;
  if (major == 1) {
    headerLen = static_cast<unsigned char>(p[8]) |
                (static_cast<size_t>(static_cast<unsigned char>(p[9])) << 8);
    headerStart = 10;
  } else if (major == 2 || major == 3) {
    if (size < 12)
      return fail("truncated header");
    headerLen = 0;
    for (int i = 0; i < 4; ++i)
      headerLen |= static_cast<size_t>(static_cast<unsigned char>(p[8 + i]))
                   << (8 * i);
    headerStart = 12;
  } else {
    return fail("unsupported format version " + std::to_string(major));
  }
  if (headerLen > size - headerStart)
    return fail("truncated header");

  HeaderScanner sc{std::string_view(p + headerStart, headerLen)};
  std::string descr;
  bool fortran = false, haveDescr = false, haveShape = false;
  Shape shape;
  if (!sc.consume('{'))
    return fail("header is not a dict");
  while (!sc.consume('}')) {
    std::string key;
    if (!sc.string(key) || !sc.consume(':'))
      return fail("malformed header dict");
    if (key == "descr") {
      if (!sc.string(descr))
        return fail("malformed 'descr'");
      haveDescr = true;
    } else if (key == "fortran_order") {
      std::string w;
      if (!sc.word(w) || (w != "True" && w != "False"))
        return fail("malformed 'fortran_order'");
      fortran = w == "True";
    } else if (key == "shape") {
      if (!sc.consume('('))
        return fail("malformed 'shape'");
      while (!sc.consume(')')) {
        int64_t d;
        if (!sc.integer(d))
          return fail("malformed 'shape'");
        shape.push_back(d);
        if (shape.size() > 64)
          return fail("too many dimensions");
        sc.consume(',');
      }
      haveShape = true;
    } else {
      return fail("unknown header key '" + key + "'");
    }
    sc.consume(',');
  }
  if (!haveDescr || !haveShape)
    return fail("header lacks 'descr' or 'shape'");
  if (fortran)
    return fail("fortran_order arrays are not supported (use C order)");
  out.descr = std::move(descr);
  out.shape = std::move(shape);
  out.dataStart = headerStart + headerLen;
  return Status::ok();
}

Status parseNpy(const void *data, size_t size, const std::string &what,
                Tensor &out) {
  auto fail = [&](const std::string &m) { return npyError(what, m); };
  NpyHeader header;
  TSL_RETURN_IF_ERROR(parseNpyHeader(data, size, what, header));
  const Shape &shape = header.shape;
  std::optional<DType> parsed = parseDTypeIn(kDescr, header.descr);
  if (!parsed)
    return fail("unsupported dtype '" + header.descr +
                "' (supported: <f4, <i8, <i4, |b1, <f2, <f8)");
  DType dtype = *parsed;
  std::optional<uint64_t> bytes = byteSize(dtype, shape);
  if (!bytes)
    return fail("shape " + shapeToString(shape) + " is too large");
  size_t need = static_cast<size_t>(*bytes);
  if (size - header.dataStart < need)
    return fail("truncated data: shape " + shapeToString(shape) + " needs " +
                std::to_string(need) + " bytes, file has " +
                std::to_string(size - header.dataStart));
  out = Tensor::fromData(dtype, shape,
                         static_cast<const char *>(data) + header.dataStart);
  return Status::ok();
}

Status readNpy(const std::string &path, Tensor &out) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return Status::error(path + ": cannot open");
  std::ostringstream ss;
  ss << in.rdbuf();
  std::string bytes = ss.str();
  return parseNpy(bytes.data(), bytes.size(), path, out);
}

std::string encodeNpy(const Tensor &t) {
  if (t.dtype() == DType::BF16)
    return encodeNpy(widenBf16(t));
  std::string header = "{'descr': '";
  header += dtypeNameIn(kDescr, t.dtype(), "");
  header += "', 'fortran_order': False, 'shape': (";
  for (size_t i = 0; i < t.shape().size(); ++i) {
    header += std::to_string(t.shape()[i]);
    if (t.shape().size() == 1 || i + 1 < t.shape().size())
      header += ",";
    if (i + 1 < t.shape().size())
      header += " ";
  }
  header += "), }";
  // Pad with spaces so that the data starts 64-byte aligned, end with '\n'.
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::string outBytes(kMagic, 6);
  outBytes += '\x01';
  outBytes += '\x00';
  outBytes += static_cast<char>(header.size() & 0xff);
  outBytes += static_cast<char>((header.size() >> 8) & 0xff);
  outBytes += header;
  outBytes.append(static_cast<const char *>(t.data()), t.byteSize());
  return outBytes;
}

Status writeNpy(const std::string &path, const Tensor &t) {
  return writeBytes(path, encodeNpy(t));
}

} // namespace tessel::runtime
