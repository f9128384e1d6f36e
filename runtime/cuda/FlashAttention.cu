//===- FlashAttention.cu - attention in tiles on the device ---------------===//
//
// FlashAttention.h's tile algorithms (tensor cores, halves) and
// FlashAttentionSimt.h's (CUDA cores, f32) on the device: their context is
// the thread's threadIdx, __syncthreads, warp shuffles and mma.sync (bf16
// or f16 operands, f32 accumulators: sm_80 and later). Before the forward,
// one block per batch entry finds the largest key norm (the skips' bound);
// after it, the rows whose max was not finite get the NaN guard's fill
// times the sum of v's rows, summed in the CPU's order (cpu/Attention.cpp,
// fillRow). Before the backward's two passes, delta = rowsum(grad * out)
// (in the CPU's order) and the largest query and key norms.
//
//===----------------------------------------------------------------------===//
#include "CudaKernels.h"
#include "DeviceUtil.cuh"
#include "FlashAttention.h"
#include "FlashAttentionSimt.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <type_traits>

namespace tessel::runtime::cuda {

namespace {

using namespace device;

struct DeviceCtx {
  __device__ int tid() const { return threadIdx.x; }
  __device__ void sync() const { __syncthreads(); }
  __device__ int syncAnd(int v) const { return __syncthreads_and(v); }
  __device__ float shflXor(float v, int laneMask) const {
    return __shfl_xor_sync(0xffffffffu, v, laneMask);
  }
  __device__ void tileComputed() const {}
  template <bool kBf16> __device__ float widen(uint16_t h) const {
    return kBf16 ? __uint_as_float(uint32_t(h) << 16)
                 : __half2float(__ushort_as_half(h));
  }
  template <bool kBf16> __device__ uint16_t narrow(float x) const {
    return kBf16 ? __bfloat16_as_ushort(__float2bfloat16_rn(x))
                 : __half_as_ushort(__float2half_rn(x));
  }
  template <bool kBf16> __device__ uint32_t pack(float lo, float hi) const {
    return uint32_t(narrow<kBf16>(lo)) | uint32_t(narrow<kBf16>(hi)) << 16;
  }
  template <bool kBf16>
  __device__ void mma(float c[4], const uint32_t a[4],
                      const uint32_t b[2]) const {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    if constexpr (kBf16)
      asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
                   "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
                   "{%0, %1, %2, %3};\n"
                   : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                   : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]),
                     "r"(b[1]));
    else
      asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
                   "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
                   "{%0, %1, %2, %3};\n"
                   : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                   : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]),
                     "r"(b[1]));
#else
    __trap(); // only sm_80 and later have it (CMake builds for sm_90)
#endif
  }
};

/// An element as f32, and f32 into an element: a half's bits (bf16 or f16
/// by kBf16), or a float (kBf16 ignored).
template <bool kBf16> __device__ float toF32(uint16_t h) {
  return DeviceCtx().widen<kBf16>(h);
}
template <bool kBf16> __device__ float toF32(float x) { return x; }
template <bool kBf16> __device__ void fromF32(float x, uint16_t &h) {
  h = DeviceCtx().narrow<kBf16>(x);
}
template <bool kBf16> __device__ void fromF32(float x, float &y) { y = x; }

template <bool kBf16, int D>
__global__ void __launch_bounds__(flash::kThreads)
    flashForwardKernel(flash::Args a) {
  extern __shared__ __align__(16) uint16_t smem[];
  DeviceCtx ctx;
  flash::forwardBlock<kBf16, D>(ctx, a, blockIdx.x,
                                int64_t(blockIdx.y) * flash::kRows, smem);
}

/// norm[b] = the largest Euclidean norm of the n rows of batch entry b of
/// x (row i's element c at x[b batchStride + i rowStride + c colStride],
/// `cols` of them): the keys (kt's columns) or the queries; NaN propagates.
template <bool kBf16, class E>
__global__ void maxNormKernel(const E *x, int64_t batchStride, int64_t n,
                              int64_t cols, int64_t rowStride,
                              int64_t colStride, float *norm) {
  __shared__ float shm[32];
  const E *xb = x + int64_t(blockIdx.x) * batchStride;
  float best = 0.0f;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    float sq = 0.0f;
    for (int64_t c = 0; c < cols; ++c) {
      const float e = toF32<kBf16>(xb[i * rowStride + c * colStride]);
      sq += e * e;
    }
    best = flash::maxNan(best, sq);
  }
  struct MaxNan {
    __device__ float operator()(float p, float q) const {
      return flash::maxNan(p, q);
    }
  };
  best = blockReduce(best, 0.0f, MaxNan(), shm);
  if (threadIdx.x == 0)
    norm[blockIdx.x] = sqrtf(best);
}

/// delta[row] = sum_k grad[row, k] out[row, k] over dv columns, in the
/// CPU's order.
template <bool kBf16, class E>
__global__ void deltaKernel(const E *grad, const E *out, int64_t rows,
                            int64_t dv, float *delta) {
  TSL_GRID_LOOP(row, rows) {
    float dot = 0.0f;
    for (int64_t k = 0; k < dv; ++k)
      dot += toF32<kBf16>(grad[row * dv + k]) * toF32<kBf16>(out[row * dv + k]);
    delta[row] = dot;
  }
}

template <bool kBf16, int D>
__global__ void __launch_bounds__(flash::kThreads)
    flashDkvKernel(flash::GradArgs a) {
  extern __shared__ __align__(16) uint16_t smem[];
  DeviceCtx ctx;
  flash::dkvBlock<kBf16, D>(ctx, a, blockIdx.x,
                            int64_t(blockIdx.y) * flash::kKeys, smem);
}

template <bool kBf16, int D>
__global__ void __launch_bounds__(flash::kThreads)
    flashDqKernel(flash::GradArgs a) {
  extern __shared__ __align__(16) uint16_t smem[];
  DeviceCtx ctx;
  flash::dqBlock<kBf16, D>(ctx, a, blockIdx.x,
                           int64_t(blockIdx.y) * flash::kRows, smem);
}

/// out[i, k] of the rows whose lse is NaN: fill times the sum of v's rows
/// (in row order, as the CPU sums them), rounded once.
template <bool kBf16, class E>
__global__ void fillNanRowsKernel(const float *lse, int64_t s, int64_t t,
                                  int64_t dv, const E *v, const float *fill,
                                  E *out, int64_t total) {
  TSL_GRID_LOOP(e, total) {
    const int64_t row = e / dv, k = e % dv;
    if (!isnan(lse[row]))
      continue;
    const E *vb = v + (row / s) * t * dv;
    float sum = 0.0f;
    for (int64_t j = 0; j < t; ++j)
      sum += toF32<kBf16>(vb[j * dv + k]);
    fromF32<kBf16>(*fill * sum, out[e]);
  }
}

template <int D>
__global__ void __launch_bounds__(flash::kThreads)
    simtForwardKernel(flash::ArgsF32 a) {
  extern __shared__ __align__(16) float smemF32[];
  DeviceCtx ctx;
  flash::simt::forwardBlock<D>(ctx, a, blockIdx.x,
                               int64_t(blockIdx.y) * flash::kRows, smemF32);
}

template <int D>
__global__ void __launch_bounds__(flash::kThreads)
    simtDkvKernel(flash::GradArgsF32 a) {
  extern __shared__ __align__(16) float smemF32[];
  DeviceCtx ctx;
  flash::simt::dkvBlock<D>(ctx, a, blockIdx.x,
                           int64_t(blockIdx.y) * flash::kKeys, smemF32);
}

template <int D>
__global__ void __launch_bounds__(flash::kThreads)
    simtDqKernel(flash::GradArgsF32 a) {
  extern __shared__ __align__(16) float smemF32[];
  DeviceCtx ctx;
  flash::simt::dqBlock<D>(ctx, a, blockIdx.x,
                          int64_t(blockIdx.y) * flash::kRows, smemF32);
}

/// The forward's and the backward's kernels and their shared memory: the
/// half tiles (E = uint16_t) or the SIMT ones (E = float).
template <class E, bool kBf16, int D> struct Tiles {
  static constexpr auto forward = flashForwardKernel<kBf16, D>;
  static constexpr auto dkv = flashDkvKernel<kBf16, D>;
  static constexpr auto dq = flashDqKernel<kBf16, D>;
  static constexpr int forwardBytes = flash::sharedBytes(D),
                       dkvBytes = flash::dkvSharedBytes(D),
                       dqBytes = flash::dqSharedBytes(D);
};
template <bool kBf16, int D> struct Tiles<float, kBf16, D> {
  static constexpr auto forward = simtForwardKernel<D>;
  static constexpr auto dkv = simtDkvKernel<D>;
  static constexpr auto dq = simtDqKernel<D>;
  static constexpr int forwardBytes = flash::simt::sharedBytes(D),
                       dkvBytes = flash::simt::dkvSharedBytes(D),
                       dqBytes = flash::simt::dqSharedBytes(D);
};

template <class E, bool kBf16, int D>
cudaError_t launchFor(const flash::TileArgs<E> &a, const float *fill,
                      cudaStream_t st) {
  using K = Tiles<E, kBf16, D>;
  const AttentionDims &d = a.dims;
  cudaError_t e = cudaFuncSetAttribute(
      K::forward, cudaFuncAttributeMaxDynamicSharedMemorySize, K::forwardBytes);
  if (e != cudaSuccess)
    return e;
  if (a.kNorm)
    maxNormKernel<kBf16><<<unsigned(d.batch), kThreads, 0, st>>>(
        a.kt, d.d * d.t, d.t, d.d, 1, d.t, const_cast<float *>(a.kNorm));
  const dim3 grid(unsigned(d.batch),
                  unsigned((d.s + flash::kRows - 1) / flash::kRows));
  K::forward<<<grid, flash::kThreads, K::forwardBytes, st>>>(a);
  if (fill && d.batch * d.s * d.dv > 0)
    fillNanRowsKernel<kBf16>
        <<<gridFor(d.batch * d.s * d.dv), kThreads, 0, st>>>(
            a.lse, d.s, d.t, d.dv, a.v, fill, a.out, d.batch * d.s * d.dv);
  return cudaGetLastError();
}

template <class E, bool kBf16, int D>
cudaError_t launchGradFor(const flash::TileGradArgs<E> &a, const E *out,
                          float *delta, float *norms, cudaStream_t st) {
  using K = Tiles<E, kBf16, D>;
  const AttentionDims &d = a.dims;
  cudaError_t e = cudaFuncSetAttribute(
      K::dkv, cudaFuncAttributeMaxDynamicSharedMemorySize, K::dkvBytes);
  if (e == cudaSuccess)
    e = cudaFuncSetAttribute(K::dq, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             K::dqBytes);
  if (e != cudaSuccess)
    return e;
  flash::TileGradArgs<E> g = a;
  g.delta = delta;
  deltaKernel<kBf16><<<gridFor(d.batch * d.s), kThreads, 0, st>>>(
      a.grad, out, d.batch * d.s, d.dv, delta);
  if (a.replace) { // the stats pass: each row's max and log-sum
    e = cudaFuncSetAttribute(K::forward,
                             cudaFuncAttributeMaxDynamicSharedMemorySize,
                             K::forwardBytes);
    if (e != cudaSuccess)
      return e;
    const flash::TileArgs<E> f = flash::statsArgs(
        a, const_cast<float *>(a.rowMax), const_cast<float *>(a.rowLogSum));
    K::forward<<<dim3(unsigned(d.batch),
                      unsigned((d.s + flash::kRows - 1) / flash::kRows)),
                 flash::kThreads, K::forwardBytes, st>>>(f);
  }
  if (norms && a.mask && !a.replace) {
    g.qNorm = norms;
    g.kNorm = norms + d.batch;
    maxNormKernel<kBf16><<<unsigned(d.batch), kThreads, 0, st>>>(
        a.q, d.s * d.d, d.s, d.d, d.d, 1, norms);
    maxNormKernel<kBf16><<<unsigned(d.batch), kThreads, 0, st>>>(
        a.kt, d.d * d.t, d.t, d.d, 1, d.t, norms + d.batch);
  }
  if (d.t > 0)
    K::dkv<<<dim3(unsigned(d.batch),
                  unsigned((d.t + flash::kKeys - 1) / flash::kKeys)),
             flash::kThreads, K::dkvBytes, st>>>(g);
  K::dq<<<dim3(unsigned(d.batch),
               unsigned((d.s + flash::kRows - 1) / flash::kRows)),
          flash::kThreads, K::dqBytes, st>>>(g);
  return cudaGetLastError();
}

/// fn(bool constant, int constant) for the type (bf16 or not: f16, or f32
/// where the tiles ignore the flag) and the head dim (one that
/// flash::supportedHeadDim admits).
template <class Fn> cudaError_t withHeadDim(DType type, int64_t d, Fn fn) {
  using std::integral_constant;
  const bool bf16 = type == DType::BF16;
  auto dims = [&](auto h) {
    switch (d) {
    case 32:
      return fn(h, integral_constant<int, 32>());
    case 64:
      return fn(h, integral_constant<int, 64>());
    case 80:
      return fn(h, integral_constant<int, 80>());
    case 96:
      return fn(h, integral_constant<int, 96>());
    default:
      return fn(h, integral_constant<int, 128>());
    }
  };
  return bf16 ? dims(integral_constant<bool, true>())
              : dims(integral_constant<bool, false>());
}

template <class E>
cudaError_t launchGrad(DType type, const flash::TileGradArgs<E> &a,
                       const E *out, float *delta, float *norms,
                       cudaStream_t st) {
  const AttentionDims &d = a.dims;
  if (d.batch == 0)
    return cudaSuccess;
  if (d.s == 0) { // no query: dkt and dv are 0
    cudaError_t e =
        cudaMemsetAsync(a.dkt, 0, size_t(d.batch * d.d * d.t) * sizeof(E), st);
    return e == cudaSuccess
               ? cudaMemsetAsync(a.dv, 0,
                                 size_t(d.batch * d.t * d.dv) * sizeof(E), st)
               : e;
  }
  return withHeadDim(type, d.d, [&](auto bf16, auto dim) {
    return launchGradFor<E, decltype(bf16)::value, decltype(dim)::value>(
        a, out, delta, norms, st);
  });
}

template <class E>
cudaError_t launchForward(DType type, const flash::TileArgs<E> &a,
                          const float *fill, cudaStream_t st) {
  const AttentionDims &d = a.dims;
  if (d.batch == 0 || d.s == 0)
    return cudaSuccess;
  return withHeadDim(type, d.d, [&](auto bf16, auto dim) {
    return launchFor<E, decltype(bf16)::value, decltype(dim)::value>(a, fill,
                                                                     st);
  });
}

} // namespace

cudaError_t launchFlashAttention(DType half, const flash::Args &a,
                                 const float *fill, cudaStream_t st) {
  return launchForward(half, a, fill, st);
}

cudaError_t launchFlashAttention(DType type, const flash::ArgsF32 &a,
                                 const float *fill, cudaStream_t st) {
  return launchForward(type, a, fill, st);
}

cudaError_t launchFlashAttentionGrad(DType half, const flash::GradArgs &a,
                                     const uint16_t *out, float *delta,
                                     float *norms, cudaStream_t st) {
  return launchGrad(half, a, out, delta, norms, st);
}

cudaError_t launchFlashAttentionGrad(DType type, const flash::GradArgsF32 &a,
                                     const float *out, float *delta,
                                     float *norms, cudaStream_t st) {
  return launchGrad(type, a, out, delta, norms, st);
}

} // namespace tessel::runtime::cuda
