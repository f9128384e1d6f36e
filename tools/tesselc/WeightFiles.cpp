//===- WeightFiles.cpp - tesselc --weights: weights without a graph -------===//
#include "WeightFiles.h"

#include "dialects/tessel/TesselOps.h"

#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/Endian.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/MemoryBuffer.h"

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
    uint64_t bytes = mlir::tessel::getByteWidth(*dtype);
    for (const json::Value &d : *shape) {
      std::optional<int64_t> n = d.getAsInteger();
      if (!n || *n < 0)
        return bad("bad shape");
      if (*n && bytes > UINT64_MAX / uint64_t(*n))
        return bad("its size overflows");
      bytes *= uint64_t(*n);
      info.shape.push_back(*n);
    }
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
