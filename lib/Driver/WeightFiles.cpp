//===- WeightFiles.cpp - tesselc --weights: weights without a graph -------===//
#include "WeightFiles.h"

#include "dialects/tessel/TesselOps.h"

#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/Endian.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/MemoryBuffer.h"

#include "tessel/runtime/Npy.h"
#include "tessel/runtime/Safetensors.h"
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

/// The file at `path`, whole.
Expected<std::unique_ptr<MemoryBuffer>> readWeightsFile(StringRef path) {
  auto buffer = MemoryBuffer::getFile(path, /*IsText=*/false,
                                      /*RequiresNullTerminator=*/false);
  if (!buffer)
    return failure("--weights " + path + ": " + buffer.getError().message());
  return std::move(*buffer);
}

} // namespace

// The headers are parsed by the artifact library's readers
// (tessel/runtime/Safetensors.h, Npy.h), with the weights' element types.
Expected<std::unique_ptr<mlir::tessel::WeightTable>>
readSafetensorsWeights(StringRef path) {
  Expected<std::unique_ptr<MemoryBuffer>> buffer = readWeightsFile(path);
  if (!buffer)
    return buffer.takeError();
  StringRef data = (*buffer)->getBuffer();
  // The two refusals tesselc has always worded so (the runtime's reader
  // says "invalid safetensors file: ..."): too short for a header length,
  // and a header nested too deep to parse.
  if (data.size() < 8)
    return failure("--weights " + path +
                   ": not a safetensors file (shorter than its 8-byte header "
                   "length)");
  uint64_t headerSize =
      support::endian::read64le(reinterpret_cast<const uint8_t *>(data.data()));
  constexpr size_t kMaxHeaderDepth = 32;
  if (headerSize <= data.size() - 8)
    if (::tessel::JsonNesting n = ::tessel::jsonNesting(
            data.substr(8, headerSize), kMaxHeaderDepth);
        n.exceeds())
      return failure("--weights " + path + ": the header is " +
                     n.describe(kMaxHeaderDepth));
  runtime::SafetensorsHeader header;
  if (runtime::Status s = runtime::parseSafetensorsHeader(
          reinterpret_cast<const unsigned char *>(data.data()), data.size(),
          ("--weights " + path).str(),
          [](std::string_view name) -> size_t {
            std::optional<WeightDType> dtype = dtypeOf(name);
            return dtype ? mlir::tessel::getByteWidth(*dtype) : 0;
          },
          header);
      !s)
    return failure(s.message());
  auto table = std::make_unique<mlir::tessel::WeightTable>();
  for (const auto &[name, e] : header.tensors) {
    mlir::tessel::WeightInfo info;
    info.name = name;
    info.dtype = *dtypeOf(e.dtype);
    info.shape.assign(e.shape.begin(), e.shape.end());
    info.bytes = ArrayRef<char>(data.data() + header.dataStart + e.begin,
                                e.end - e.begin);
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
  runtime::NpyHeader header;
  if (runtime::Status s =
          runtime::parseNpyHeader(npy.data(), npy.size(), where.str(), header);
      !s)
    return failure(s.message());
  StringRef descr = header.descr;
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
  info.shape.assign(header.shape.begin(), header.shape.end());
  std::optional<uint64_t> checked = shapeBytes(info.shape, *dtype);
  if (!checked)
    return bad("shape " + shapeText(info.shape) +
               ": its byte size overflows 64 bits");
  const uint64_t bytes = *checked;
  StringRef data = npy.substr(header.dataStart);
  if (data.size() != bytes)
    return bad("holds " + Twine(data.size()) + " data bytes; " + descr + " " +
               shapeText(info.shape) + " needs " + Twine(bytes));
  info.dtype = *dtype;
  info.bytes = ArrayRef<char>(data.data(), data.size());
  return Error::success();
}

} // namespace

Expected<std::unique_ptr<mlir::tessel::WeightTable>>
readNpzWeights(StringRef path) {
  Expected<std::unique_ptr<MemoryBuffer>> buffer = readWeightsFile(path);
  if (!buffer)
    return buffer.takeError();
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
