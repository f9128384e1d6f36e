//===- Fused.cu - fused_elementwise on CUDA -------------------------------===//
//
// The device code of the Fused family (Fused.cpp decodes the program): each
// thread carries four result elements a grid's stride apart (so that every
// load and store stays coalesced) and runs the program (tessel/runtime/
// FusedProgram.h) once over the four, one dispatch per instruction, in
// registers and local memory (32-bit index math below 2^31 elements, a
// period's remainder by its magic number; TESSEL_FUSED_WIDTH=1 runs one
// element per thread, to compare): each input read once (a
// bf16 or f16 one widened), the result written once (narrowed where it is
// a half), each op the functor of ScalarOps.h / BinaryOps.h with CudaMath,
// as the unfused kernels compute it; a cast to a half rounds as the cast
// kernel does (HalfFloat.h).
//
//===----------------------------------------------------------------------===//
#include "CudaKernels.h"
#include "DeviceUtil.cuh"
#include "tessel/runtime/BinaryOps.h"
#include "tessel/runtime/HalfFloat.h"
#include "tessel/runtime/ScalarOps.h"

#include <cstdlib>
#include <cstring>
#include <type_traits>

namespace tessel::runtime::cuda {

namespace {

using namespace device;

template <typename Types, typename F>
__device__ float unaryOf(F f, bool flag, float x) {
  if constexpr (std::is_same_v<F, scalar::Gelu<CudaMath>>)
    return F{flag}(x);
  else if constexpr (!std::is_same_v<Types, scalar::Bool>)
    return f(x);
  else
    return x; // refused at load
}

/// `x` of type `type` (0 f32, 1 bf16, 2 f16) as the f32 it is.
__device__ float roundTo(int type, float x) {
  if (type == 1)
    return bf16ToF32(f32ToBf16(x));
  if (type == 2)
    return f16ToF32(f32ToF16(x));
  return x;
}

__device__ float load(const void *p, int type, int64_t i) {
  if (type == 1)
    return bf16ToF32(static_cast<const uint16_t *>(p)[i]);
  if (type == 2)
    return f16ToF32(static_cast<const uint16_t *>(p)[i]);
  return static_cast<const float *>(p)[i];
}

/// r[j] = the instruction (kind, flag) of x[j] and y[j] for each of the W
/// elements a thread carries: one dispatch per instruction, not per
/// element. flag: bit 0 gelu's tanh form; bit 1 the right operand is one
/// element (pow's fast paths, as the unfused kernel's setScalarRhs); bits
/// 2-3 a cast's target.
template <int W>
__device__ void apply(int kind, int flag, const float *x, const float *y,
                      float *r) {
  switch (static_cast<OpKind>(kind)) {
  case OpKind::Cast:
#pragma unroll
    for (int j = 0; j < W; ++j)
      r[j] = roundTo(flag >> 2, x[j]);
    return;
#define TESSEL_FUSED_UNARY(Kind, Types, SetMembers)                            \
  case OpKind::Kind:                                                           \
    _Pragma("unroll") for (int j = 0; j < W; ++j) r[j] =                       \
        unaryOf<scalar::Types>(scalar::Kind<CudaMath>{}, (flag & 1) != 0,      \
                               x[j]);                                          \
    return;
    TESSEL_RUNTIME_UNARY_SCALAR_OPS(TESSEL_FUSED_UNARY)
#undef TESSEL_FUSED_UNARY
#define TESSEL_FUSED_BINARY(Kind, Types)                                       \
  case OpKind::Kind:                                                           \
    if constexpr (!std::is_same_v<scalar::Types, scalar::Integer>) {           \
      scalar::Kind<CudaMath> f;                                                \
      scalar::setScalarRhs(f, (flag & 2) != 0);                                \
      _Pragma("unroll") for (int j = 0; j < W; ++j) r[j] = f(x[j], y[j]);      \
      return;                                                                  \
    }                                                                          \
    break;
    TESSEL_RUNTIME_BINARY_SCALAR_OPS(TESSEL_FUSED_BINARY)
#undef TESSEL_FUSED_BINARY
  default:
    break;
  }
#pragma unroll
  for (int j = 0; j < W; ++j)
    r[j] = x[j]; // refused at load
}

/// Element e's index in input i: e (the result's shape), 0 (one element),
/// or e % period; I is uint32_t below 2^31 elements (the remainder by the
/// period's magic number), else int64_t.
template <typename I>
__device__ __forceinline__ I inputIndex(const FusedLaunch &p, int i, I e) {
  const int64_t period = p.period[i];
  if (period == 0)
    return e;
  if (period < 0)
    return 0;
  if constexpr (std::is_same_v<I, uint32_t>)
    return e -
           divide(e, p.magic[i], p.shift[i]) * static_cast<uint32_t>(period);
  else
    return e % period;
}

/// Each thread carries W elements, e0 + j stride for j < W (stride: the
/// grid's threads, so that each load and store is coalesced over a warp),
/// and runs the program once over all W: the dispatch and the program's
/// reads amortised over W elements.
template <typename I, int W>
__global__ void fusedKernel(FusedLaunch p, void *out, I n) {
  const I stride = static_cast<I>(blockDim.x) * gridDim.x;
  for (I e0 = static_cast<I>(blockIdx.x) * blockDim.x + threadIdx.x; e0 < n;
       e0 += W * stride) {
    float v[FusedLaunch::kMaxInputs + FusedLaunch::kMaxCode][W];
    for (int i = 0; i < p.inputs; ++i)
#pragma unroll
      for (int j = 0; j < W; ++j) {
        const I e = e0 + j * stride;
        v[i][j] =
            e < n ? load(p.in[i], p.inType[i], inputIndex(p, i, e)) : 0.0f;
      }
    const float *last = v[0];
    for (int k = 0; k < p.code; ++k) {
      float *r = v[p.inputs + k];
      apply<W>(p.kind[k], p.flag[k], v[p.a[k]], p.b[k] >= 0 ? v[p.b[k]] : v[0],
               r);
      last = r;
    }
#pragma unroll
    for (int j = 0; j < W; ++j) {
      const I e = e0 + j * stride;
      if (e >= n)
        break;
      if (p.outType == 1)
        static_cast<uint16_t *>(out)[e] = f32ToBf16(last[j]);
      else if (p.outType == 2)
        static_cast<uint16_t *>(out)[e] = f32ToF16(last[j]);
      else
        static_cast<float *>(out)[e] = last[j];
    }
  }
}

/// The elements per thread: 4, or TESSEL_FUSED_WIDTH=1 (one, to compare).
int fusedWidth() {
  static const int w = [] {
    const char *s = std::getenv("TESSEL_FUSED_WIDTH");
    return s && std::strcmp(s, "1") == 0 ? 1 : 4;
  }();
  return w;
}

template <typename I>
cudaError_t launchWidth(const FusedLaunch &p, void *out, I n, cudaStream_t s) {
  if (fusedWidth() == 1)
    return launchOver(n, s, fusedKernel<I, 1>, p, out, n);
  return launchOver((n + 3) / 4, s, fusedKernel<I, 4>, p, out, n);
}

} // namespace

cudaError_t launchFused(const FusedLaunch &p, void *out, int64_t n,
                        cudaStream_t s) {
  // Below 2^31, e0 plus four times the grid's stride (at most 2^26
  // threads) fits 32 bits.
  if (n < (int64_t(1) << 31))
    return launchWidth(p, out, static_cast<uint32_t>(n), s);
  return launchWidth(p, out, n, s);
}

} // namespace tessel::runtime::cuda
