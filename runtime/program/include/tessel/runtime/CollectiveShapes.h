//===- CollectiveShapes.h - The collectives' shape contracts ----*- C++ -*-===//
//
// What a collective takes and returns, shared by the program verifier
// (runtime/program, at load time) and every communicator (runtime/comm, at
// each call): tensors as views, how a dim splits over members, and the
// shape contract of each collective.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_RUNTIME_COLLECTIVESHAPES_H
#define TESSEL_RUNTIME_COLLECTIVESHAPES_H

#include "tessel/runtime/DType.h"
#include "tessel/runtime/ReduceKind.h"
#include "tessel/runtime/Status.h"

#include <cstdint>
#include <utility>
#include <vector>

namespace tessel::runtime {

/// A dense row-major tensor in the memory of the communicator's backend
/// (host memory for local and gloo, device memory for nccl). Operands are
/// only read.
struct TensorView {
  void *data = nullptr;
  DType dtype = DType::F32;
  Shape shape;

  TensorView() = default;
  TensorView(void *data, DType dtype, Shape shape)
      : data(data), dtype(dtype), shape(std::move(shape)) {}
  TensorView(const void *data, DType dtype, Shape shape)
      : data(const_cast<void *>(data)), dtype(dtype), shape(std::move(shape)) {}
  int64_t numel() const { return numElements(shape); }
  size_t bytes() const {
    return static_cast<size_t>(numel()) * dtypeSize(dtype);
  }
};

/// Entries of member `i` when a dim of size `total` is split over `n`.
inline int64_t chunkSize(int64_t total, int64_t n, int64_t i) {
  return total / n + (i < total % n ? 1 : 0);
}
/// First entry of member `i`'s piece.
inline int64_t chunkOffset(int64_t total, int64_t n, int64_t i) {
  return i * (total / n) + (i < total % n ? i : total % n);
}

/// The shape contracts, shared by the backends and the program validator.
/// `n` members, this one at index `index`; messages name the shapes.
Status checkAllReduceShapes(const TensorView &in, const TensorView &out,
                            ReduceKind kind);
Status checkAllGatherShapes(const TensorView &in, const TensorView &out,
                            int64_t dim, int n, int index);
Status checkReduceScatterShapes(const TensorView &in, const TensorView &out,
                                ReduceKind kind, int64_t dim, int n, int index);
Status checkAllToAllShapes(const TensorView &in, const TensorView &out,
                           int64_t splitDim, int64_t concatDim, int n,
                           int index);
Status checkPermutePairs(const std::vector<std::pair<int, int>> &pairs, int n);

} // namespace tessel::runtime

#endif // TESSEL_RUNTIME_COLLECTIVESHAPES_H
