//===- WeightFiles.cpp - tesselc --weights: weights without a graph -------===//
#include "WeightFiles.h"

#include "dialects/tessel/TesselOps.h"

#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/Endian.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/MemoryBuffer.h"

#include "tessel/support/Checked.h"
#include "tessel/support/JsonNesting.h"

using namespace llvm;
using mlir::tessel::WeightDType;

namespace tessel {

namespace {

Error failure(const Twine &message) {
  return createStringError(inconvertibleErrorCode(), message);
}

std::optional<WeightDType> dtypeOf(StringRef name) {
  return StringSwitch<std::optional<WeightDType>>(name)
      .Case("F32", WeightDType::F32)
      .Case("F16", WeightDType::F16)
      .Case("BF16", WeightDType::BF16)
      .Case("F64", WeightDType::F64)
      .Case("I64", WeightDType::I64)
      .Case("I32", WeightDType::I32)
      .Case("I16", WeightDType::I16)
      .Case("I8", WeightDType::I8)
      .Case("U8", WeightDType::U8)
      .Case("BOOL", WeightDType::Bool)
      .Default(std::nullopt);
}

/// The dtype a tensor element type is stored as, if any.
std::optional<WeightDType> dtypeOf(mlir::Type type) {
  if (type.isF32()) return WeightDType::F32;
  if (type.isF16()) return WeightDType::F16;
  if (type.isBF16()) return WeightDType::BF16;
  if (type.isF64()) return WeightDType::F64;
  if (type.isInteger(64)) return WeightDType::I64;
  if (type.isInteger(32)) return WeightDType::I32;
  if (type.isInteger(16)) return WeightDType::I16;
  if (type.isInteger(8)) return WeightDType::I8;
  if (type.isInteger(1)) return WeightDType::Bool;
  return std::nullopt;
}

std::string shapeText(ArrayRef<int64_t> shape) {
  std::string s = "[";
  for (auto [i, d] : llvm::enumerate(shape))
    s += (i ? ", " : "") + std::to_string(d);
  return s + "]";
}

/// The byte size of a tensor of `shape` and `dtype` from a weights file, or
/// nullopt when it overflows.
std::optional<uint64_t> shapeBytes(ArrayRef<int64_t> shape, WeightDType dtype) {
  std::optional<int64_t> n = ::tessel::checkedProduct(shape);
  return n ? ::tessel::checkedBytes(*n, mlir::tessel::getByteWidth(dtype))
           : std::nullopt;
}

} // namespace

Expected<std::unique_ptr<mlir::tessel::WeightTable>>
readSafetensorsWeights(StringRef path) {
  auto buffer = MemoryBuffer::getFile(path, /*IsText=*/false,
                                      /*RequiresNullTerminator=*/false);
  if (!buffer)
    return failure("--weights " + path + ": " + buffer.getError().message());
  StringRef data = (*buffer)->getBuffer();
  if (data.size() < 8)
    return failure("--weights " + path +
                   ": not a safetensors file (shorter than its 8-byte header "
                   "length)");
  uint64_t headerSize =
      support::endian::read64le(reinterpret_cast<const uint8_t *>(data.data()));
  if (headerSize > data.size() - 8)
    return failure("--weights " + path + ": the header length " +
                   Twine(headerSize) + " exceeds the file (" +
                   Twine(data.size()) + " bytes)");
  // llvm::json::parse recurses once per level: the depth is checked first.
  constexpr size_t kMaxHeaderDepth = 32;
  if (::tessel::JsonNesting n =
          ::tessel::jsonNesting(data.substr(8, headerSize), kMaxHeaderDepth);
      n.exceeds())
    return failure("--weights " + path + ": the header is " +
                   n.describe(kMaxHeaderDepth));
  Expected<json::Value> header = json::parse(data.substr(8, headerSize));
  if (!header)
    return failure("--weights " + path + ": bad header: " +
                   toString(header.takeError()));
  const json::Object *top = header->getAsObject();
  if (!top)
    return failure("--weights " + path + ": the header is not a JSON object");
  StringRef body = data.substr(8 + headerSize);
  auto table = std::make_unique<mlir::tessel::WeightTable>();
  for (const auto &[key, value] : *top) {
    StringRef name = key;
    if (name == "__metadata__")
      continue;
    auto bad = [&](const Twine &what) {
      return failure("--weights " + path + ": tensor '" + name + "': " + what);
    };
    const json::Object *t = value.getAsObject();
    if (!t)
      return bad("not an object");
    std::optional<StringRef> dtypeName = t->getString("dtype");
    std::optional<WeightDType> dtype =
        dtypeName ? dtypeOf(*dtypeName) : std::nullopt;
    if (!dtype)
      return bad("unsupported dtype '" + dtypeName.value_or("") + "'");
    const json::Array *shape = t->getArray("shape");
    const json::Array *offsets = t->getArray("data_offsets");
    if (!shape || !offsets || offsets->size() != 2)
      return bad("needs 'shape' and two 'data_offsets'");
    mlir::tessel::WeightInfo info;
    info.name = name.str();
    info.dtype = *dtype;
    for (const json::Value &d : *shape) {
      std::optional<int64_t> n = d.getAsInteger();
      if (!n || *n < 0)
        return bad("bad shape");
      info.shape.push_back(*n);
    }
    std::optional<uint64_t> checked = shapeBytes(info.shape, *dtype);
    if (!checked)
      return bad("shape " + shapeText(info.shape) +
                 ": its byte size overflows 64 bits");
    const uint64_t bytes = *checked;
    std::optional<int64_t> begin = (*offsets)[0].getAsInteger();
    std::optional<int64_t> end = (*offsets)[1].getAsInteger();
    if (!begin || !end || *begin < 0 || *end < *begin ||
        uint64_t(*end) > body.size())
      return bad("data_offsets outside the file's " + Twine(body.size()) +
                 " data bytes");
    if (uint64_t(*end - *begin) != bytes)
      return bad("data_offsets hold " + Twine(*end - *begin) + " bytes; " +
                 dtypeName->str() + " " + shapeText(info.shape) + " needs " +
                 Twine(bytes));
    info.bytes = ArrayRef<char>(body.data() + *begin, bytes);
    table->add(std::move(info));
  }
  table->keepAlive(std::shared_ptr<const void>(std::move(*buffer)));
  return std::move(table);
}

namespace {

/// One .npy member of an .npz: its dtype and shape from the header, the
/// data after it. `where` names it in messages.
Error readNpy(StringRef npy, const Twine &where, mlir::tessel::WeightInfo &info) {
  auto bad = [&](const Twine &what) { return failure(where + ": " + what); };
  if (npy.size() < 10 || !npy.starts_with("\x93NUMPY"))
    return bad("not a .npy array");
  uint8_t major = uint8_t(npy[6]);
  size_t lengthBytes = major == 1 ? 2 : 4;
  if (npy.size() < 8 + lengthBytes)
    return bad("truncated header");
  uint64_t headerLength =
      lengthBytes == 2
          ? support::endian::read16le(npy.data() + 8)
          : support::endian::read32le(npy.data() + 8);
  size_t start = 8 + lengthBytes;
  if (headerLength > npy.size() - start)
    return bad("the header runs past the data");
  StringRef header = npy.substr(start, headerLength);
  StringRef data = npy.substr(start + headerLength);
  auto field = [&](StringRef key) -> StringRef {
    size_t at = header.find("'" + key.str() + "'");
    if (at == StringRef::npos)
      return "";
    StringRef rest = header.substr(at + key.size() + 2).ltrim(" :");
    return rest;
  };
  StringRef descr = field("descr");
  if (!descr.consume_front("'"))
    return bad("no 'descr' in the header");
  descr = descr.take_until([](char c) { return c == '\''; });
  std::optional<WeightDType> dtype =
      StringSwitch<std::optional<WeightDType>>(descr)
          .Case("<f4", WeightDType::F32)
          .Case("<f2", WeightDType::F16)
          .Case("<f8", WeightDType::F64)
          .Case("<i8", WeightDType::I64)
          .Case("<i4", WeightDType::I32)
          .Case("<i2", WeightDType::I16)
          .Case("|i1", WeightDType::I8)
          .Case("|u1", WeightDType::U8)
          .Case("|b1", WeightDType::Bool)
          .Default(std::nullopt);
  if (!dtype)
    return bad("unsupported dtype '" + descr + "'");
  if (field("fortran_order").starts_with("True"))
    return bad("Fortran order; save a C-ordered array");
  StringRef shape = field("shape");
  if (!shape.consume_front("("))
    return bad("no 'shape' in the header");
  shape = shape.take_until([](char c) { return c == ')'; });
  SmallVector<StringRef> dims;
  shape.split(dims, ',', -1, /*KeepEmpty=*/false);
  info.shape.clear();
  for (StringRef d : dims) {
    int64_t n;
    if (d.trim().empty())
      continue;
    if (d.trim().getAsInteger(10, n) || n < 0)
      return bad("bad shape (" + shape + ")");
    info.shape.push_back(n);
  }
  std::optional<uint64_t> checked = shapeBytes(info.shape, *dtype);
  if (!checked)
    return bad("shape (" + shape + "): its byte size overflows 64 bits");
  const uint64_t bytes = *checked;
  if (data.size() != bytes)
    return bad("holds " + Twine(data.size()) + " data bytes; " + descr +
               " (" + shape + ") needs " + Twine(bytes));
  info.dtype = *dtype;
  info.bytes = ArrayRef<char>(data.data(), data.size());
  return Error::success();
}

} // namespace

Expected<std::unique_ptr<mlir::tessel::WeightTable>>
readNpzWeights(StringRef path) {
  auto buffer = MemoryBuffer::getFile(path, /*IsText=*/false,
                                      /*RequiresNullTerminator=*/false);
  if (!buffer)
    return failure("--weights " + path + ": " + buffer.getError().message());
  StringRef zip = (*buffer)->getBuffer();
  auto bad = [&](const Twine &what) {
    return failure("--weights " + path + ": " + what);
  };
  // The end of central directory record: the last "PK\5\6" within the
  // final 64 KiB + 22 bytes.
  size_t end = StringRef::npos;
  size_t lowest = zip.size() > 65557 ? zip.size() - 65557 : 0;
  for (size_t at = zip.size() >= 22 ? zip.size() - 22 : StringRef::npos;
       at != StringRef::npos && at >= lowest; --at) {
    if (zip.substr(at, 4) == StringRef("PK\x05\x06", 4)) {
      end = at;
      break;
    }
    if (at == 0)
      break;
  }
  if (end == StringRef::npos)
    return bad("not an .npz (zip) file");
  const char *e = zip.data() + end;
  uint16_t entries = support::endian::read16le(e + 10);
  uint32_t dirOffset = support::endian::read32le(e + 16);
  if (dirOffset == 0xffffffffu)
    return bad("a zip64 archive (over 4 GB) is not supported");
  auto table = std::make_unique<mlir::tessel::WeightTable>();
  size_t at = dirOffset;
  for (unsigned i = 0; i < entries; ++i) {
    if (at + 46 > zip.size() || zip.substr(at, 4) != StringRef("PK\x01\x02", 4))
      return bad("a broken central directory");
    const char *c = zip.data() + at;
    uint16_t method = support::endian::read16le(c + 10);
    uint32_t size = support::endian::read32le(c + 20);
    uint16_t nameLength = support::endian::read16le(c + 28);
    uint16_t extraLength = support::endian::read16le(c + 30);
    uint16_t commentLength = support::endian::read16le(c + 32);
    uint32_t local = support::endian::read32le(c + 42);
    if (at + 46 + nameLength > zip.size())
      return bad("a broken central directory");
    StringRef name = zip.substr(at + 46, nameLength);
    at += 46 + nameLength + extraLength + commentLength;
    if (method != 0)
      return bad("member '" + name +
                 "' is compressed (np.savez_compressed); write it with "
                 "np.savez");
    if (uint64_t(local) + 30 > zip.size() ||
        zip.substr(local, 4) != StringRef("PK\x03\x04", 4))
      return bad("member '" + name + "' has a broken local header");
    const char *l = zip.data() + local;
    uint64_t data = uint64_t(local) + 30 + support::endian::read16le(l + 26) +
                    support::endian::read16le(l + 28);
    if (data + size > zip.size())
      return bad("member '" + name + "' runs past the end of the file");
    StringRef tensor = name;
    tensor.consume_back(".npy");
    mlir::tessel::WeightInfo info;
    info.name = tensor.str();
    if (Error err = readNpy(zip.substr(data, size),
                            "--weights " + path + ": '" + name + "'", info))
      return std::move(err);
    table->add(std::move(info));
  }
  table->keepAlive(std::shared_ptr<const void>(std::move(*buffer)));
  return std::move(table);
}

Error checkWeights(mlir::ModuleOp module,
                   const mlir::tessel::WeightTable &table, StringRef from) {
  Error err = Error::success();
  module.walk([&](mlir::tessel::WeightOp w) {
    auto type = w.getType();
    const mlir::tessel::WeightInfo *info = table.lookup(w.getName());
    if (!info) {
      err = failure("weight '" + w.getName() + "' is not in " + from);
      return mlir::WalkResult::interrupt();
    }
    std::optional<WeightDType> dtype = dtypeOf(type.getElementType());
    if (dtype != info->dtype || ArrayRef<int64_t>(info->shape) != type.getShape()) {
      std::string want;
      llvm::raw_string_ostream os(want);
      os << type.getElementType() << " " << shapeText(type.getShape());
      err = failure("weight '" + w.getName() + "': the program wants " + want +
                    ", " + from + " holds " +
                    mlir::tessel::getSafetensorsDType(info->dtype) + " " +
                    shapeText(info->shape));
      return mlir::WalkResult::interrupt();
    }
    return mlir::WalkResult::advance();
  });
  return err;
}

} // namespace tessel
