//===- DataMovement.cu - Copies and gathers on CUDA -----------------------===//
//
// The device code of the DataMovement family (DataMovement.cpp builds the
// steps): the strided copy of reshape, copy, transpose, slice, concat, split
// and expand (32 x 32 shared-memory tiles for a transpose of the last two
// dims), gather with its index check, and gather_elements.
//
//===----------------------------------------------------------------------===//
#include "CudaKernels.h"
#include "tessel/ops/DTypeDispatch.h"
#include "DeviceUtil.cuh"

#include <cstdint>

namespace tessel::runtime::cuda {

namespace {

using namespace device;

template <typename T, typename IX>
__global__ void stridedCopyKernel(const T *src, T *dst, IX ix) {
  if (ix.numOperands == 2) {
    TSL_GRID_LOOP_IX(i, ix) {
      int64_t off[kMaxOperands];
      offsetsAt(ix, i, off);
      dst[off[1]] = src[off[0]];
    }
  } else {
    TSL_GRID_LOOP_IX(i, ix) { dst[i] = src[offset0(ix, i)]; }
  }
}

/// A copy into a contiguous result whose innermost dim reads the source
/// with stride S != 1 while the dim outside it reads with stride 1 (a
/// transpose of the last two dims, over any batch dims): 32 x 32 tiles
/// through shared memory, so that both the reads and the writes are
/// coalesced (the plain kernel reads 4 useful bytes of each 32-byte
/// sector). ix is the copy's indexer over the result's dims, rank >= 2;
/// grid: x over the inner dim's tiles, y over the outer dim's, z (looping)
/// over the batch.
template <typename T>
__global__ void transposeTileKernel(const T *src, T *dst, Indexer32 ix,
                                    uint32_t batch) {
  __shared__ T tile[32][33];
  const int r = ix.rank;
  const uint32_t rows = ix.dims[r - 2], cols = ix.dims[r - 1];
  const int32_t colStride = ix.strides[r - 1][0]; // rows' stride is 1
  const uint32_t c0 = blockIdx.x * 32, r0 = blockIdx.y * 32;
  for (uint32_t b = blockIdx.z; b < batch; b += gridDim.z) {
    // The batch dims' offset: b over dims [0, r-2).
    uint32_t rest = b, base = 0;
    for (int d = r - 3; d >= 0; --d) {
      const uint32_t q = divide(rest, ix.magic[d], ix.shift[d]);
      base += (rest - q * ix.dims[d]) * static_cast<uint32_t>(ix.strides[d][0]);
      rest = q;
    }
    // Read: consecutive threads take consecutive rows (stride 1 in src).
    for (uint32_t j = threadIdx.y; j < 32; j += blockDim.y) {
      const uint32_t c = c0 + j, rr = r0 + threadIdx.x;
      if (c < cols && rr < rows)
        tile[j][threadIdx.x] =
            src[base + rr + static_cast<int64_t>(c) * colStride];
    }
    __syncthreads();
    // Write: consecutive threads take consecutive columns of the result.
    const uint64_t out = static_cast<uint64_t>(b) * rows * cols;
    for (uint32_t j = threadIdx.y; j < 32; j += blockDim.y) {
      const uint32_t rr = r0 + j, c = c0 + threadIdx.x;
      if (c < cols && rr < rows)
        dst[out + static_cast<uint64_t>(rr) * cols + c] = tile[threadIdx.x][j];
    }
    __syncthreads();
  }
}

template <typename I>
__global__ void gatherCheckKernel(const I *idx, int64_t n, int64_t dim,
                                  unsigned long long *slot) {
  TSL_GRID_LOOP(j, n) {
    const int64_t v = static_cast<int64_t>(idx[j]);
    if (v < -dim || v >= dim)
      atomicMin(slot, static_cast<unsigned long long>(j));
  }
}

template <typename I>
__global__ void gatherRecordKernel(const I *idx, unsigned long long *slot) {
  if (slot[0] != ~0ull)
    slot[1] = static_cast<unsigned long long>(
        static_cast<int64_t>(idx[slot[0]]));
}

template <typename T, typename I>
__global__ void gatherKernel(const T *data, const I *idx, int64_t numIdx,
                             int64_t outer, int64_t dim, int64_t inner,
                             T *out) {
  const int64_t total = outer * numIdx * inner;
  TSL_GRID_LOOP(e, total) {
    const int64_t k = e % inner;
    const int64_t j = (e / inner) % numIdx;
    const int64_t o = e / (inner * numIdx);
    int64_t v = static_cast<int64_t>(idx[j]);
    if (v < 0)
      v += dim;
    out[e] = (v >= 0 && v < dim) ? data[(o * dim + v) * inner + k] : T(0);
  }
}

/// GatherElements: `ix` iterates the indices (= the result) with data's
/// strides of every dim but the axis (0 there) as operand 0.
template <typename T, typename I>
__global__ void gatherElementsKernel(const T *data, const I *idx, Indexer ix,
                                     int64_t dim, int64_t axisStride, T *out) {
  TSL_GRID_LOOP(i, ix.total) {
    int64_t v = static_cast<int64_t>(idx[i]);
    if (v < 0)
      v += dim;
    out[i] = (v >= 0 && v < dim) ? data[offset0(ix, i) + v * axisStride] : T(0);
  }
}

template <typename T>
cudaError_t gatherTyped(const T *data, DType indexType, const void *indices,
                        int64_t numIdx, int64_t outer, int64_t dim,
                        int64_t inner, T *out, cudaStream_t s) {
  const int64_t total = outer * numIdx * inner;
  if (indexType == DType::I64)
    return launchOver(total, s, gatherKernel<T, int64_t>, data,
                      static_cast<const int64_t *>(indices), numIdx, outer, dim,
                      inner, out);
  return launchOver(total, s, gatherKernel<T, int32_t>, data,
                    static_cast<const int32_t *>(indices), numIdx, outer, dim,
                    inner, out);
}

} // namespace

cudaError_t launchStridedCopy(size_t elemSize, const void *src, void *dst,
                              const StridedIndex &ix, cudaStream_t s) {
  return visitElementSize(elemSize, cudaErrorInvalidValue, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T *from = static_cast<const T *>(src);
    T *to = static_cast<T *>(dst);
    if (!ix.fits32)
      return launchOver(ix.wide.total, s, stridedCopyKernel<T, Indexer>, from,
                        to, ix.wide);
    const Indexer32 &n = ix.narrow;
    // A transpose of the last two dims into a contiguous result: tiles
    // (narrowed dims are at least 1, so the batch is too).
    const int r = n.rank;
    if (n.numOperands == 1 && r >= 2 && n.strides[r - 2][0] == 1 &&
        n.strides[r - 1][0] != 1 && n.dims[r - 1] >= 8 && n.dims[r - 2] >= 8) {
      uint32_t batch = 1;
      for (int d = 0; d < r - 2; ++d)
        batch *= n.dims[d];
      const dim3 grid((n.dims[r - 1] + 31) / 32, (n.dims[r - 2] + 31) / 32,
                      batch < 65535 ? batch : 65535);
      if (grid.y <= 65535) {
        transposeTileKernel<T><<<grid, dim3(32, 8), 0, s>>>(from, to, n, batch);
        return cudaGetLastError();
      }
    }
    return launchOver(n.total, s, stridedCopyKernel<T, Indexer32>, from, to, n);
  });
}

cudaError_t launchGatherCheck(DType indexType, const void *indices,
                              int64_t numIndices, int64_t dim,
                              unsigned long long *slot, cudaStream_t s) {
  if (numIndices == 0)
    return cudaGetLastError();
  const unsigned g = gridFor(numIndices);
  if (indexType == DType::I64) {
    const auto *idx = static_cast<const int64_t *>(indices);
    gatherCheckKernel<<<g, kThreads, 0, s>>>(idx, numIndices, dim, slot);
    gatherRecordKernel<<<1, 1, 0, s>>>(idx, slot);
  } else {
    const auto *idx = static_cast<const int32_t *>(indices);
    gatherCheckKernel<<<g, kThreads, 0, s>>>(idx, numIndices, dim, slot);
    gatherRecordKernel<<<1, 1, 0, s>>>(idx, slot);
  }
  return cudaGetLastError();
}

cudaError_t launchGather(size_t elemSize, const void *data, DType indexType,
                         const void *indices, int64_t numIndices,
                         int64_t outer, int64_t dim, int64_t inner, void *out,
                         cudaStream_t s) {
  return visitElementSize(elemSize, cudaErrorInvalidValue, [&](auto tag) {
    using T = typename decltype(tag)::type;
    return gatherTyped(static_cast<const T *>(data), indexType, indices,
                       numIndices, outer, dim, inner, static_cast<T *>(out), s);
  });
}

cudaError_t launchGatherElements(size_t elemSize, const void *data,
                                 DType indexType, const void *indices,
                                 const Indexer &ix, int64_t dim,
                                 int64_t axisStride, void *out,
                                 cudaStream_t s) {
  return visitElementSize(elemSize, cudaErrorInvalidValue, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T *d = static_cast<const T *>(data);
    T *o = static_cast<T *>(out);
    if (indexType == DType::I64)
      return launchOver(ix.total, s, gatherElementsKernel<T, int64_t>, d,
                        static_cast<const int64_t *>(indices), ix, dim,
                        axisStride, o);
    return launchOver(ix.total, s, gatherElementsKernel<T, int32_t>, d,
                      static_cast<const int32_t *>(indices), ix, dim,
                      axisStride, o);
  });
}

} // namespace tessel::runtime::cuda
