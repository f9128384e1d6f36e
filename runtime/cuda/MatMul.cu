//===- MatMul.cu - The bf16 GEMMs' operands on CUDA -----------------------===//
//
// The device code of the MatMul family: the GEMMs themselves are cuBLAS
// calls (MatMul.cpp, RowMajorGemm.h, Bf16Gemm.h); their bf16 operands are
// rounded from f32 here (launchToBf16, also used by Conv.cpp's bf16
// convolutions).
//
//===----------------------------------------------------------------------===//
#include "CudaKernels.h"
#include "DeviceUtil.cuh"
#include "tessel/runtime/ScalarOps.h"

#include <cstdint>

namespace tessel::runtime::cuda {

namespace {

using namespace device;

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

} // namespace

cudaError_t launchToBf16(const float *src, uint16_t *dst, int64_t n,
                         cudaStream_t s) {
  if (n % 4 == 0 && reinterpret_cast<uintptr_t>(src) % 16 == 0 &&
      reinterpret_cast<uintptr_t>(dst) % 8 == 0)
    return launchOver(n / 4, s, toBf16x4Kernel,
                      reinterpret_cast<const float4 *>(src),
                      reinterpret_cast<uint2 *>(dst), n / 4);
  return launchOver(n, s, toBf16Kernel, src, dst, n);
}

} // namespace tessel::runtime::cuda
