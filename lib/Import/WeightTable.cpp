//===- WeightTable.cpp - the data of imported parameters ------------------===//

#include "tessel/Import/WeightTable.h"

#include "llvm/ADT/Twine.h"
#include "llvm/Support/Errc.h"
#include "tessel/support/Checked.h"

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
WeightTable::~WeightTable() = default;

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

llvm::Expected<llvm::ArrayRef<char>>
WeightTable::getData(const WeightInfo &weight) {
  if (weight.shapesOnly)
    return llvm::createStringError(
        llvm::errc::invalid_argument,
        "weight '" + weight.name +
            "' has no data: the model gives its initializers' shapes only; "
            "--predict, --plan=auto with --emit=plan and --emit=mlir, "
            "propagated or partitioned work without data, an artifact needs "
            "the weights");
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
