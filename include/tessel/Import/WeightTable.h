//===- WeightTable.h - the data of imported parameters ----------*- C++ -*-===//
//
// The importer keeps weights out of the IR: each `tessel.weight "NAME"` has an
// entry here with its dtype, shape and where its bytes are (in memory, or a
// slice of an ONNX external-data file). The exporter reads them from here to
// write the artifact's safetensors files.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_IMPORT_WEIGHTTABLE_H
#define TESSEL_IMPORT_WEIGHTTABLE_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/MemoryBuffer.h"

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

namespace mlir::tessel {

/// Element types of weights; the names are safetensors' dtype names.
enum class WeightDType : uint8_t { F32, F16, BF16, F64, I64, I32, I16, I8, U8, Bool };

/// "F32", "F16", "BF16", "F64", "I64", "I32", "I16", "I8", "U8", "BOOL".
llvm::StringRef getSafetensorsDType(WeightDType dtype);
/// Bytes per element (a bool is one byte).
unsigned getByteWidth(WeightDType dtype);

struct WeightInfo {
  /// Where the value came from: an ONNX initializer (a model parameter or
  /// buffer, named as in the model), or a Constant node / a subgraph of
  /// constants folded at import (named after the ONNX value).
  enum class Origin { Initializer, Constant };

  std::string name;
  WeightDType dtype;
  llvm::SmallVector<int64_t> shape;
  Origin origin = Origin::Initializer;
  /// Non-empty when the bytes live in an ONNX external-data file: an absolute
  /// or model-relative-resolved path, and the slice [offset, offset+length).
  std::string externalPath;
  uint64_t offset = 0;
  /// Little-endian, row-major bytes when held in memory (valid while the
  /// table lives); empty for external data (use WeightTable::getData).
  llvm::ArrayRef<char> bytes;
  /// An initializer that gives its type and no values (a model exported as
  /// shapes only, to plan and predict without its weights): getData refuses
  /// it, so an artifact cannot be made of it.
  bool shapesOnly = false;

  int64_t getNumElements() const;
  uint64_t getNumBytes() const { return getNumElements() * getByteWidth(dtype); }
  bool isExternal() const { return !externalPath.empty(); }
};

/// The weights of one imported model, in the order the IR first uses them.
class WeightTable {
public:
  WeightTable();
  ~WeightTable();
  WeightTable(WeightTable &&) = delete;

  llvm::ArrayRef<WeightInfo> getWeights() const { return weights; }
  size_t size() const { return weights.size(); }
  /// The entry named `name`, or null.
  const WeightInfo *lookup(llvm::StringRef name) const;
  /// The bytes of `weight` (getNumBytes() of them); external data is mapped
  /// from its file on first use.
  llvm::Expected<llvm::ArrayRef<char>> getData(const WeightInfo &weight);
  /// Reads bytes [offset, offset + size) of `weight` into `dst`: external
  /// data with pread from the file (kept open), so that nothing of it stays
  /// in this process's memory once the caller is done with `dst`.
  llvm::Error read(const WeightInfo &weight, uint64_t offset, size_t size,
                   char *dst);

  // Used by the importer.
  /// Adds an entry; `bytes` must outlive the table (see keepAlive/own).
  const WeightInfo &add(WeightInfo info);
  /// Keeps `owner` (e.g. the parsed model whose raw_data `bytes` point into)
  /// alive as long as the table.
  void keepAlive(std::shared_ptr<const void> owner);
  /// Takes ownership of a buffer and returns a view of it.
  llvm::ArrayRef<char> own(std::vector<char> data);

private:
  std::vector<WeightInfo> weights;
  llvm::StringMap<size_t> index;
  std::vector<std::shared_ptr<const void>> owners;
  std::deque<std::vector<char>> ownedData;
  llvm::StringMap<std::unique_ptr<llvm::MemoryBuffer>> mapped;
  /// External data files open for read(), by path.
  llvm::StringMap<int> openFiles;
};

} // namespace mlir::tessel

#endif // TESSEL_IMPORT_WEIGHTTABLE_H
