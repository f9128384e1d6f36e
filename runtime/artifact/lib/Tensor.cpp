//===- Tensor.cpp - Host tensors ------------------------------------------===//
#include "tessel/runtime/Tensor.h"
#include "tessel/runtime/HalfFloat.h"

#include <cstdlib>
#include <new>

namespace tessel::runtime {

void Tensor::Free::operator()(void *p) const { std::free(p); }

Tensor::Tensor(DType dtype, Shape shape) : type(dtype), dims(std::move(shape)) {
  count = runtime::numElements(dims);
  if (count < 0)
    count = 0;
  size_t bytes = (byteSize() + 63) / 64 * 64;
  void *p = std::aligned_alloc(64, bytes ? bytes : 64);
  if (!p)
    throw std::bad_alloc();
  std::memset(p, 0, bytes ? bytes : 64);
  storage = std::shared_ptr<void>(p, Free());
}

Tensor Tensor::fromData(DType dtype, Shape shape, const void *data) {
  Tensor t(dtype, std::move(shape));
  if (t.byteSize())
    std::memcpy(t.data(), data, t.byteSize());
  return t;
}

Tensor widenBf16(Tensor t) {
  if (t.dtype() != DType::BF16)
    return t;
  Tensor wide(DType::F32, t.shape());
  widenHalves(DType::BF16, t.data<uint16_t>(), wide.data<float>(),
              static_cast<size_t>(t.numElements()));
  return wide;
}

} // namespace tessel::runtime
