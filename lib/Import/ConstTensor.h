//===- ConstTensor.h - tensors known at import time -------------*- C++ -*-===//
//
// Values whose contents the importer knows (Constant nodes, integer
// initializers, shapes) and the folding of ONNX ops over them, so that
// shape-computing subgraphs become constants and every tessel op is static.
// Elements are held as double (float dtypes) or int64 (integer and bool
// dtypes); `dtype` is the ONNX TensorProto data type.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_LIB_IMPORT_CONSTTENSOR_H
#define TESSEL_LIB_IMPORT_CONSTTENSOR_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace mlir::tessel::detail {

/// ONNX TensorProto.DataType values.
enum OnnxDType : int32_t {
  kUndefined = 0, kFloat = 1, kUInt8 = 2, kInt8 = 3, kUInt16 = 4, kInt16 = 5,
  kInt32 = 6, kInt64 = 7, kString = 8, kBool = 9, kFloat16 = 10, kDouble = 11,
  kUInt32 = 12, kUInt64 = 13, kBFloat16 = 16
};
bool isFloatDType(int32_t dtype);
llvm::StringRef getDTypeName(int32_t dtype);

/// The largest tensor the importer folds (elements).
constexpr int64_t kMaxFoldElements = int64_t(1) << 22;

/// The element count of `shape`, saturated at INT64_MAX when the product
/// overflows (so that `getNumElements(s) > kMaxFoldElements` guards hold);
/// shapes that reach the op importers have passed checkedByteSize.
int64_t getNumElements(llvm::ArrayRef<int64_t> shape);

/// The one checked size helper of the importer: the element count of
/// `shape` and its byte size with `width`-byte elements, or nullopt when a
/// dim is negative or either does not fit in int64_t. Every size computed
/// from a model's dims goes through it before anything is allocated.
struct CheckedSize {
  int64_t elements = 0;
  int64_t bytes = 0;
};
std::optional<CheckedSize> checkedByteSize(llvm::ArrayRef<int64_t> shape,
                                           uint64_t width);

/// `v` truncated to int64 as x86 converts it (and so the runtime's Cast and
/// PyTorch on x86): NaN and values outside int64's range give INT64_MIN
/// (a plain int64_t(v) is undefined behaviour there).
inline int64_t truncToInt64(double v) {
  if (!(v >= -9223372036854775808.0 && v < 9223372036854775808.0))
    return INT64_MIN;
  return int64_t(v);
}

/// Integer arithmetic of the folds, wrapping (two's complement) as the
/// runtime's integer kernels (runtime/cpu/Binary.cpp) and PyTorch do; x / 0
/// gives 0 like the runtime, INT64_MIN / -1 wraps to INT64_MIN.
inline int64_t wrapAdd(int64_t a, int64_t b) {
  return int64_t(uint64_t(a) + uint64_t(b));
}
inline int64_t wrapSub(int64_t a, int64_t b) {
  return int64_t(uint64_t(a) - uint64_t(b));
}
inline int64_t wrapMul(int64_t a, int64_t b) {
  return int64_t(uint64_t(a) * uint64_t(b));
}
inline int64_t wrapDiv(int64_t a, int64_t b) {
  if (b == 0)
    return 0;
  if (b == -1)
    return int64_t(uint64_t(0) - uint64_t(a));
  return a / b;
}

struct ConstTensor {
  int32_t dtype = kFloat;
  llvm::SmallVector<int64_t> shape;
  std::vector<double> f;  // float dtypes
  std::vector<int64_t> i; // integer and bool dtypes

  bool isFloat() const { return isFloatDType(dtype); }
  int64_t size() const { return isFloat() ? f.size() : i.size(); }
  double getDouble(int64_t k) const { return isFloat() ? f[k] : double(i[k]); }
  int64_t getInt(int64_t k) const {
    return isFloat() ? truncToInt64(f[k]) : i[k];
  }
  bool isSplat() const;

  static ConstTensor zeros(int32_t dtype, llvm::ArrayRef<int64_t> shape);
  static ConstTensor fromInts(llvm::ArrayRef<int64_t> values,
                              llvm::ArrayRef<int64_t> shape,
                              int32_t dtype = kInt64);
  /// Sets element k, rounding and wrapping to the dtype.
  void set(int64_t k, double v);
  void setInt(int64_t k, int64_t v);
  /// The elements as int64.
  llvm::SmallVector<int64_t> toInts() const;

  /// Little-endian bytes in the dtype's layout (bool: one byte).
  std::vector<char> toBytes() const;
  /// Decodes `count` elements of `dtype` from little-endian bytes.
  static std::optional<ConstTensor> fromBytes(int32_t dtype,
                                              llvm::ArrayRef<int64_t> shape,
                                              llvm::ArrayRef<char> bytes);
};

/// The numpy broadcast of two shapes, or nullopt.
std::optional<llvm::SmallVector<int64_t>>
broadcastShape(llvm::ArrayRef<int64_t> a, llvm::ArrayRef<int64_t> b);

// Folders. Each returns nullopt when it cannot fold (result too large,
// unsupported dtype); shape checks are the caller's.
using UnaryFn = std::function<double(double)>;
using BinaryFn = std::function<double(double, double)>;
using BinaryIntFn = std::function<int64_t(int64_t, int64_t)>;

/// Elementwise unary in double (float dtypes) or int64.
std::optional<ConstTensor> foldUnary(const ConstTensor &x, const UnaryFn &fn);
/// Elementwise binary with broadcasting; the result has `resultDType`.
std::optional<ConstTensor> foldBinary(const ConstTensor &a, const ConstTensor &b,
                                      const BinaryFn &fn,
                                      const BinaryIntFn &intFn,
                                      int32_t resultDType);
std::optional<ConstTensor> foldWhere(const ConstTensor &c, const ConstTensor &x,
                                     const ConstTensor &y);
ConstTensor foldCast(const ConstTensor &x, int32_t dtype);
ConstTensor foldReshape(const ConstTensor &x, llvm::ArrayRef<int64_t> shape);
std::optional<ConstTensor> foldTranspose(const ConstTensor &x,
                                         llvm::ArrayRef<int64_t> perm);
std::optional<ConstTensor> foldSlice(const ConstTensor &x,
                                     llvm::ArrayRef<int64_t> starts,
                                     llvm::ArrayRef<int64_t> limits,
                                     llvm::ArrayRef<int64_t> strides);
std::optional<ConstTensor> foldConcat(llvm::ArrayRef<const ConstTensor *> xs,
                                      int64_t axis);
std::optional<ConstTensor> foldExpand(const ConstTensor &x,
                                      llvm::ArrayRef<int64_t> shape);
/// `indices` already normalised to [0, size).
std::optional<ConstTensor> foldGather(const ConstTensor &data,
                                      const ConstTensor &indices, int64_t axis);

/// ONNX GatherElements; `indices` already normalised to [0, size).
std::optional<ConstTensor> foldGatherElements(const ConstTensor &data,
                                              const ConstTensor &indices,
                                              int64_t axis);
/// ONNX CumSum along `axis` (integers wrap).
std::optional<ConstTensor> foldCumSum(const ConstTensor &x, int64_t axis,
                                      bool exclusive, bool reverse);

} // namespace mlir::tessel::detail

#endif // TESSEL_LIB_IMPORT_CONSTTENSOR_H
