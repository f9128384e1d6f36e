//===- Tensor.h - Host tensors owned by the caller --------------*- C++ -*-===//
#ifndef TESSEL_RUNTIME_TENSOR_H
#define TESSEL_RUNTIME_TENSOR_H

#include "tessel/runtime/DType.h"

#include <cstring>
#include <memory>
#include <vector>

namespace tessel::runtime {

/// A dense, row-major tensor in host memory (64-byte aligned storage).
class Tensor {
public:
  Tensor() = default;
  Tensor(DType dtype, Shape shape);

  /// Makes a tensor and copies `numElements(shape)` elements from `data`.
  static Tensor fromData(DType dtype, Shape shape, const void *data);
  template <typename T>
  static Tensor fromVector(DType dtype, Shape shape, const std::vector<T> &v) {
    return fromData(dtype, std::move(shape), v.data());
  }

  DType dtype() const { return type; }
  const Shape &shape() const { return dims; }
  int64_t numElements() const { return count; }
  size_t byteSize() const { return count * dtypeSize(type); }

  void *data() { return storage.get(); }
  const void *data() const { return storage.get(); }
  template <typename T> T *data() { return static_cast<T *>(data()); }
  template <typename T> const T *data() const {
    return static_cast<const T *>(data());
  }

private:
  struct Free {
    void operator()(void *p) const;
  };
  DType type = DType::F32;
  Shape dims;
  int64_t count = 0;
  std::shared_ptr<void> storage;
};

/// `t` with bf16 widened to f32 (exactly), any other type as it is: for
/// numpy, which has no bf16 (npy files, Python's arrays).
Tensor widenBf16(Tensor t);

} // namespace tessel::runtime

#endif // TESSEL_RUNTIME_TENSOR_H
