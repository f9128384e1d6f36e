//===- Binary.cu - Binary ops, compare, where on CUDA ---------------------===//
//
// The device code of the Binary family (Binary.cpp builds the steps, and
// Training.cpp relu_grad's): each op's math is its functor of
// tessel/runtime/BinaryOps.h, shared with the CPU backend, instantiated into
// the kernels below per op and dtype. Strided index
// math in 32 bits where the plan fits (Indexer32.h: each dim's division a
// multiply-high and a shift); f32 binary ops and where produce four results
// per thread, with 16-byte loads and stores, where the innermost dim allows.
//
//===----------------------------------------------------------------------===//
#include "CudaKernels.h"
#include "tessel/ops/DTypeDispatch.h"
#include "DeviceUtil.cuh"
#include "Indexer32.h"
#include "tessel/runtime/BinaryOps.h"

#include <cmath>
#include <cstdint>
#include <type_traits>

namespace tessel::runtime::cuda {

namespace {

using namespace device;

/// y = f(a, b) for the functor `f` of a binary op (BinaryOps.h).
template <class F, typename T, typename IX>
__global__ void binaryKernel(F f, const T *a, const T *b, T *y, IX ix) {
  TSL_GRID_LOOP_IX(i, ix) {
    int64_t off[kMaxOperands];
    offsetsAt(ix, i, off);
    y[i] = f(a[off[0]], b[off[1]]);
  }
}

/// Four consecutive values of an operand read with stride 0 or 1 along the
/// innermost dim from element `off`: one 16-byte load where aligned.
__device__ __forceinline__ float4 load4(const float *p, int64_t off,
                                        int32_t stride) {
  if (stride == 0) {
    const float v = p[off];
    return make_float4(v, v, v, v);
  }
  const float *q = p + off;
  if ((reinterpret_cast<uintptr_t>(q) & 15u) == 0)
    return *reinterpret_cast<const float4 *>(q);
  return make_float4(q[0], q[1], q[2], q[3]);
}

/// Calls f(t, off, strides) for each group t of four consecutive results
/// of a fourWide plan (Indexer32.h): `off` the operands' offsets at the
/// group's first result, `strides` theirs along the innermost dim (0 or 1).
/// The index math once per four values.
template <typename F>
__device__ __forceinline__ void forEachFour(const Indexer32 &ix, F f) {
  int32_t strides[kMaxOperands]; // registers, read once
#pragma unroll
  for (int k = 0; k < kMaxOperands; ++k)
    strides[k] = ix.strides[ix.rank - 1][k];
  const uint32_t n4 = ix.total / 4;
  for (uint32_t t = blockIdx.x * blockDim.x + threadIdx.x; t < n4;
       t += blockDim.x * gridDim.x) {
    int64_t off[kMaxOperands];
    offsetsAt(ix, 4 * t, off);
    f(t, off, strides);
  }
}

/// binaryKernel on f32, four results per thread, for plans whose innermost
/// dim is a multiple of 4 and read with stride 0 or 1 by both operands (same
/// shapes, a scalar, a row or column broadcast): 16-byte loads and stores.
template <class F>
__global__ void binaryF32x4Kernel(F f, const float *a, const float *b,
                                  float *y, Indexer32 ix) {
  forEachFour(ix, [&](uint32_t t, const int64_t *off, const int32_t *st) {
    const float4 x = load4(a, off[0], st[0]), z = load4(b, off[1], st[1]);
    float4 r;
    r.x = f(x.x, z.x);
    r.y = f(x.y, z.y);
    r.z = f(x.z, z.z);
    r.w = f(x.w, z.w);
    reinterpret_cast<float4 *>(y)[t] = r;
  });
}

template <typename T, typename IX>
__global__ void compareKernel(CmpPred pred, const T *a, const T *b, uint8_t *y,
                              IX ix) {
  TSL_GRID_LOOP_IX(i, ix) {
    int64_t off[kMaxOperands];
    offsetsAt(ix, i, off);
    const T x = a[off[0]], z = b[off[1]];
    bool r = false;
    switch (pred) {
    case CmpPred::Eq:
      r = x == z;
      break;
    case CmpPred::Ne:
      r = x != z;
      break;
    case CmpPred::Lt:
      r = x < z;
      break;
    case CmpPred::Le:
      r = x <= z;
      break;
    case CmpPred::Gt:
      r = x > z;
      break;
    case CmpPred::Ge:
      r = x >= z;
      break;
    }
    y[i] = static_cast<uint8_t>(r);
  }
}

template <typename T, typename IX>
__global__ void whereKernel(const uint8_t *c, const T *x, const T *y, T *out,
                            IX ix) {
  TSL_GRID_LOOP_IX(i, ix) {
    int64_t off[kMaxOperands];
    offsetsAt(ix, i, off);
    out[i] = c[off[0]] ? x[off[1]] : y[off[2]];
  }
}

/// whereKernel on f32 four results per thread (fourWide plans: attention's
/// causal mask over its scores).
__global__ void whereF32x4Kernel(const uint8_t *c, const float *x,
                                 const float *y, float *out, Indexer32 ix) {
  forEachFour(ix, [&](uint32_t t, const int64_t *off, const int32_t *st) {
    const float4 a = load4(x, off[1], st[1]), b = load4(y, off[2], st[2]);
    const uint8_t *cp = c + off[0];
    const int32_t sc = st[0];
    float4 r;
    r.x = cp[0] ? a.x : b.x;
    r.y = cp[sc] ? a.y : b.y;
    r.z = cp[2 * sc] ? a.z : b.z;
    r.w = cp[3 * sc] ? a.w : b.w;
    reinterpret_cast<float4 *>(out)[t] = r;
  });
}

} // namespace

/// Calls f with ix's 32-bit form where it has one, else its 64-bit one.
template <typename F> cudaError_t withIndexer(const StridedIndex &ix, F f) {
  return ix.fits32 ? f(ix.narrow) : f(ix.wide);
}

namespace {

template <class Types, class F>
cudaError_t launchBinaryWith(F f, DType dtype, const void *a, const void *b,
                             void *y, const StridedIndex &ix, cudaStream_t s) {
  return visitDType(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T *at = static_cast<const T *>(a), *bt = static_cast<const T *>(b);
    T *yt = static_cast<T *>(y);
    return withIndexer(ix, [&](const auto &n) {
      using IX = std::decay_t<decltype(n)>;
      if constexpr (!scalar::takes<Types, T>()) {
        return n.total ? cudaErrorInvalidValue : cudaGetLastError();
      } else {
        if constexpr (std::is_same_v<T, float> &&
                      std::is_same_v<IX, Indexer32>)
          if (fourWide(n) && reinterpret_cast<uintptr_t>(yt) % 16 == 0)
            return launchOver(n.total / 4, s, binaryF32x4Kernel<F>, f, at, bt,
                              yt, n);
        return launchOver(n.total, s, binaryKernel<F, T, IX>, f, at, bt, yt,
                          n);
      }
    });
  });
}

} // namespace

cudaError_t launchBinary(OpKind kind, DType dtype, const void *a, const void *b,
                         void *y, const StridedIndex &ix, bool bScalar,
                         cudaStream_t s) {
  switch (kind) {
#define TESSEL_BINARY_SCALAR(Kind, Types)                                      \
  case OpKind::Kind: {                                                         \
    scalar::Kind<device::CudaMath> f;                                          \
    scalar::setScalarRhs(f, bScalar);                                          \
    return launchBinaryWith<scalar::Types>(f, dtype, a, b, y, ix, s);          \
  }
    TESSEL_RUNTIME_BINARY_SCALAR_OPS(TESSEL_BINARY_SCALAR)
#undef TESSEL_BINARY_SCALAR
  case OpKind::ReluGrad:
    return launchBinaryWith<scalar::Float>(
        scalar::ReluGrad<device::CudaMath>(), dtype, a, b, y, ix, s);
  default:
    return cudaErrorInvalidValue;
  }
}

cudaError_t launchCompare(CmpPred pred, DType dtype, const void *a,
                          const void *b, uint8_t *y, const StridedIndex &ix,
                          cudaStream_t s) {
  return visitDType(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    return withIndexer(ix, [&](const auto &n) {
      using IX = std::decay_t<decltype(n)>;
      return launchOver(n.total, s, compareKernel<T, IX>, pred,
                        static_cast<const T *>(a), static_cast<const T *>(b), y,
                        n);
    });
  });
}

cudaError_t launchWhere(size_t elemSize, const uint8_t *cond, const void *x,
                        const void *y, void *out, const StridedIndex &ix,
                        cudaStream_t s) {
  return visitElementSize(elemSize, cudaErrorInvalidValue, [&](auto tag) {
    using T = typename decltype(tag)::type;
    return withIndexer(ix, [&](const auto &n) {
      using IX = std::decay_t<decltype(n)>;
      if constexpr (std::is_same_v<IX, Indexer32> && sizeof(T) == 4)
        if (fourWide(n) && reinterpret_cast<uintptr_t>(out) % 16 == 0)
          return launchOver(n.total / 4, s, whereF32x4Kernel, cond,
                            static_cast<const float *>(x),
                            static_cast<const float *>(y),
                            static_cast<float *>(out), n);
      return launchOver(n.total, s, whereKernel<T, IX>, cond,
                        static_cast<const T *>(x), static_cast<const T *>(y),
                        static_cast<T *>(out), n);
    });
  });
}

} // namespace tessel::runtime::cuda
