//===- Layout.h - Host-side packing around flat collectives -----*- C++ -*-===//
//
// Transports move flat byte ranges; a collective along dim d of a row-major
// tensor moves, for each index of the dims before d (`outer`), a run of the
// dims from d on. These helpers (un)pack the pieces of one dim so that each
// member's piece is contiguous, and reduce flat buffers.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_RUNTIME_COMM_LAYOUT_H
#define TESSEL_RUNTIME_COMM_LAYOUT_H

#include "tessel/runtime/Communicator.h"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace tessel::runtime::comm {

/// A tensor seen as [outer, size, inner] around dim `d`; inner in bytes.
struct DimSplit {
  int64_t outer = 1;
  int64_t size = 1;
  size_t innerBytes = 0;
};
DimSplit splitAt(const Shape &shape, int64_t d, size_t elementSize);

/// The pieces [outer, chunkSize(size, n, r), inner] of the n members of a
/// split dim (Communicator.h's tensor_split convention), contiguous in
/// member order: member r's bytes are [off[r], off[r + 1]).
struct Pieces {
  std::vector<size_t> off;
  size_t bytes(int r) const { return off[r + 1] - off[r]; }
  /// The largest piece.
  size_t most() const;
};
Pieces pieces(const DimSplit &s, int n);

/// Copies bytes [lo, hi) of the piece [outer, k, inner] at entry `off` of
/// the dim of `s` from `tensor` (laid out as `s`) to contiguous `dst`;
/// unpackRange is the inverse.
void packRange(const void *tensor, const DimSplit &s, int64_t off, int64_t k,
               size_t lo, size_t hi, void *dst);
void unpackRange(const void *src, const DimSplit &s, int64_t off, int64_t k,
                 size_t lo, size_t hi, void *tensor);

/// Copies the n members' pieces of `tensor` (laid out as `s`) to `dst`,
/// contiguous in member order (pieces(s, n)); unpackPieces is the inverse.
void packPieces(const void *tensor, const DimSplit &s, int n, void *dst);
void unpackPieces(const void *src, const DimSplit &s, int n, void *tensor);

/// acc[i] = acc[i] (kind) x[i]; Mean accumulates a sum.
void reduceInto(ReduceKind kind, DType dtype, void *acc, const void *x,
                int64_t n);
/// Divides f32 `data` by `members` (the end of a Mean).
void finishMean(DType dtype, void *data, int64_t n, int members);

} // namespace tessel::runtime::comm

#endif // TESSEL_RUNTIME_COMM_LAYOUT_H
