//===- Reduce.cu - Reductions and cumsum on CUDA --------------------------===//
//
// The device code of the Reduce family (Reduce.cpp builds the steps):
// reduce_sum, reduce_mean, reduce_max (one thread per output for short
// reductions, one block per output through warp shuffles for long ones,
// coalesced column sums for outer reductions) and cumsum.
//
//===----------------------------------------------------------------------===//
#include "CudaKernels.h"
#include "tessel/ops/DTypeDispatch.h"
#include "DeviceUtil.cuh"

#include <cmath>
#include <cstdint>
#include <type_traits>

namespace tessel::runtime::cuda {

namespace {

using namespace device;

/// CumSum: one thread per line (outer, inner), summing in scan order as the
/// CPU kernel does; integers wrap.
template <typename T>
__global__ void cumsumKernel(const T *x, T *y, int64_t lines, int64_t len,
                             int64_t inner, bool exclusive, bool reverse) {
  TSL_GRID_LOOP(line, lines) {
    const int64_t base = (line / inner) * len * inner + line % inner;
    T acc = T(0);
    for (int64_t t = 0; t < len; ++t) {
      const int64_t at = base + (reverse ? len - 1 - t : t) * inner;
      const T v = x[at];
      T next;
      if constexpr (std::is_integral<T>::value) {
        using U = typename std::make_unsigned<T>::type;
        next = static_cast<T>(U(acc) + U(v));
      } else {
        next = acc + v;
      }
      y[at] = exclusive ? acc : next;
      acc = next;
    }
  }
}

template <typename T> __device__ __forceinline__ T lowestOf();
template <> __device__ __forceinline__ float lowestOf<float>() {
  return -INFINITY; // as the CPU: the max of a row of -inf is -inf
}
template <> __device__ __forceinline__ int64_t lowestOf<int64_t>() {
  return INT64_MIN;
}
template <> __device__ __forceinline__ int32_t lowestOf<int32_t>() {
  return INT32_MIN;
}

/// One thread per output: for short reductions.
template <typename T, bool IsMax, typename IX>
__global__ void reduceThreadKernel(const T *x, T *y, IX kept, IX reduced,
                                   bool mean, float scale) {
  using I = typename IndexOf<IX>::type;
  TSL_GRID_LOOP_IX(o, kept) {
    const T *base = x + offset0(kept, o);
    T acc = IsMax ? lowestOf<T>() : T(0);
    for (I r = 0; r < reduced.total; ++r) {
      const T v = base[offset0(reduced, r)];
      acc = IsMax ? (v > acc ? v : acc) : acc + v;
    }
    if (mean)
      acc = static_cast<T>(acc * scale);
    y[o] = acc;
  }
}

/// One block per output: for long reductions.
template <typename T, bool IsMax, typename IX>
__global__ void reduceBlockKernel(const T *x, T *y, IX kept, IX reduced,
                                  bool mean, float scale) {
  using I = typename IndexOf<IX>::type;
  __shared__ T shm[32];
  const T identity = IsMax ? lowestOf<T>() : T(0);
  for (I o = blockIdx.x; o < kept.total; o += gridDim.x) {
    const T *base = x + offset0(kept, o);
    T acc = identity;
    for (I r = threadIdx.x; r < reduced.total; r += blockDim.x) {
      const T v = base[offset0(reduced, r)];
      acc = IsMax ? (v > acc ? v : acc) : acc + v;
    }
    if (IsMax)
      acc = blockReduce(acc, identity, MaxF(), shm);
    else
      acc = blockReduce(acc, identity, SumF(), shm);
    if (threadIdx.x == 0)
      y[o] = mean ? static_cast<T>(acc * scale) : acc;
  }
}

/// Outer reductions (a bias's gradient: [rows, cols] -> [cols]), where the
/// kept elements are the contiguous ones: a block takes 32 consecutive kept
/// elements and 32 lanes of the reduced ones, so that each warp reads 32
/// consecutive values (one block per output read one value per row and
/// sector). Lanes sum in order, then the 32 partial sums in order.
template <typename T, bool IsMax>
__global__ void reduceColumnsKernel(const T *x, T *y, Indexer32 kept,
                                    Indexer32 reduced, bool mean, float scale) {
  __shared__ T part[32][33];
  const T identity = IsMax ? lowestOf<T>() : T(0);
  const uint32_t o = blockIdx.x * 32 + threadIdx.x;
  T acc = identity;
  if (o < kept.total) {
    const T *base = x + offset0(kept, o);
    for (uint32_t r = threadIdx.y; r < reduced.total; r += 32) {
      const T v = base[offset0(reduced, r)];
      acc = IsMax ? (v > acc ? v : acc) : acc + v;
    }
  }
  part[threadIdx.y][threadIdx.x] = acc;
  __syncthreads();
  if (threadIdx.y == 0 && o < kept.total) {
    T total = identity;
    for (int j = 0; j < 32; ++j) {
      const T v = part[j][threadIdx.x];
      total = IsMax ? (v > total ? v : total) : total + v;
    }
    y[o] = mean ? static_cast<T>(total * scale) : total;
  }
}

template <typename T>
cudaError_t reduceTyped(bool isMax, bool mean, const T *x, T *y,
                        const StridedIndex &kept, const StridedIndex &reduced,
                        float scale, cudaStream_t s) {
  if (kept.wide.total == 0)
    return cudaGetLastError();
  const bool fits32 = kept.fits32 && reduced.fits32;
  const Indexer32 &k32 = kept.narrow, &r32 = reduced.narrow;
  // The kept elements contiguous, the reduced ones outside them, and enough
  // of both: coalesced column sums.
  if (fits32 && k32.strides[k32.rank - 1][0] == 1 && k32.total >= 32 &&
      r32.total >= 64) {
    const unsigned g = (k32.total + 31) / 32;
    if (isMax)
      reduceColumnsKernel<T, true>
          <<<g, dim3(32, 32), 0, s>>>(x, y, k32, r32, false, scale);
    else
      reduceColumnsKernel<T, false>
          <<<g, dim3(32, 32), 0, s>>>(x, y, k32, r32, mean, scale);
    return cudaGetLastError();
  }
  // Long reductions: a block per kept element; short ones: a thread.
  const bool perBlock = reduced.wide.total >= 512;
  const unsigned g =
      perBlock ? gridRows(kept.wide.total) : gridFor(kept.wide.total);
  auto launch = [&](const auto &k, const auto &r) {
    using IX = std::decay_t<decltype(k)>;
    using Kernel = void (*)(const T *, T *, IX, IX, bool, float);
    const Kernel kernel = perBlock ? (isMax ? reduceBlockKernel<T, true, IX>
                                            : reduceBlockKernel<T, false, IX>)
                                   : (isMax ? reduceThreadKernel<T, true, IX>
                                            : reduceThreadKernel<T, false, IX>);
    kernel<<<g, kThreads, 0, s>>>(x, y, k, r, mean && !isMax, scale);
    return cudaGetLastError();
  };
  return fits32 ? launch(k32, r32) : launch(kept.wide, reduced.wide);
}

} // namespace

cudaError_t launchCumSum(DType dtype, const void *x, void *y, int64_t outer,
                         int64_t len, int64_t inner, bool exclusive,
                         bool reverse, cudaStream_t s) {
  return visitDType(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (kIsBool<T>)
      return cudaErrorInvalidValue;
    else
      return launchOver(outer * inner, s, cumsumKernel<T>,
                        static_cast<const T *>(x), static_cast<T *>(y),
                        outer * inner, len, inner, exclusive, reverse);
  });
}

cudaError_t launchReduce(OpKind kind, DType dtype, const void *x, void *y,
                         const StridedIndex &kept, const StridedIndex &reduced,
                         float meanScale, cudaStream_t s) {
  const bool isMax = kind == OpKind::ReduceMax;
  return visitDType(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (kIsBool<T>)
      return cudaErrorInvalidValue;
    else
      return reduceTyped(isMax,
                         std::is_same_v<T, float> && kind == OpKind::ReduceMean,
                         static_cast<const T *>(x), static_cast<T *>(y), kept,
                         reduced, meanScale, s);
  });
}

} // namespace tessel::runtime::cuda
