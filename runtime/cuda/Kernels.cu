//===- Kernels.cu - CUDA kernels of the instruction set -------------------===//
//
// Plain kernels, tuned where a profile on a GPU showed the time: grid-stride
// loops over the result with strided index math in 32 bits where a plan
// fits (Indexer32.h: each dim's division a multiply-high and a shift), four
// results per thread where the innermost dim allows (binary f32, where),
// 32 x 32 shared-memory tiles for transposes, coalesced column sums for
// outer reductions, one block per row where a row is reduced (block
// reductions through warp shuffles). Each formula is the CPU kernel's
// (runtime/cpu), so both backends agree up to the order of float sums.
// The GEMMs (matmul, gemm, conv2d) are cuBLAS calls made by MatMul.cpp and
// Conv.cpp. Each instruction's step is built by the kernel family that
// registers its kind (CudaKernelRegistry.h); unary ops are their scalar
// functions (tessel/runtime/ScalarOps.h), mapped here.
//
//===----------------------------------------------------------------------===//
#include "CudaKernels.h"
#include "DTypeDispatch.h"
#include "DeviceUtil.cuh"
#include "Indexer32.h"
#include "tessel/runtime/Program.h"
#include "tessel/runtime/ScalarOps.h"

#include <cfloat>
#include <climits>
#include <cmath>
#include <cstdint>
#include <type_traits>
#include <utility>

namespace tessel::runtime::cuda {

namespace {

using namespace device;

//===----------------------------------------------------------------------===//
// Unary and cast
//===----------------------------------------------------------------------===//

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

//===----------------------------------------------------------------------===//
// Binary, compare, where
//===----------------------------------------------------------------------===//

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

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

template <typename T, typename IX>
__global__ void stridedCopyKernel(const T *src, T *dst, IX ix) {
  if (ix.numOperands == 2) {
    TSL_GRID_LOOP_IX(i, ix) {
      int64_t off[kMaxOperands];
      offsetsAt(ix, i, off);
      dst[off[1]] = src[off[0]];
    }
  } else {
    TSL_GRID_LOOP_IX(i, ix) { dst[i] = src[offset0(ix, i)]; }
  }
}

/// A copy into a contiguous result whose innermost dim reads the source
/// with stride S != 1 while the dim outside it reads with stride 1 (a
/// transpose of the last two dims, over any batch dims): 32 x 32 tiles
/// through shared memory, so that both the reads and the writes are
/// coalesced (the plain kernel reads 4 useful bytes of each 32-byte
/// sector). ix is the copy's indexer over the result's dims, rank >= 2;
/// grid: x over the inner dim's tiles, y over the outer dim's, z (looping)
/// over the batch.
template <typename T>
__global__ void transposeTileKernel(const T *src, T *dst, Indexer32 ix,
                                    uint32_t batch) {
  __shared__ T tile[32][33];
  const int r = ix.rank;
  const uint32_t rows = ix.dims[r - 2], cols = ix.dims[r - 1];
  const int32_t colStride = ix.strides[r - 1][0]; // rows' stride is 1
  const uint32_t c0 = blockIdx.x * 32, r0 = blockIdx.y * 32;
  for (uint32_t b = blockIdx.z; b < batch; b += gridDim.z) {
    // The batch dims' offset: b over dims [0, r-2).
    uint32_t rest = b, base = 0;
    for (int d = r - 3; d >= 0; --d) {
      const uint32_t q = divide(rest, ix.magic[d], ix.shift[d]);
      base += (rest - q * ix.dims[d]) * static_cast<uint32_t>(ix.strides[d][0]);
      rest = q;
    }
    // Read: consecutive threads take consecutive rows (stride 1 in src).
    for (uint32_t j = threadIdx.y; j < 32; j += blockDim.y) {
      const uint32_t c = c0 + j, rr = r0 + threadIdx.x;
      if (c < cols && rr < rows)
        tile[j][threadIdx.x] =
            src[base + rr + static_cast<int64_t>(c) * colStride];
    }
    __syncthreads();
    // Write: consecutive threads take consecutive columns of the result.
    const uint64_t out = static_cast<uint64_t>(b) * rows * cols;
    for (uint32_t j = threadIdx.y; j < 32; j += blockDim.y) {
      const uint32_t rr = r0 + j, c = c0 + threadIdx.x;
      if (c < cols && rr < rows)
        dst[out + static_cast<uint64_t>(rr) * cols + c] = tile[threadIdx.x][j];
    }
    __syncthreads();
  }
}

template <typename I>
__global__ void gatherCheckKernel(const I *idx, int64_t n, int64_t dim,
                                  unsigned long long *slot) {
  TSL_GRID_LOOP(j, n) {
    const int64_t v = static_cast<int64_t>(idx[j]);
    if (v < -dim || v >= dim)
      atomicMin(slot, static_cast<unsigned long long>(j));
  }
}

template <typename I>
__global__ void gatherRecordKernel(const I *idx, unsigned long long *slot) {
  if (slot[0] != ~0ull)
    slot[1] = static_cast<unsigned long long>(
        static_cast<int64_t>(idx[slot[0]]));
}

template <typename T, typename I>
__global__ void gatherKernel(const T *data, const I *idx, int64_t numIdx,
                             int64_t outer, int64_t dim, int64_t inner,
                             T *out) {
  const int64_t total = outer * numIdx * inner;
  TSL_GRID_LOOP(e, total) {
    const int64_t k = e % inner;
    const int64_t j = (e / inner) % numIdx;
    const int64_t o = e / (inner * numIdx);
    int64_t v = static_cast<int64_t>(idx[j]);
    if (v < 0)
      v += dim;
    out[e] = (v >= 0 && v < dim) ? data[(o * dim + v) * inner + k] : T(0);
  }
}

/// GatherElements: `ix` iterates the indices (= the result) with data's
/// strides of every dim but the axis (0 there) as operand 0.
template <typename T, typename I>
__global__ void gatherElementsKernel(const T *data, const I *idx, Indexer ix,
                                     int64_t dim, int64_t axisStride, T *out) {
  TSL_GRID_LOOP(i, ix.total) {
    int64_t v = static_cast<int64_t>(idx[i]);
    if (v < 0)
      v += dim;
    out[i] = (v >= 0 && v < dim) ? data[offset0(ix, i) + v * axisStride] : T(0);
  }
}

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

template <typename T>
cudaError_t gatherTyped(const T *data, DType indexType, const void *indices,
                        int64_t numIdx, int64_t outer, int64_t dim,
                        int64_t inner, T *out, cudaStream_t s) {
  const int64_t total = outer * numIdx * inner;
  if (indexType == DType::I64)
    return launchOver(total, s, gatherKernel<T, int64_t>, data,
                      static_cast<const int64_t *>(indices), numIdx, outer, dim,
                      inner, out);
  return launchOver(total, s, gatherKernel<T, int32_t>, data,
                    static_cast<const int32_t *>(indices), numIdx, outer, dim,
                    inner, out);
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

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

//===----------------------------------------------------------------------===//
// Softmax and normalisation
//===----------------------------------------------------------------------===//

/// Softmax over contiguous rows, one block per row. y may be x: every read
/// of a row's reductions happens before the barrier of blockReduce, and the
/// final pass reads and writes the same element in the same thread.
__global__ void softmaxRowsKernel(bool logSoftmax, const float *x, float *y,
                                  int64_t rows, int64_t len) {
  __shared__ float shm[32];
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const float *px = x + row * len;
    float *py = y + row * len;
    float m = -INFINITY;
    for (int64_t i = threadIdx.x; i < len; i += blockDim.x)
      m = px[i] > m ? px[i] : m;
    m = blockReduce(m, -INFINITY, MaxF(), shm);
    float sum = 0.0f;
    for (int64_t i = threadIdx.x; i < len; i += blockDim.x)
      sum += expf(px[i] - m);
    sum = blockReduce(sum, 0.0f, SumF(), shm);
    if (logSoftmax) {
      const float shift = m + logf(sum);
      for (int64_t i = threadIdx.x; i < len; i += blockDim.x)
        py[i] = px[i] - shift;
    } else {
      const float inv = 1.0f / sum;
      for (int64_t i = threadIdx.x; i < len; i += blockDim.x)
        py[i] = expf(px[i] - m) * inv;
    }
  }
}

/// Softmax along the middle dim of [outer, len, inner], one thread per
/// (outer, inner) column.
__global__ void softmaxColumnsKernel(bool logSoftmax, const float *x, float *y,
                                     int64_t outer, int64_t len,
                                     int64_t inner) {
  TSL_GRID_LOOP(col, outer * inner) {
    const int64_t o = col / inner, i = col - o * inner;
    const float *px = x + o * len * inner + i;
    float *py = y + o * len * inner + i;
    float m = -INFINITY;
    for (int64_t l = 0; l < len; ++l)
      m = px[l * inner] > m ? px[l * inner] : m;
    float sum = 0.0f;
    for (int64_t l = 0; l < len; ++l)
      sum += expf(px[l * inner] - m);
    if (logSoftmax) {
      const float shift = m + logf(sum);
      for (int64_t l = 0; l < len; ++l)
        py[l * inner] = px[l * inner] - shift;
    } else {
      const float inv = 1.0f / sum;
      for (int64_t l = 0; l < len; ++l)
        py[l * inner] = expf(px[l * inner] - m) * inv;
    }
  }
}

/// layer_norm / rms_norm over rows of d elements, one block per row (two
/// passes: mean, then variance, as the CPU kernel).
__global__ void layerNormKernel(bool rms, const float *x, int64_t rows,
                                int64_t d, float epsilon, const float *scale,
                                const float *bias, float *y) {
  __shared__ float shm[32];
  const float invD = 1.0f / static_cast<float>(d);
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const float *px = x + row * d;
    float *py = y + row * d;
    if (rms) {
      float ss = 0.0f;
      for (int64_t i = threadIdx.x; i < d; i += blockDim.x)
        ss += px[i] * px[i];
      ss = blockReduce(ss, 0.0f, SumF(), shm);
      const float inv = 1.0f / sqrtf(ss * invD + epsilon);
      for (int64_t i = threadIdx.x; i < d; i += blockDim.x)
        py[i] = px[i] * inv * scale[i];
      continue;
    }
    float sum = 0.0f;
    for (int64_t i = threadIdx.x; i < d; i += blockDim.x)
      sum += px[i];
    const float mean = blockReduce(sum, 0.0f, SumF(), shm) * invD;
    float var = 0.0f;
    for (int64_t i = threadIdx.x; i < d; i += blockDim.x) {
      const float c = px[i] - mean;
      var += c * c;
    }
    var = blockReduce(var, 0.0f, SumF(), shm);
    const float inv = 1.0f / sqrtf(var * invD + epsilon);
    for (int64_t i = threadIdx.x; i < d; i += blockDim.x) {
      const float v = (px[i] - mean) * inv * scale[i];
      py[i] = bias ? v + bias[i] : v;
    }
  }
}

__global__ void batchNormKernel(const float *x, int64_t c, int64_t spatial,
                                int64_t total, const float *scale,
                                const float *bias, const float *mean,
                                const float *var, float epsilon, float *y) {
  TSL_GRID_LOOP(e, total) {
    const int64_t ch = (e / spatial) % c;
    const float a = scale[ch] / sqrtf(var[ch] + epsilon);
    const float sh = bias[ch] - mean[ch] * a;
    y[e] = x[e] * a + sh;
  }
}

//===----------------------------------------------------------------------===//
// Convolution helpers and pooling
//===----------------------------------------------------------------------===//

template <typename T>
__global__ void im2colKernel(const T *x, Conv2DGeom g, T *col) {
  const int64_t spatial = g.oh * g.ow;
  const int64_t total = g.channels * g.kh * g.kw * spatial;
  TSL_GRID_LOOP(e, total) {
    const int64_t row = e / spatial, pos = e - row * spatial;
    const int64_t ci = row / (g.kh * g.kw), i = (row / g.kw) % g.kh,
                  j = row % g.kw;
    const int64_t r = pos / g.ow, s = pos - r * g.ow;
    const int64_t ih = r * g.sh - g.pt + i * g.dh;
    const int64_t iw = s * g.sw - g.pl + j * g.dw;
    col[e] = (ih >= 0 && ih < g.h && iw >= 0 && iw < g.w)
                 ? x[(ci * g.h + ih) * g.w + iw]
                 : T(0); // +0 in f32 and in bf16's bits
  }
}

__global__ void toBf16Kernel(const float *src, uint16_t *dst, int64_t n) {
  TSL_GRID_LOOP(i, n) {
    uint16_t h;
    scalar::roundBf16Bits(__float_as_uint(src[i]), &h);
    dst[i] = h;
  }
}

/// toBf16Kernel four values at a time: a 16-byte load, an 8-byte store.
__global__ void toBf16x4Kernel(const float4 *src, uint2 *dst, int64_t n4) {
  TSL_GRID_LOOP(i, n4) {
    const float4 v = src[i];
    uint16_t h0, h1, h2, h3;
    scalar::roundBf16Bits(__float_as_uint(v.x), &h0);
    scalar::roundBf16Bits(__float_as_uint(v.y), &h1);
    scalar::roundBf16Bits(__float_as_uint(v.z), &h2);
    scalar::roundBf16Bits(__float_as_uint(v.w), &h3);
    dst[i] = make_uint2(uint32_t(h0) | uint32_t(h1) << 16,
                        uint32_t(h2) | uint32_t(h3) << 16);
  }
}

__global__ void addBiasKernel(float *y, const float *bias, int64_t o,
                              int64_t spatial, int64_t total) {
  TSL_GRID_LOOP(e, total) { y[e] += bias[(e / spatial) % o]; }
}

/// max_pool (IsMax) or avg_pool, one result element per thread (windowAt:
/// WindowMath.h).
template <bool IsMax>
__global__ void poolKernel(const float *x, float *y, PoolGeom g) {
  const int64_t total = g.planes * g.oh * g.ow;
  TSL_GRID_LOOP(e, total) {
    const int64_t s = e % g.ow, r = (e / g.ow) % g.oh, p = e / (g.ow * g.oh);
    const Window win = windowAt(g, r, s);
    const float *px = x + p * g.h * g.w;
    float acc = IsMax ? -INFINITY : 0.0f;
    for (int64_t i = win.h0; i < win.h1; ++i)
      for (int64_t j = win.w0; j < win.w1; ++j) {
        const float v = px[i * g.w + j];
        if constexpr (IsMax)
          acc = acc < v ? v : acc; // std::max(acc, v)
        else
          acc += v;
      }
    if constexpr (IsMax) {
      y[e] = acc;
    } else {
      const int64_t count = g.countIncludePad
                                ? win.padded
                                : (win.h1 - win.h0) * (win.w1 - win.w0);
      y[e] = count > 0 ? acc / static_cast<float>(count) : 0.0f;
    }
  }
}

__global__ void globalAvgPoolKernel(const float *x, float *y, int64_t planes,
                                    int64_t spatial) {
  __shared__ float shm[32];
  for (int64_t p = blockIdx.x; p < planes; p += gridDim.x) {
    const float *px = x + p * spatial;
    float sum = 0.0f;
    for (int64_t i = threadIdx.x; i < spatial; i += blockDim.x)
      sum += px[i];
    sum = blockReduce(sum, 0.0f, SumF(), shm);
    if (threadIdx.x == 0)
      y[p] = spatial ? sum / static_cast<float>(spatial) : 0.0f;
  }
}

// Optimizer updates ------------------------------------------------------
// The CPU kernels' formulas (cpu/Training.cpp adamRange, sgdRange), each
// operation rounded once as there (no fused multiply-add), so both backends
// give the same bits. Results may alias operands (in place): each thread
// reads its element before it writes it. The parameter and its state may be
// pinned host memory (Gemini's host chunks), read through its mapping.

__global__ void adamUpdateKernel(const float *p, const float *g,
                                 const float *m, const float *v,
                                 const float *stepSize, const float *sqrtBc2,
                                 const float *decay, float *p1, float *m1,
                                 float *v1, int64_t n, AdamParams k) {
  const float step = *stepSize, bc2 = *sqrtBc2, dec = *decay;
  TSL_GRID_LOOP(i, n) {
    const float pi = p[i];
    float gi = g[i];
    if (k.weightDecay != 0.0f)
      gi = __fadd_rn(gi, __fmul_rn(pi, k.weightDecay));
    const float mi = __fadd_rn(__fmul_rn(m[i], k.beta1), __fmul_rn(gi, k.omb1));
    const float vi = __fadd_rn(__fmul_rn(v[i], k.beta2),
                               __fmul_rn(__fmul_rn(gi, gi), k.omb2));
    const float denom = __fadd_rn(__fdiv_rn(__fsqrt_rn(vi), bc2), k.eps);
    p1[i] = __fsub_rn(__fmul_rn(pi, dec), __fmul_rn(__fdiv_rn(mi, denom), step));
    m1[i] = mi;
    v1[i] = vi;
  }
}

__global__ void sgdUpdateKernel(const float *p, const float *g,
                                const float *buf, const float *lr, float *p1,
                                float *buf1, int64_t n, SgdParams k) {
  const float rate = *lr;
  TSL_GRID_LOOP(i, n) {
    const float pi = p[i];
    float di = g[i];
    if (k.weightDecay != 0.0f)
      di = __fadd_rn(di, __fmul_rn(pi, k.weightDecay));
    const float bi = __fadd_rn(__fmul_rn(buf[i], k.momentum), di);
    const float d = k.nesterov ? __fadd_rn(di, __fmul_rn(bi, k.momentum)) : bi;
    p1[i] = __fsub_rn(pi, __fmul_rn(d, rate));
    buf1[i] = bi;
  }
}

} // namespace

//===----------------------------------------------------------------------===//
// Launchers
//===----------------------------------------------------------------------===//

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
  return visitDType(from, [&](auto tag) {
    using T = typename decltype(tag)::type;
    return castFrom(static_cast<const T *>(x), to, y, n, s);
  });
}

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

cudaError_t launchStridedCopy(size_t elemSize, const void *src, void *dst,
                              const StridedIndex &ix, cudaStream_t s) {
  return visitElementSize(elemSize, cudaErrorInvalidValue, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T *from = static_cast<const T *>(src);
    T *to = static_cast<T *>(dst);
    if (!ix.fits32)
      return launchOver(ix.wide.total, s, stridedCopyKernel<T, Indexer>, from,
                        to, ix.wide);
    const Indexer32 &n = ix.narrow;
    // A transpose of the last two dims into a contiguous result: tiles
    // (narrowed dims are at least 1, so the batch is too).
    const int r = n.rank;
    if (n.numOperands == 1 && r >= 2 && n.strides[r - 2][0] == 1 &&
        n.strides[r - 1][0] != 1 && n.dims[r - 1] >= 8 && n.dims[r - 2] >= 8) {
      uint32_t batch = 1;
      for (int d = 0; d < r - 2; ++d)
        batch *= n.dims[d];
      const dim3 grid((n.dims[r - 1] + 31) / 32, (n.dims[r - 2] + 31) / 32,
                      batch < 65535 ? batch : 65535);
      if (grid.y <= 65535) {
        transposeTileKernel<T><<<grid, dim3(32, 8), 0, s>>>(from, to, n, batch);
        return cudaGetLastError();
      }
    }
    return launchOver(n.total, s, stridedCopyKernel<T, Indexer32>, from, to, n);
  });
}

cudaError_t launchGatherCheck(DType indexType, const void *indices,
                              int64_t numIndices, int64_t dim,
                              unsigned long long *slot, cudaStream_t s) {
  if (numIndices == 0)
    return cudaGetLastError();
  const unsigned g = gridFor(numIndices);
  if (indexType == DType::I64) {
    const auto *idx = static_cast<const int64_t *>(indices);
    gatherCheckKernel<<<g, kThreads, 0, s>>>(idx, numIndices, dim, slot);
    gatherRecordKernel<<<1, 1, 0, s>>>(idx, slot);
  } else {
    const auto *idx = static_cast<const int32_t *>(indices);
    gatherCheckKernel<<<g, kThreads, 0, s>>>(idx, numIndices, dim, slot);
    gatherRecordKernel<<<1, 1, 0, s>>>(idx, slot);
  }
  return cudaGetLastError();
}

cudaError_t launchGather(size_t elemSize, const void *data, DType indexType,
                         const void *indices, int64_t numIndices,
                         int64_t outer, int64_t dim, int64_t inner, void *out,
                         cudaStream_t s) {
  return visitElementSize(elemSize, cudaErrorInvalidValue, [&](auto tag) {
    using T = typename decltype(tag)::type;
    return gatherTyped(static_cast<const T *>(data), indexType, indices,
                       numIndices, outer, dim, inner, static_cast<T *>(out), s);
  });
}

cudaError_t launchGatherElements(size_t elemSize, const void *data,
                                 DType indexType, const void *indices,
                                 const Indexer &ix, int64_t dim,
                                 int64_t axisStride, void *out,
                                 cudaStream_t s) {
  return visitElementSize(elemSize, cudaErrorInvalidValue, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T *d = static_cast<const T *>(data);
    T *o = static_cast<T *>(out);
    if (indexType == DType::I64)
      return launchOver(ix.total, s, gatherElementsKernel<T, int64_t>, d,
                        static_cast<const int64_t *>(indices), ix, dim,
                        axisStride, o);
    return launchOver(ix.total, s, gatherElementsKernel<T, int32_t>, d,
                      static_cast<const int32_t *>(indices), ix, dim,
                      axisStride, o);
  });
}

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

cudaError_t launchSoftmax(bool logSoftmax, const float *x, float *y,
                          int64_t outer, int64_t len, int64_t inner,
                          cudaStream_t s) {
  if (outer * len * inner == 0)
    return cudaGetLastError();
  if (inner == 1)
    softmaxRowsKernel<<<gridRows(outer), kThreads, 0, s>>>(logSoftmax, x, y,
                                                           outer, len);
  else
    softmaxColumnsKernel<<<gridFor(outer * inner), kThreads, 0, s>>>(
        logSoftmax, x, y, outer, len, inner);
  return cudaGetLastError();
}

cudaError_t launchLayerNorm(bool rms, const float *x, int64_t rows, int64_t d,
                            float epsilon, const float *scale,
                            const float *bias, float *y, cudaStream_t s) {
  if (rows * d == 0)
    return cudaGetLastError();
  layerNormKernel<<<gridRows(rows), kThreads, 0, s>>>(rms, x, rows, d, epsilon,
                                                      scale, bias, y);
  return cudaGetLastError();
}

cudaError_t launchBatchNorm(const float *x, int64_t n, int64_t c,
                            int64_t spatial, const float *scale,
                            const float *bias, const float *mean,
                            const float *var, float epsilon, float *y,
                            cudaStream_t s) {
  const int64_t total = n * c * spatial;
  return launchOver(total, s, batchNormKernel, x, c, spatial, total, scale,
                    bias, mean, var, epsilon, y);
}

cudaError_t launchIm2Col(const float *x, const Conv2DGeom &g, float *col,
                         cudaStream_t s) {
  return launchOver(g.channels * g.kh * g.kw * g.oh * g.ow, s,
                    im2colKernel<float>, x, g, col);
}

cudaError_t launchIm2ColBf16(const uint16_t *x, const Conv2DGeom &g,
                             uint16_t *col, cudaStream_t s) {
  return launchOver(g.channels * g.kh * g.kw * g.oh * g.ow, s,
                    im2colKernel<uint16_t>, x, g, col);
}

cudaError_t launchToBf16(const float *src, uint16_t *dst, int64_t n,
                         cudaStream_t s) {
  if (n % 4 == 0 && reinterpret_cast<uintptr_t>(src) % 16 == 0 &&
      reinterpret_cast<uintptr_t>(dst) % 8 == 0)
    return launchOver(n / 4, s, toBf16x4Kernel,
                      reinterpret_cast<const float4 *>(src),
                      reinterpret_cast<uint2 *>(dst), n / 4);
  return launchOver(n, s, toBf16Kernel, src, dst, n);
}

cudaError_t launchAddBias(float *y, const float *bias, int64_t n, int64_t o,
                          int64_t spatial, cudaStream_t s) {
  const int64_t total = n * o * spatial;
  return launchOver(total, s, addBiasKernel, y, bias, o, spatial, total);
}

cudaError_t launchMaxPool(const float *x, float *y, const PoolGeom &g,
                          cudaStream_t s) {
  return launchOver(g.planes * g.oh * g.ow, s, poolKernel<true>, x, y, g);
}

cudaError_t launchAvgPool(const float *x, float *y, const PoolGeom &g,
                          cudaStream_t s) {
  return launchOver(g.planes * g.oh * g.ow, s, poolKernel<false>, x, y, g);
}

cudaError_t launchGlobalAvgPool(const float *x, float *y, int64_t planes,
                                int64_t spatial, cudaStream_t s) {
  if (planes == 0)
    return cudaGetLastError();
  globalAvgPoolKernel<<<gridRows(planes), kThreads, 0, s>>>(x, y, planes,
                                                            spatial);
  return cudaGetLastError();
}

cudaError_t launchAdamUpdate(const AdamBuffers &b, const AdamParams &k,
                             cudaStream_t s) {
  return launchOver(b.n, s, adamUpdateKernel, b.p, b.g, b.m, b.v, b.stepSize,
                    b.sqrtBc2, b.decay, b.p1, b.m1, b.v1, b.n, k);
}

cudaError_t launchSgdUpdate(const SgdBuffers &b, const SgdParams &k,
                            cudaStream_t s) {
  return launchOver(b.n, s, sgdUpdateKernel, b.p, b.g, b.buf, b.lr, b.p1,
                    b.buf1, b.n, k);
}

} // namespace tessel::runtime::cuda
