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

namespace tessel::runtime::comm {

/// A tensor seen as [outer, size, inner] around dim `d`; inner in bytes.
struct DimSplit {
  int64_t outer = 1;
  int64_t size = 1;
  size_t innerBytes = 0;
};
DimSplit splitAt(const Shape &shape, int64_t d, size_t elementSize);

/// Copies entries [off, off + k) along the dim of `s` from `src` (laid out as
/// `s`) into `dst`, contiguous ([outer, k, inner]).
void extractChunk(const void *src, const DimSplit &s, int64_t off, int64_t k,
                  void *dst);
/// The inverse: writes a contiguous [outer, k, inner] block at `off` of
/// `dst` (laid out as `s`).
void insertChunk(const void *src, const DimSplit &s, int64_t off, int64_t k,
                 void *dst);

/// acc[i] = acc[i] (kind) x[i]; Mean accumulates a sum.
void reduceInto(ReduceKind kind, DType dtype, void *acc, const void *x,
                int64_t n);
/// Divides f32 `data` by `members` (the end of a Mean).
void finishMean(DType dtype, void *data, int64_t n, int members);

} // namespace tessel::runtime::comm

#endif // TESSEL_RUNTIME_COMM_LAYOUT_H
