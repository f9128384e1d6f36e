//===- FastDivide.h - Division by a fixed divisor as a multiply -*- C++ -*-===//
//
// The strided kernels' index math divides every element's flat index by
// each dim of its plan; a 32-bit division compiles to a few dozen
// instructions on the GPU, a multiply-high and a shift to two. The divisor
// is known when the plan is built, so its magic number is computed there
// (Granlund and Montgomery's round-up method, as PyTorch's IntDivider):
// for 1 <= d < 2^31, s = ceil(log2 d), m = floor(2^32 (2^s - d) / d) + 1,
// and i / d = (umulhi(i, m) + i) >> s for every i < 2^31 (the sum cannot
// overflow 32 bits there). Host and device: the CPU tests check it.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_RUNTIME_CUDA_FASTDIVIDE_H
#define TESSEL_RUNTIME_CUDA_FASTDIVIDE_H

#include <cstdint>

#if defined(__CUDACC__)
#define TESSEL_FD_HOST_DEVICE __host__ __device__
#else
#define TESSEL_FD_HOST_DEVICE
#endif

namespace tessel::runtime::cuda {

/// The magic number and shift of dividing by d, 1 <= d < 2^31.
inline void setDivisor(uint32_t d, uint32_t &magic, uint32_t &shift) {
  uint32_t s = 0;
  while (s < 31 && (uint32_t(1) << s) < d)
    ++s;
  shift = s;
  magic = static_cast<uint32_t>(
      ((uint64_t(1) << 32) * ((uint64_t(1) << s) - d)) / d + 1);
}

/// i / d for i < 2^31, from d's magic number and shift.
TESSEL_FD_HOST_DEVICE inline uint32_t divide(uint32_t i, uint32_t magic,
                                             uint32_t shift) {
#if defined(__CUDA_ARCH__)
  const uint32_t hi = __umulhi(i, magic);
#else
  const uint32_t hi = static_cast<uint32_t>((uint64_t(i) * magic) >> 32);
#endif
  return (hi + i) >> shift;
}

} // namespace tessel::runtime::cuda

#undef TESSEL_FD_HOST_DEVICE

#endif // TESSEL_RUNTIME_CUDA_FASTDIVIDE_H
