//===- Layout.cpp - Host-side packing around flat collectives -------------===//
#include "Layout.h"
#include "tessel/ops/DTypeDispatch.h"

#include <algorithm>
#include <cstring>
#include <type_traits>

namespace tessel::runtime::comm {

DimSplit splitAt(const Shape &shape, int64_t d, size_t elementSize) {
  DimSplit s;
  s.innerBytes = elementSize;
  for (int64_t i = 0; i < static_cast<int64_t>(shape.size()); ++i) {
    if (i < d)
      s.outer *= shape[i];
    else if (i == d)
      s.size = shape[i];
    else
      s.innerBytes *= static_cast<size_t>(shape[i]);
  }
  return s;
}

size_t Pieces::most() const {
  size_t m = 0;
  for (size_t r = 0; r + 1 < off.size(); ++r)
    m = std::max(m, off[r + 1] - off[r]);
  return m;
}

Pieces pieces(const DimSplit &s, int n) {
  Pieces p;
  p.off.assign(n + 1, 0);
  for (int r = 0; r < n; ++r)
    p.off[r + 1] = p.off[r] + static_cast<size_t>(s.outer) *
                                  static_cast<size_t>(chunkSize(s.size, n, r)) *
                                  s.innerBytes;
  return p;
}

namespace {
/// Bytes [lo, hi) of the piece at `off` of `k` entries: runs of k * inner
/// bytes, one per outer index, `size` * inner apart in the tensor.
template <bool Pack>
void copyRange(const DimSplit &s, int64_t off, int64_t k, size_t lo, size_t hi,
               char *tensor, char *flat) {
  char *t = tensor + off * s.innerBytes;
  size_t run = static_cast<size_t>(k) * s.innerBytes;
  size_t row = static_cast<size_t>(s.size) * s.innerBytes;
  for (size_t b = lo; b < hi;) {
    size_t o = b / run, w = b % run, len = std::min(run - w, hi - b);
    if (Pack)
      std::memcpy(flat + (b - lo), t + o * row + w, len);
    else
      std::memcpy(t + o * row + w, flat + (b - lo), len);
    b += len;
  }
}

template <bool Pack>
void copyPieces(const DimSplit &s, int n, char *tensor, char *flat) {
  Pieces p = pieces(s, n);
  for (int r = 0; r < n; ++r)
    copyRange<Pack>(s, chunkOffset(s.size, n, r), chunkSize(s.size, n, r), 0,
                    p.bytes(r), tensor, flat + p.off[r]);
}
} // namespace

void packRange(const void *tensor, const DimSplit &s, int64_t off, int64_t k,
               size_t lo, size_t hi, void *dst) {
  copyRange<true>(s, off, k, lo, hi,
                  const_cast<char *>(static_cast<const char *>(tensor)),
                  static_cast<char *>(dst));
}

void unpackRange(const void *src, const DimSplit &s, int64_t off, int64_t k,
                 size_t lo, size_t hi, void *tensor) {
  copyRange<false>(s, off, k, lo, hi, static_cast<char *>(tensor),
                   const_cast<char *>(static_cast<const char *>(src)));
}

void packPieces(const void *tensor, const DimSplit &s, int n, void *dst) {
  copyPieces<true>(s, n, const_cast<char *>(static_cast<const char *>(tensor)),
                   static_cast<char *>(dst));
}

void unpackPieces(const void *src, const DimSplit &s, int n, void *tensor) {
  copyPieces<false>(s, n, static_cast<char *>(tensor),
                    const_cast<char *>(static_cast<const char *>(src)));
}

namespace {
template <typename T>
void reduceTyped(ReduceKind kind, T *a, const T *x, int64_t n) {
  switch (kind) {
  case ReduceKind::Sum:
  case ReduceKind::Mean:
    for (int64_t i = 0; i < n; ++i)
      a[i] += x[i];
    break;
  case ReduceKind::Prod:
    for (int64_t i = 0; i < n; ++i)
      a[i] *= x[i];
    break;
  case ReduceKind::Max:
    for (int64_t i = 0; i < n; ++i)
      a[i] = std::max(a[i], x[i]);
    break;
  case ReduceKind::Min:
    for (int64_t i = 0; i < n; ++i)
      a[i] = std::min(a[i], x[i]);
    break;
  }
}
} // namespace

void reduceInto(ReduceKind kind, DType dtype, void *acc, const void *x,
                int64_t n) {
  visitDType(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    reduceTyped(kind, static_cast<T *>(acc), static_cast<const T *>(x), n);
  });
}

void finishMean(DType dtype, void *data, int64_t n, int members) {
  if (members == 1)
    return;
  auto divide = [&](auto *p) {
    using T = std::remove_pointer_t<decltype(p)>;
    const T m = static_cast<T>(members);
    for (int64_t i = 0; i < n; ++i)
      p[i] /= m;
  };
  if (dtype == DType::F32)
    divide(static_cast<float *>(data));
  else if (dtype == DType::F64)
    divide(static_cast<double *>(data));
}

} // namespace tessel::runtime::comm
