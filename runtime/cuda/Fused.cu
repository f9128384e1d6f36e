//===- Fused.cu - fused_elementwise on CUDA -------------------------------===//
//
// The device code of the Fused family (Fused.cpp decodes the program): one
// thread per result element (32-bit index math below 2^31 elements, a
// period's remainder by its magic number) runs the program (tessel/runtime/
// FusedProgram.h) in registers and local memory: each input read once (a
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

/// flag: bit 0 gelu's tanh form; bit 1 the right operand is one element
/// (pow's fast paths, as the unfused kernel's setScalarRhs); bits 2-3 a
/// cast's target.
__device__ float applyOne(int kind, int flag, float x, float y) {
  switch (static_cast<OpKind>(kind)) {
  case OpKind::Cast:
    return roundTo(flag >> 2, x);
#define TESSEL_FUSED_UNARY(Kind, Types, SetMembers)                            \
  case OpKind::Kind:                                                           \
    return unaryOf<scalar::Types>(scalar::Kind<CudaMath>{}, (flag & 1) != 0, x);
    TESSEL_RUNTIME_UNARY_SCALAR_OPS(TESSEL_FUSED_UNARY)
#undef TESSEL_FUSED_UNARY
#define TESSEL_FUSED_BINARY(Kind, Types)                                       \
  case OpKind::Kind:                                                           \
    if constexpr (!std::is_same_v<scalar::Types, scalar::Integer>) {           \
      scalar::Kind<CudaMath> f;                                                \
      scalar::setScalarRhs(f, (flag & 2) != 0);                                \
      return f(x, y);                                                          \
    }                                                                          \
    return x;
    TESSEL_RUNTIME_BINARY_SCALAR_OPS(TESSEL_FUSED_BINARY)
#undef TESSEL_FUSED_BINARY
  default:
    return x; // refused at load
  }
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

template <typename I>
__global__ void fusedKernel(FusedLaunch p, void *out, I n) {
  for (I e = static_cast<I>(blockIdx.x) * blockDim.x + threadIdx.x; e < n;
       e += static_cast<I>(blockDim.x) * gridDim.x) {
    float v[FusedLaunch::kMaxInputs + FusedLaunch::kMaxCode];
    for (int i = 0; i < p.inputs; ++i)
      v[i] = load(p.in[i], p.inType[i], inputIndex(p, i, e));
    float last = 0.0f;
    for (int k = 0; k < p.code; ++k) {
      last = applyOne(p.kind[k], p.flag[k], v[p.a[k]],
                      p.b[k] >= 0 ? v[p.b[k]] : 0.0f);
      v[p.inputs + k] = last;
    }
    if (p.outType == 1)
      static_cast<uint16_t *>(out)[e] = f32ToBf16(last);
    else if (p.outType == 2)
      static_cast<uint16_t *>(out)[e] = f32ToF16(last);
    else
      static_cast<float *>(out)[e] = last;
  }
}

} // namespace

cudaError_t launchFused(const FusedLaunch &p, void *out, int64_t n,
                        cudaStream_t s) {
  // Below 2^31, e and e plus the grid's stride (at most 2^26 threads) fit
  // 32 bits.
  if (n < (int64_t(1) << 31))
    return launchOver(n, s, fusedKernel<uint32_t>, p, out,
                      static_cast<uint32_t>(n));
  return launchOver(n, s, fusedKernel<int64_t>, p, out, n);
}

} // namespace tessel::runtime::cuda
