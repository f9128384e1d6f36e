//===- Binary.cu - Binary ops, compare, where on CUDA ---------------------===//
//
// The device code of the Binary family (Binary.cpp builds the steps, and
// Training.cpp relu_grad's: a case of the f32 binary kernel). Strided index
// math in 32 bits where the plan fits (Indexer32.h: each dim's division a
// multiply-high and a shift); f32 binary ops and where produce four results
// per thread, with 16-byte loads and stores, where the innermost dim allows.
//
//===----------------------------------------------------------------------===//
#include "CudaKernels.h"
#include "DTypeDispatch.h"
#include "DeviceUtil.cuh"
#include "Indexer32.h"

#include <cmath>
#include <cstdint>
#include <type_traits>

namespace tessel::runtime::cuda {

namespace {

using namespace device;

__device__ __forceinline__ float binaryF32(OpKind kind, float x, float y,
                                           bool bScalar) {
  switch (kind) {
  case OpKind::Add:
    return x + y;
  case OpKind::Sub:
    return x - y;
  case OpKind::Mul:
    return x * y;
  case OpKind::Div:
    return x / y;
  case OpKind::FMod:
    return fmodf(x, y);
  case OpKind::Pow:
    if (bScalar) { // the CPU backend's fast paths, for identical results
      if (y == 2.0f)
        return x * x;
      if (y == 3.0f)
        return x * x * x;
      if (y == 1.0f)
        return x;
      if (y == 0.5f)
        return sqrtf(x);
      if (y == -1.0f)
        return 1.0f / x;
    }
    return powf(x, y);
  case OpKind::Max: // NaN propagates, as numpy.maximum
    return (x > y || x != x) ? x : y;
  case OpKind::ReluGrad: // x the relu's result, y its gradient
    return x > 0.0f ? y : 0.0f;
  case OpKind::Min:
    return (x < y || x != x) ? x : y;
  default:
    return 0.0f;
  }
}

template <typename IX>
__global__ void binaryF32Kernel(OpKind kind, const float *a, const float *b,
                                float *y, IX ix, bool bScalar) {
  TSL_GRID_LOOP_IX(i, ix) {
    int64_t off[kMaxOperands];
    offsetsAt(ix, i, off);
    y[i] = binaryF32(kind, a[off[0]], b[off[1]], bScalar);
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

/// binaryF32Kernel four results per thread, for plans whose innermost dim
/// is a multiple of 4 and read with stride 0 or 1 by both operands (same
/// shapes, a scalar, a row or column broadcast): 16-byte loads and stores.
__global__ void binaryF32x4Kernel(OpKind kind, const float *a, const float *b,
                                  float *y, Indexer32 ix, bool bScalar) {
  forEachFour(ix, [&](uint32_t t, const int64_t *off, const int32_t *st) {
    const float4 x = load4(a, off[0], st[0]), z = load4(b, off[1], st[1]);
    float4 r;
    r.x = binaryF32(kind, x.x, z.x, bScalar);
    r.y = binaryF32(kind, x.y, z.y, bScalar);
    r.z = binaryF32(kind, x.z, z.z, bScalar);
    r.w = binaryF32(kind, x.w, z.w, bScalar);
    reinterpret_cast<float4 *>(y)[t] = r;
  });
}

template <typename T, typename IX>
__global__ void binaryIntKernel(OpKind kind, const T *a, const T *b, T *y,
                                IX ix) {
  using U = typename std::make_unsigned<T>::type;
  TSL_GRID_LOOP_IX(i, ix) {
    int64_t off[kMaxOperands];
    offsetsAt(ix, i, off);
    const T x = a[off[0]], z = b[off[1]];
    T r = 0;
    switch (kind) {
    case OpKind::Add:
      r = static_cast<T>(U(x) + U(z));
      break;
    case OpKind::Sub:
      r = static_cast<T>(U(x) - U(z));
      break;
    case OpKind::Mul:
      r = static_cast<T>(U(x) * U(z));
      break;
    case OpKind::Div: // truncating; x / 0 = 0; no trap on MIN / -1
      r = z == 0 ? T(0) : z == -1 ? static_cast<T>(U(0) - U(x)) : x / z;
      break;
    case OpKind::FMod: // sign of x; x % 0 = 0; no trap on MIN % -1
    case OpKind::Mod:  // sign of z: the C remainder moved by z (no overflow)
      r = z == 0 || z == -1 ? T(0) : static_cast<T>(x % z);
      if (kind == OpKind::Mod && r != 0 && ((r < 0) != (z < 0)))
        r = static_cast<T>(r + z);
      break;
    case OpKind::Max:
      r = x > z ? x : z;
      break;
    case OpKind::Min:
      r = x < z ? x : z;
      break;
    default:
      break;
    }
    y[i] = r;
  }
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

cudaError_t launchBinary(OpKind kind, DType dtype, const void *a, const void *b,
                         void *y, const StridedIndex &ix, bool bScalar,
                         cudaStream_t s) {
  return visitDType(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T *at = static_cast<const T *>(a), *bt = static_cast<const T *>(b);
    T *yt = static_cast<T *>(y);
    return withIndexer(ix, [&](const auto &n) {
      using IX = std::decay_t<decltype(n)>;
      if constexpr (std::is_same_v<T, float>) {
        if constexpr (std::is_same_v<IX, Indexer32>)
          if (fourWide(n) && reinterpret_cast<uintptr_t>(yt) % 16 == 0)
            return launchOver(n.total / 4, s, binaryF32x4Kernel, kind, at, bt,
                              yt, n, bScalar);
        return launchOver(n.total, s, binaryF32Kernel<IX>, kind, at, bt, yt, n,
                          bScalar);
      } else if constexpr (kIsBool<T>)
        return n.total ? cudaErrorInvalidValue : cudaGetLastError();
      else
        return launchOver(n.total, s, binaryIntKernel<T, IX>, kind, at, bt, yt,
                          n);
    });
  });
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
