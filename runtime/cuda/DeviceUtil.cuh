//===- DeviceUtil.cuh - What the CUDA kernel files share -------*- CUDA -*-===//
//
// Launch geometry, grid-stride loops, strided index math, block reductions,
// and the math library of ScalarOps.h's functors (the windows' math:
// WindowMath.h): used by every kernel family's device code (<Family>.cu).
// Device code only; included by .cu files.
//
// The kernels are plain, tuned where a profile on a GPU showed the time:
// grid-stride loops over the result with strided index math in 32 bits
// where a plan fits (Indexer32.h: each dim's division a multiply-high and a
// shift), four results per thread where the innermost dim allows (binary
// f32, where), 32 x 32 shared-memory tiles for transposes, coalesced column
// sums for outer reductions, one block per row where a row is reduced
// (block reductions through warp shuffles). Each formula is the CPU
// kernel's (runtime/cpu), so both backends agree up to the order of float
// sums. The GEMMs (matmul, gemm, conv2d) are cuBLAS calls made by
// MatMul.cpp and Conv.cpp.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_RUNTIME_CUDA_DEVICEUTIL_CUH
#define TESSEL_RUNTIME_CUDA_DEVICEUTIL_CUH

#include "CudaKernels.h"
#include "FastDivide.h"
#include "WindowMath.h"

#include <cmath>
#include <cstdint>
#include <type_traits>
#include <utility>

namespace tessel::runtime::cuda {
namespace device {

constexpr int kThreads = 256;

/// Blocks for a grid-stride loop over n items (capped; the loop covers the
/// rest).
inline unsigned gridFor(int64_t n) {
  int64_t b = (n + kThreads - 1) / kThreads;
  if (b > 65535 * 4)
    b = 65535 * 4;
  return b < 1 ? 1u : static_cast<unsigned>(b);
}

/// Blocks for one-block-per-row kernels (the kernels loop over the rest).
inline unsigned gridRows(int64_t rows) {
  int64_t b = rows > 65535 * 4 ? 65535 * 4 : rows;
  return b < 1 ? 1u : static_cast<unsigned>(b);
}

/// Launches `kernel(args...)` with a grid-stride loop over `total` items on
/// `s` (nothing when there are none).
template <typename... P, typename... A>
cudaError_t launchOver(int64_t total, cudaStream_t s, void (*kernel)(P...),
                       A &&...args) {
  if (total != 0)
    kernel<<<gridFor(total), kThreads, 0, s>>>(std::forward<A>(args)...);
  return cudaGetLastError();
}

#define TSL_GRID_LOOP(i, n)                                                    \
  for (int64_t i =                                                             \
           static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;        \
       i < (n); i += static_cast<int64_t>(blockDim.x) * gridDim.x)

/// Element offsets of every operand at flat result index i.
__device__ __forceinline__ void offsetsAt(const Indexer &ix, int64_t i,
                                          int64_t off[kMaxOperands]) {
#pragma unroll
  for (int k = 0; k < kMaxOperands; ++k)
    off[k] = 0;
  for (int d = ix.rank - 1; d >= 0; --d) {
    const int64_t n = ix.dims[d];
    const int64_t q = i / n;
    const int64_t r = i - q * n;
    i = q;
#pragma unroll
    for (int k = 0; k < kMaxOperands; ++k)
      off[k] += r * ix.strides[d][k];
  }
}

/// Offset of operand 0 only.
__device__ __forceinline__ int64_t offset0(const Indexer &ix, int64_t i) {
  int64_t off = 0;
  for (int d = ix.rank - 1; d >= 0; --d) {
    const int64_t n = ix.dims[d];
    const int64_t q = i / n;
    off += (i - q * n) * ix.strides[d][0];
    i = q;
  }
  return off;
}

/// The index type of an indexer's elements.
template <typename IX> struct IndexOf { using type = int64_t; };
template <> struct IndexOf<Indexer32> { using type = uint32_t; };

/// Element offsets of every operand at flat result index i, in 32 bits.
/// Rank 1 (same shapes, or a scalar broadcast: the usual case after the
/// dims merge) needs no division.
__device__ __forceinline__ void offsetsAt(const Indexer32 &ix, uint32_t i,
                                          int64_t off[kMaxOperands]) {
  if (ix.rank == 1) {
#pragma unroll
    for (int k = 0; k < kMaxOperands; ++k)
      off[k] = static_cast<int64_t>(i) * ix.strides[0][k];
    return;
  }
  uint32_t o[kMaxOperands] = {};
  for (int d = ix.rank - 1; d >= 0; --d) {
    const uint32_t n = ix.dims[d];
    const uint32_t q = divide(i, ix.magic[d], ix.shift[d]);
    const uint32_t r = i - q * n;
    i = q;
#pragma unroll
    for (int k = 0; k < kMaxOperands; ++k)
      o[k] += r * static_cast<uint32_t>(ix.strides[d][k]);
  }
#pragma unroll
  for (int k = 0; k < kMaxOperands; ++k)
    off[k] = o[k];
}

/// Offset of operand 0 only, in 32 bits.
__device__ __forceinline__ int64_t offset0(const Indexer32 &ix, uint32_t i) {
  if (ix.rank == 1)
    return static_cast<int64_t>(i) * ix.strides[0][0];
  uint32_t off = 0;
  for (int d = ix.rank - 1; d >= 0; --d) {
    const uint32_t n = ix.dims[d];
    const uint32_t q = divide(i, ix.magic[d], ix.shift[d]);
    off += (i - q * n) * static_cast<uint32_t>(ix.strides[d][0]);
    i = q;
  }
  return off;
}

/// A grid-stride loop in the indexer's own index type (for Indexer32, no
/// overflow: total and the grid's stride are both below 2^31).
#define TSL_GRID_LOOP_IX(i, ix)                                                \
  for (typename IndexOf<std::decay_t<decltype(ix)>>::type i =                  \
           static_cast<typename IndexOf<std::decay_t<decltype(ix)>>::type>(    \
               blockIdx.x) *                                                   \
               blockDim.x +                                                    \
           threadIdx.x;                                                        \
       i < (ix).total; i += blockDim.x * gridDim.x)

/// Reduces v over the block (blockDim.x a multiple of 32, at most 1024);
/// every thread gets the result. `shm` holds 32 entries.
template <typename T, typename F>
__device__ T blockReduce(T v, T identity, F f, T *shm) {
  const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
#pragma unroll
  for (int o = 16; o > 0; o >>= 1)
    v = f(v, __shfl_down_sync(0xffffffffu, v, o));
  __syncthreads(); // shm may still be read from a previous call
  if (lane == 0)
    shm[warp] = v;
  __syncthreads();
  if (warp == 0) {
    const unsigned warps = (blockDim.x + 31) >> 5;
    v = lane < warps ? shm[lane] : identity;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
      v = f(v, __shfl_down_sync(0xffffffffu, v, o));
    if (lane == 0)
      shm[0] = v;
  }
  __syncthreads();
  return shm[0];
}

struct SumF {
  template <typename T> __device__ T operator()(T a, T b) const {
    return a + b;
  }
};
/// max that ignores NaN candidates, as the CPU's `b > a ? b : a`.
struct MaxF {
  template <typename T> __device__ T operator()(T a, T b) const {
    return b > a ? b : a;
  }
};

/// The math library `M` of ScalarOps.h's and BinaryOps.h's functors on the device (libm's
/// functions on the host, where nothing calls them).
struct CudaMath {
  static __host__ __device__ float exp(float x) { return expf(x); }
  static __host__ __device__ float log(float x) { return logf(x); }
  static __host__ __device__ float log1p(float x) { return log1pf(x); }
  static __host__ __device__ float sqrt(float x) { return sqrtf(x); }
  static __host__ __device__ float tanh(float x) { return tanhf(x); }
  static __host__ __device__ float erf(float x) { return erff(x); }
  static __host__ __device__ float sin(float x) { return sinf(x); }
  static __host__ __device__ float cos(float x) { return cosf(x); }
  static __host__ __device__ float fabs(float x) { return fabsf(x); }
  static __host__ __device__ float nearbyint(float x) { return nearbyintf(x); }
  static __host__ __device__ float floor(float x) { return floorf(x); }
  static __host__ __device__ float ceil(float x) { return ceilf(x); }
  static __host__ __device__ float fmod(float x, float y) { return fmodf(x, y); }
  static __host__ __device__ float pow(float x, float y) { return powf(x, y); }
  // Each rounded once, never contracted into a fused multiply-add
  // (tessel/ops/Optimizer.h's updates: the CPU's bits).
#ifdef __CUDA_ARCH__
  static __device__ float add(float x, float y) { return __fadd_rn(x, y); }
  static __device__ float sub(float x, float y) { return __fsub_rn(x, y); }
  static __device__ float mul(float x, float y) { return __fmul_rn(x, y); }
  static __device__ float div(float x, float y) { return __fdiv_rn(x, y); }
  static __device__ float fma(float x, float y, float z) {
    return __fmaf_rn(x, y, z);
  }
#else
  static __host__ float add(float x, float y) { return x + y; }
  static __host__ float sub(float x, float y) { return x - y; }
  static __host__ float mul(float x, float y) { return x * y; }
  static __host__ float div(float x, float y) { return x / y; }
  static __host__ float fma(float x, float y, float z) {
    return std::fma(x, y, z);
  }
#endif
};

} // namespace device
} // namespace tessel::runtime::cuda

#endif // TESSEL_RUNTIME_CUDA_DEVICEUTIL_CUH
