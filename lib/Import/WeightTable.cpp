//===- WeightTable.cpp - the data of imported parameters ------------------===//

#include "tessel/Import/WeightTable.h"

#include "llvm/ADT/Twine.h"
#include "llvm/Support/Errc.h"
#include "tessel/support/Checked.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>

using namespace mlir::tessel;

llvm::StringRef mlir::tessel::getSafetensorsDType(WeightDType dtype) {
  switch (dtype) {
  case WeightDType::F32: return "F32";
  case WeightDType::F16: return "F16";
  case WeightDType::BF16: return "BF16";
  case WeightDType::F64: return "F64";
  case WeightDType::I64: return "I64";
  case WeightDType::I32: return "I32";
  case WeightDType::I16: return "I16";
  case WeightDType::I8: return "I8";
  case WeightDType::U8: return "U8";
  case WeightDType::Bool: return "BOOL";
  }
  return "?";
}

unsigned mlir::tessel::getByteWidth(WeightDType dtype) {
  switch (dtype) {
  case WeightDType::F64:
  case WeightDType::I64: return 8;
  case WeightDType::F32:
  case WeightDType::I32: return 4;
  case WeightDType::F16:
  case WeightDType::BF16:
  case WeightDType::I16: return 2;
  case WeightDType::I8:
  case WeightDType::U8:
  case WeightDType::Bool: return 1;
  }
  return 1;
}

int64_t WeightInfo::getNumElements() const {
  // The readers checked the shape; saturated all the same.
  return ::tessel::checkedProduct(shape).value_or(INT64_MAX);
}

WeightTable::WeightTable() = default;
WeightTable::~WeightTable() {
  for (auto &entry : openFiles)
    ::close(entry.second);
}

const WeightInfo *WeightTable::lookup(llvm::StringRef name) const {
  auto it = index.find(name);
  return it == index.end() ? nullptr : &weights[it->second];
}

const WeightInfo &WeightTable::add(WeightInfo info) {
  index[info.name] = weights.size();
  weights.push_back(std::move(info));
  return weights.back();
}

void WeightTable::keepAlive(std::shared_ptr<const void> owner) {
  owners.push_back(std::move(owner));
}

llvm::ArrayRef<char> WeightTable::own(std::vector<char> data) {
  ownedData.push_back(std::move(data));
  return ownedData.back();
}

static llvm::Error shapesOnlyError(const WeightInfo &weight) {
  return llvm::createStringError(
      llvm::errc::invalid_argument,
      "weight '" + weight.name +
          "' has no data: the model gives its initializers' shapes only; "
          "--predict, --plan=auto with --emit=plan and --emit=mlir, "
          "propagated or partitioned work without data, an artifact needs "
          "the weights");
}

llvm::Error WeightTable::read(const WeightInfo &weight, uint64_t offset,
                              size_t size, char *dst) {
  if (weight.shapesOnly)
    return shapesOnlyError(weight);
  if (offset > weight.getNumBytes() || size > weight.getNumBytes() - offset)
    return llvm::createStringError(
        llvm::errc::invalid_argument,
        "weight '" + weight.name + "': bytes [" + llvm::Twine(offset) + ", " +
            llvm::Twine(offset + size) + ") lie past its " +
            llvm::Twine(weight.getNumBytes()));
  if (!weight.isExternal()) {
    std::memcpy(dst, weight.bytes.data() + offset, size);
    return llvm::Error::success();
  }
  auto it = openFiles.find(weight.externalPath);
  if (it == openFiles.end()) {
    int fd = ::open(weight.externalPath.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
      return llvm::createStringError(
          std::error_code(errno, std::generic_category()),
          "cannot read the data of weight '" + weight.name + "' from '" +
              weight.externalPath + "': " + std::strerror(errno));
    it = openFiles.try_emplace(weight.externalPath, fd).first;
  }
  uint64_t at = weight.offset + offset;
  while (size) {
    ssize_t n = ::pread(it->second, dst, size, static_cast<off_t>(at));
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return llvm::createStringError(
          llvm::errc::invalid_argument,
          "external data file '" + weight.externalPath +
              "' is too short for weight '" + weight.name + "' (offset " +
              llvm::Twine(weight.offset) + ", length " +
              llvm::Twine(weight.getNumBytes()) + ")" +
              (n < 0 ? llvm::Twine(": ") + std::strerror(errno) : ""));
    dst += n;
    at += static_cast<uint64_t>(n);
    size -= static_cast<size_t>(n);
  }
  return llvm::Error::success();
}

llvm::Expected<llvm::ArrayRef<char>>
WeightTable::getData(const WeightInfo &weight) {
  if (weight.shapesOnly)
    return shapesOnlyError(weight);
  if (!weight.isExternal())
    return weight.bytes;
  uint64_t size = weight.getNumBytes();
  std::string key = weight.externalPath + "@" + std::to_string(weight.offset) +
                    ":" + std::to_string(size);
  auto it = mapped.find(key);
  if (it == mapped.end()) {
    auto buffer = llvm::MemoryBuffer::getFileSlice(weight.externalPath, size,
                                                   weight.offset);
    if (!buffer)
      return llvm::createStringError(
          buffer.getError(), "cannot read the data of weight '" + weight.name +
                                 "' from '" + weight.externalPath +
                                 "': " + buffer.getError().message());
    if ((*buffer)->getBufferSize() != size)
      return llvm::createStringError(
          llvm::errc::invalid_argument,
          "external data file '" + weight.externalPath + "' is too short for weight '" +
              weight.name + "'");
    it = mapped.try_emplace(key, std::move(*buffer)).first;
  }
  return llvm::ArrayRef<char>(it->second->getBufferStart(),
                              it->second->getBufferSize());
}
