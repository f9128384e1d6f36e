//===- Broadcast.h - Strided iteration for broadcasting kernels -*- C++ -*-===//
//
// Elementwise kernels iterate over the result in row-major order. Operands
// are described by element strides per result dim (0 where broadcast);
// adjacent dims that are contiguous in every operand are merged, so that the
// innermost loop runs over a long row whose operand strides are 0 or 1.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_OPS_BROADCAST_H
#define TESSEL_OPS_BROADCAST_H

#include "tessel/runtime/DType.h"

#include <array>
#include <cstdint>
#include <vector>

namespace tessel::runtime {

constexpr int kMaxOperands = 4;

struct StridedPlan {
  std::vector<int64_t> dims; // merged result dims (at least one)
  int numOperands = 0;
  std::vector<std::array<int64_t, kMaxOperands>> strides; // per merged dim
  int64_t total = 0;
};

/// A row-major `shape` seen as [outer, len, inner] around dim `axis`: the
/// view of the kernels that work along one axis (softmax, concat, gather).
struct AxisView {
  int64_t outer = 1, len = 1, inner = 1;
};
inline AxisView aroundAxis(const Shape &shape, int64_t axis) {
  AxisView v;
  for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d)
    (d < axis ? v.outer : d == axis ? v.len : v.inner) *= shape[d];
  return v;
}

/// An [N, C, spatial...] activation as its three extents: aroundAxis at
/// the channel dim (BatchNorm, global pooling).
struct ChannelGeometry {
  int64_t batch, channels, spatial;
  explicit ChannelGeometry(const Shape &s) {
    const AxisView v = aroundAxis(s, 1);
    batch = v.outer;
    channels = v.len;
    spatial = v.inner;
  }
};

/// numpy.matmul's dims: 1-D operands promoted (a [k] to [1, k], b [k] to
/// [k, 1]), matrices [m, k]·[k, n], the batch dims of a, b and the result
/// and how many matrices each holds.
struct MatMulDims {
  int64_t m = 0, k = 0, n = 0;
  Shape aBatch, bBatch, outBatch;
  int64_t aCount = 0, bCount = 0, batches = 0;
};
inline MatMulDims matmulDims(const Shape &aShape, const Shape &bShape,
                             const Shape &outShape) {
  MatMulDims d;
  Shape as = aShape, bs = bShape;
  if (as.size() == 1)
    as.insert(as.begin(), 1);
  if (bs.size() == 1)
    bs.push_back(1);
  d.m = as[as.size() - 2];
  d.k = as.back();
  d.n = bs.back();
  d.aBatch.assign(as.begin(), as.end() - 2);
  d.bBatch.assign(bs.begin(), bs.end() - 2);
  // The result's batch dims: all but its matrix dims.
  d.outBatch = outShape;
  d.outBatch.resize(outShape.size() - (aShape.size() == 1 ? 0 : 1) -
                    (bShape.size() == 1 ? 0 : 1));
  d.aCount = numElements(d.aBatch);
  d.bCount = numElements(d.bBatch);
  d.batches = numElements(d.outBatch);
  return d;
}

/// Strides of a row-major tensor of `shape`, aligned to the right of a result
/// of rank `rank`, with 0 for dims of size 1 (broadcast).
std::vector<int64_t> broadcastStrides(const Shape &shape, size_t rank,
                                      const Shape &result);

/// Builds a plan over `result` for operands with the given per-dim strides
/// (each of size result.size()).
StridedPlan makeStridedPlan(const Shape &result,
                            const std::vector<std::vector<int64_t>> &strides);

/// Plan for operands broadcast to `result` (numpy rules).
StridedPlan makeBroadcastPlan(const Shape &result,
                              const std::vector<const Shape *> &operands);

/// Calls fn(offsets, count) for consecutive rows covering the flat result
/// range [begin, end): `offsets[k]` is operand k's element offset at the
/// row's first element (offsets[numOperands] the result's), the row runs
/// `count` elements along the innermost dim with strides plan.strides.back().
template <typename Fn>
void forEachRow(const StridedPlan &plan, int64_t begin, int64_t end, Fn &&fn) {
  if (begin >= end)
    return;
  const int rank = static_cast<int>(plan.dims.size());
  const int nops = plan.numOperands;
  const int64_t inner = plan.dims[rank - 1];
  std::array<int64_t, 16> idx{};
  std::array<int64_t, kMaxOperands + 1> off{};
  // Decompose `begin` into a multi-index.
  int64_t rem = begin;
  for (int d = rank - 1; d >= 0; --d) {
    idx[d] = rem % plan.dims[d];
    rem /= plan.dims[d];
  }
  for (int k = 0; k < nops; ++k)
    for (int d = 0; d < rank; ++d)
      off[k] += idx[d] * plan.strides[d][k];
  off[nops] = begin;
  int64_t pos = begin;
  while (pos < end) {
    int64_t count = inner - idx[rank - 1];
    if (count > end - pos)
      count = end - pos;
    fn(off.data(), count);
    pos += count;
    // Advance the multi-index by `count` along the innermost dim.
    idx[rank - 1] += count;
    for (int k = 0; k < nops; ++k)
      off[k] += count * plan.strides[rank - 1][k];
    off[nops] += count;
    for (int d = rank - 1; d > 0 && idx[d] == plan.dims[d]; --d) {
      idx[d] = 0;
      ++idx[d - 1];
      for (int k = 0; k < nops; ++k)
        off[k] += plan.strides[d - 1][k] - plan.dims[d] * plan.strides[d][k];
    }
  }
}

} // namespace tessel::runtime

#endif // TESSEL_OPS_BROADCAST_H
