//===- FlashAttention.cu - half attention's forward on tensor cores -------===//
//
// FlashAttention.h's tile algorithms on the device: their context is the
// thread's threadIdx, __syncthreads, warp shuffles and mma.sync (bf16 or
// f16 operands, f32 accumulators: sm_80 and later). Before the forward,
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
template <bool kBf16>
__global__ void maxNormKernel(const uint16_t *x, int64_t batchStride, int64_t n,
                              int64_t cols, int64_t rowStride,
                              int64_t colStride, float *norm) {
  __shared__ float shm[32];
  const uint16_t *xb = x + int64_t(blockIdx.x) * batchStride;
  float best = 0.0f;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    float sq = 0.0f;
    for (int64_t c = 0; c < cols; ++c) {
      const uint16_t h = xb[i * rowStride + c * colStride];
      const float e = DeviceCtx().widen<kBf16>(h);
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
template <bool kBf16>
__global__ void deltaKernel(const uint16_t *grad, const uint16_t *out,
                            int64_t rows, int64_t dv, float *delta) {
  TSL_GRID_LOOP(row, rows) {
    float dot = 0.0f;
    for (int64_t k = 0; k < dv; ++k) {
      const uint16_t gh = grad[row * dv + k], oh = out[row * dv + k];
      dot += DeviceCtx().widen<kBf16>(gh) * DeviceCtx().widen<kBf16>(oh);
    }
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
template <bool kBf16>
__global__ void fillNanRowsKernel(const float *lse, int64_t s, int64_t t,
                                  int64_t dv, const uint16_t *v,
                                  const float *fill, uint16_t *out,
                                  int64_t total) {
  TSL_GRID_LOOP(e, total) {
    const int64_t row = e / dv, k = e % dv;
    if (!isnan(lse[row]))
      continue;
    const uint16_t *vb = v + (row / s) * t * dv;
    float sum = 0.0f;
    for (int64_t j = 0; j < t; ++j)
      sum += DeviceCtx().widen<kBf16>(vb[j * dv + k]);
    const float x = *fill * sum;
    out[e] = DeviceCtx().narrow<kBf16>(x);
  }
}

template <bool kBf16, int D>
cudaError_t launchFor(const flash::Args &a, const float *fill,
                      cudaStream_t st) {
  const AttentionDims &d = a.dims;
  auto kernel = flashForwardKernel<kBf16, D>;
  constexpr int bytes = flash::sharedBytes(D);
  cudaError_t e = cudaFuncSetAttribute(
      kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
  if (e != cudaSuccess)
    return e;
  if (a.kNorm)
    maxNormKernel<kBf16><<<unsigned(d.batch), kThreads, 0, st>>>(
        a.kt, d.d * d.t, d.t, d.d, 1, d.t, const_cast<float *>(a.kNorm));
  const dim3 grid(unsigned(d.batch),
                  unsigned((d.s + flash::kRows - 1) / flash::kRows));
  kernel<<<grid, flash::kThreads, bytes, st>>>(a);
  if (fill && d.batch * d.s * d.dv > 0)
    fillNanRowsKernel<kBf16>
        <<<gridFor(d.batch * d.s * d.dv), kThreads, 0, st>>>(
            a.lse, d.s, d.t, d.dv, a.v, fill, a.out, d.batch * d.s * d.dv);
  return cudaGetLastError();
}

template <bool kBf16, int D>
cudaError_t launchGradFor(const flash::GradArgs &a, const uint16_t *out,
                          float *delta, float *norms, cudaStream_t st) {
  const AttentionDims &d = a.dims;
  auto dkv = flashDkvKernel<kBf16, D>;
  auto dq = flashDqKernel<kBf16, D>;
  constexpr int dkvBytes = flash::dkvSharedBytes(D),
                dqBytes = flash::dqSharedBytes(D);
  cudaError_t e = cudaFuncSetAttribute(
      dkv, cudaFuncAttributeMaxDynamicSharedMemorySize, dkvBytes);
  if (e == cudaSuccess)
    e = cudaFuncSetAttribute(dq, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             dqBytes);
  if (e != cudaSuccess)
    return e;
  flash::GradArgs g = a;
  g.delta = delta;
  deltaKernel<kBf16><<<gridFor(d.batch * d.s), kThreads, 0, st>>>(
      a.grad, out, d.batch * d.s, d.dv, delta);
  if (norms && a.mask) {
    g.qNorm = norms;
    g.kNorm = norms + d.batch;
    maxNormKernel<kBf16><<<unsigned(d.batch), kThreads, 0, st>>>(
        a.q, d.s * d.d, d.s, d.d, d.d, 1, norms);
    maxNormKernel<kBf16><<<unsigned(d.batch), kThreads, 0, st>>>(
        a.kt, d.d * d.t, d.t, d.d, 1, d.t, norms + d.batch);
  }
  if (d.t > 0)
    dkv<<<dim3(unsigned(d.batch),
               unsigned((d.t + flash::kKeys - 1) / flash::kKeys)),
          flash::kThreads, dkvBytes, st>>>(g);
  dq<<<dim3(unsigned(d.batch),
            unsigned((d.s + flash::kRows - 1) / flash::kRows)),
       flash::kThreads, dqBytes, st>>>(g);
  return cudaGetLastError();
}

/// fn(bool constant, int constant) for the half and the head dim (one that
/// flash::supportedHeadDim admits).
template <class Fn> cudaError_t withHeadDim(DType half, int64_t d, Fn fn) {
  using std::integral_constant;
  const bool bf16 = half == DType::BF16;
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

} // namespace

cudaError_t launchFlashAttentionGrad(DType half, const flash::GradArgs &a,
                                     const uint16_t *out, float *delta,
                                     float *norms, cudaStream_t st) {
  const AttentionDims &d = a.dims;
  if (d.batch == 0)
    return cudaSuccess;
  if (d.s == 0) { // no query: dkt and dv are 0
    const size_t bytes = size_t(d.batch * d.d * d.t) * sizeof(uint16_t);
    cudaError_t e = cudaMemsetAsync(a.dkt, 0, bytes, st);
    return e == cudaSuccess ? cudaMemsetAsync(a.dv, 0, bytes, st) : e;
  }
  return withHeadDim(half, d.d, [&](auto bf16, auto dim) {
    return launchGradFor<decltype(bf16)::value, decltype(dim)::value>(
        a, out, delta, norms, st);
  });
}

cudaError_t launchFlashAttention(DType half, const flash::Args &a,
                                 const float *fill, cudaStream_t st) {
  const AttentionDims &d = a.dims;
  if (d.batch == 0 || d.s == 0)
    return cudaSuccess;
  return withHeadDim(half, d.d, [&](auto bf16, auto dim) {
    return launchFor<decltype(bf16)::value, decltype(dim)::value>(a, fill, st);
  });
}

} // namespace tessel::runtime::cuda
