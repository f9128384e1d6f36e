//===- Elementwise.cu - Unary ops, round_float, cast on CUDA --------------===//
//
// The device code of the Elementwise family (Elementwise.cpp builds the
// steps). The unary ops are their scalar functions (tessel/runtime/ScalarOps.h,
// shared with the CPU backend), mapped over a buffer by mapKernel with CUDA's
// math library (CudaMath: DeviceUtil.cuh); round_float to bf16, which the
// mixed-precision step runs on every GEMM's operands, has a branch-free
// kernel four values per thread.
//
//===----------------------------------------------------------------------===//
#include "CudaKernels.h"
#include "tessel/ops/DTypeDispatch.h"
#include "DeviceUtil.cuh"
#include "tessel/runtime/Program.h"
#include "tessel/runtime/ScalarOps.h"

#include <cstdint>
#include <type_traits>

namespace tessel::runtime::cuda {

namespace {

using namespace device;

// The unary ops' math is their scalar functions (tessel/runtime/ScalarOps.h,
// shared with the CPU backend), mapped over a buffer by mapKernel with
// CUDA's math library; the op table's TESSEL_RUNTIME_UNARY_SCALAR_OPS lists
// them, so a new one needs nothing here (CudaMath: DeviceUtil.cuh).

template <typename F, typename T>
__global__ void mapKernel(F f, const T *x, T *y, int64_t n) {
  TSL_GRID_LOOP(i, n) { y[i] = f(x[i]); }
}

/// round_float's function: the CPU's (ScalarOps.h).
struct RoundFloat {
  int e, m;
  __device__ float operator()(float v) const {
    return scalar::roundToFormat<CudaMath>(v, e, m);
  }
};

/// Launches y = f(x) over n elements of `dtype`, one of the dtypes `Types`
/// (scalar::Float, Numeric, Bool) that the load-time checks let through.
template <typename Types, typename F>
cudaError_t launchMap(F f, DType dtype, const void *x, void *y, int64_t n,
                      cudaStream_t s) {
  return visitDType(dtype, [&](auto tag) -> cudaError_t {
    using T = typename decltype(tag)::type;
    constexpr bool ok =
        std::is_same_v<Types, scalar::Bool>
            ? kIsBool<T>
            : std::is_same_v<T, float> ||
                  (std::is_same_v<Types, scalar::Numeric> && !kIsBool<T>);
    if constexpr (ok)
      return launchOver(n, s, mapKernel<F, T>, f, static_cast<const T *>(x),
                        static_cast<T *>(y), n);
    else
      return cudaErrorInvalidValue;
  });
}

template <typename From, typename To>
__global__ void castKernel(const From *x, To *y, int64_t n) {
  TSL_GRID_LOOP(i, n) { y[i] = static_cast<To>(x[i]); }
}

template <typename From>
__global__ void castToBoolKernel(const From *x, uint8_t *y, int64_t n) {
  TSL_GRID_LOOP(i, n) { y[i] = static_cast<uint8_t>(x[i] != From(0)); }
}

template <typename From>
cudaError_t castFrom(const From *x, DType to, void *y, int64_t n,
                     cudaStream_t s) {
  return visitDType(to, [&](auto tag) {
    using To = typename decltype(tag)::type;
    if constexpr (kIsBool<To>)
      return launchOver(n, s, castToBoolKernel<From>, x,
                        static_cast<uint8_t *>(y), n);
    else
      return launchOver(n, s, castKernel<From, To>, x, static_cast<To *>(y), n);
  });
}

template <typename To>
__global__ void castFromHalfKernel(const uint16_t *x, DType half, To *y,
                                   int64_t n) {
  TSL_GRID_LOOP(i, n) {
    if constexpr (kIsBool<To>)
      y[i] = static_cast<uint8_t>(halfToF32(half, x[i]) != 0.0f);
    else
      y[i] = static_cast<To>(halfToF32(half, x[i]));
  }
}

template <typename From>
__global__ void castToHalfKernel(const From *x, DType half, uint16_t *y,
                                 int64_t n) {
  TSL_GRID_LOOP(i, n) { y[i] = f32ToHalf(half, static_cast<float>(x[i])); }
}

__global__ void castHalfToHalfKernel(const uint16_t *x, DType from, DType to,
                                     uint16_t *y, int64_t n) {
  TSL_GRID_LOOP(i, n) { y[i] = f32ToHalf(to, halfToF32(from, x[i])); }
}

/// A cast from or to a half: through f32, rounding once (as the CPU's).
cudaError_t castHalf(DType from, const void *x, DType to, void *y, int64_t n,
                     cudaStream_t s) {
  if (isHalf(from) && isHalf(to))
    return launchOver(n, s, castHalfToHalfKernel,
                      static_cast<const uint16_t *>(x), from, to,
                      static_cast<uint16_t *>(y), n);
  if (isHalf(from))
    return visitDType(to, [&](auto tag) {
      using To = typename decltype(tag)::type;
      return launchOver(n, s, castFromHalfKernel<To>,
                        static_cast<const uint16_t *>(x), from,
                        static_cast<To *>(y), n);
    });
  return visitDType(from, [&](auto tag) {
    using From = typename decltype(tag)::type;
    return launchOver(n, s, castToHalfKernel<From>,
                      static_cast<const From *>(x), to,
                      static_cast<uint16_t *>(y), n);
  });
}

} // namespace

UnaryLaunch unaryLaunch(const Op &op) {
  switch (op.kind) {
#define TESSEL_UNARY_SCALAR(Kind, Types, SetMembers)                           \
  case OpKind::Kind: {                                                         \
    scalar::Kind<CudaMath> f;                                                  \
    SetMembers return [f](DType dtype, const void *x, void *y, int64_t n,      \
                          cudaStream_t s) {                                    \
      return launchMap<scalar::Types>(f, dtype, x, y, n, s);                   \
    };                                                                         \
  }
    TESSEL_RUNTIME_UNARY_SCALAR_OPS(TESSEL_UNARY_SCALAR)
#undef TESSEL_UNARY_SCALAR
  default:
    return nullptr;
  }
}

/// round_float to bf16 (the mixed-precision step rounds every GEMM's
/// operands and results, attention's scores included): the branch-free bit
/// rounding, four values per thread.
__global__ void roundBf16Kernel(const float4 *x, float4 *y, int64_t n4) {
  TSL_GRID_LOOP(i, n4) {
    float4 v = x[i];
    uint16_t unused;
    v.x = __uint_as_float(scalar::roundBf16Bits(__float_as_uint(v.x), &unused));
    v.y = __uint_as_float(scalar::roundBf16Bits(__float_as_uint(v.y), &unused));
    v.z = __uint_as_float(scalar::roundBf16Bits(__float_as_uint(v.z), &unused));
    v.w = __uint_as_float(scalar::roundBf16Bits(__float_as_uint(v.w), &unused));
    y[i] = v;
  }
}

cudaError_t launchRoundFloat(const float *x, float *y, int64_t n, int e, int m,
                             cudaStream_t s) {
  // roundBf16Bits is roundToFormat(., 8, 7) bit for bit (ScalarOps.h).
  if (e == 8 && m == 7 && n % 4 == 0 &&
      reinterpret_cast<uintptr_t>(x) % 16 == 0 &&
      reinterpret_cast<uintptr_t>(y) % 16 == 0)
    return launchOver(n / 4, s, roundBf16Kernel,
                      reinterpret_cast<const float4 *>(x),
                      reinterpret_cast<float4 *>(y), n / 4);
  return launchOver(n, s, mapKernel<RoundFloat, float>, RoundFloat{e, m}, x, y,
                    n);
}

cudaError_t launchCast(DType from, const void *x, DType to, void *y, int64_t n,
                       cudaStream_t s) {
  if (n == 0)
    return cudaGetLastError();
  if (from == to) {
    if (x == y)
      return cudaGetLastError();
    return cudaMemcpyAsync(y, x, n * dtypeSize(from), cudaMemcpyDeviceToDevice,
                           s);
  }
  if (isHalf(from) || isHalf(to))
    return castHalf(from, x, to, y, n, s);
  return visitDType(from, [&](auto tag) {
    using T = typename decltype(tag)::type;
    return castFrom(static_cast<const T *>(x), to, y, n, s);
  });
}

} // namespace tessel::runtime::cuda
