//===- FlashAttention.cu - half attention's forward on tensor cores -------===//
//
// FlashAttention.h's tile algorithm on the device: its context is the
// thread's threadIdx, __syncthreads, warp shuffles and mma.sync (bf16 or
// f16 operands, f32 accumulators: sm_80 and later). Before it, one block
// per batch entry finds the largest key norm (the skips' bound); after it,
// the rows whose max was not finite get the NaN guard's fill times the sum
// of v's rows, summed in the CPU's order (cpu/Attention.cpp, fillRow).
//
//===----------------------------------------------------------------------===//
#include "CudaKernels.h"
#include "DeviceUtil.cuh"
#include "FlashAttention.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

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
    __trap(); // launchFlashAttention refuses devices before sm_80
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

/// kNorm[b] = the largest Euclidean norm of batch entry b's keys (the
/// columns of kt [D, T]); NaN propagates.
template <bool kBf16>
__global__ void keyNormKernel(const uint16_t *kt, int64_t d, int64_t t,
                              float *kNorm) {
  __shared__ float shm[32];
  const uint16_t *kb = kt + int64_t(blockIdx.x) * d * t;
  float best = 0.0f;
  for (int64_t j = threadIdx.x; j < t; j += blockDim.x) {
    float sq = 0.0f;
    for (int64_t c = 0; c < d; ++c) {
      const float x = kBf16 ? bf16ToF32(kb[c * t + j]) : f16ToF32(kb[c * t + j]);
      sq += x * x;
    }
    best = flash::maxNan(best, sq);
  }
  struct MaxNan {
    __device__ float operator()(float x, float y) const {
      return flash::maxNan(x, y);
    }
  };
  best = blockReduce(best, 0.0f, MaxNan(), shm);
  if (threadIdx.x == 0)
    kNorm[blockIdx.x] = sqrtf(best);
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
      sum += kBf16 ? bf16ToF32(vb[j * dv + k]) : f16ToF32(vb[j * dv + k]);
    const float x = *fill * sum;
    out[e] = kBf16 ? f32ToBf16(x) : f32ToF16(x);
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
    keyNormKernel<kBf16><<<unsigned(d.batch), kThreads, 0, st>>>(
        a.kt, d.d, d.t, const_cast<float *>(a.kNorm));
  const dim3 grid(unsigned(d.batch),
                  unsigned((d.s + flash::kRows - 1) / flash::kRows));
  kernel<<<grid, flash::kThreads, bytes, st>>>(a);
  if (fill && d.batch * d.s * d.dv > 0)
    fillNanRowsKernel<kBf16><<<gridFor(d.batch * d.s * d.dv), kThreads, 0,
                               st>>>(a.lse, d.s, d.t, d.dv, a.v, fill, a.out,
                                     d.batch * d.s * d.dv);
  return cudaGetLastError();
}

} // namespace

cudaError_t launchFlashAttention(DType half, const flash::Args &a,
                                 const float *fill, cudaStream_t st) {
  const AttentionDims &d = a.dims;
  if (d.batch == 0 || d.s == 0)
    return cudaSuccess;
  const bool bf16 = half == DType::BF16;
  if (d.d == 64)
    return bf16 ? launchFor<true, 64>(a, fill, st)
                : launchFor<false, 64>(a, fill, st);
  return bf16 ? launchFor<true, 128>(a, fill, st)
              : launchFor<false, 128>(a, fill, st);
}

} // namespace tessel::runtime::cuda
