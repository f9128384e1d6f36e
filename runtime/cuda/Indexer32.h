//===- Indexer32.h - Strided index plans in 32 bits -------------*- C++ -*-===//
//
// The strided CUDA kernels (binary ops, compare, where, copies,
// reductions) take an Indexer: a result's merged dims and each operand's
// strides. Where a plan's total and every operand's largest offset are
// below 2^31, narrow() gives the same plan in 32-bit arithmetic, with each
// dim's division precomputed as a multiply-high and a shift
// (FastDivide.h); a 64-bit division costs several times a 32-bit one and
// the kernels divide once per dim per element. Host code, run once per step
// when it is built (IndexPlan.cpp), and by the CPU tests of these
// decisions; the structs are CudaKernels.h's.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_RUNTIME_CUDA_INDEXER32_H
#define TESSEL_RUNTIME_CUDA_INDEXER32_H

#include "CudaKernels.h"
#include "FastDivide.h"

#include <cstdint>

namespace tessel::runtime::cuda {

/// ix in 32 bits into `out`, when its rank is in [1, kMaxDims], its dims
/// positive, its total and every operand's largest offset below 2^31, and
/// no stride negative; false otherwise (the caller keeps the 64-bit plan).
inline bool narrow(const Indexer &ix, Indexer32 &out) {
  constexpr int64_t kLimit = int64_t(1) << 31;
  if (ix.total < 0 || ix.total >= kLimit || ix.rank < 1 || ix.rank > kMaxDims ||
      ix.numOperands < 0 || ix.numOperands > kMaxOperands)
    return false;
  for (int d = 0; d < ix.rank; ++d)
    if (ix.dims[d] < 1 || ix.dims[d] >= kLimit)
      return false;
  for (int k = 0; k < kMaxOperands; ++k) {
    int64_t last = 0;
    for (int d = 0; d < ix.rank; ++d) {
      if (ix.strides[d][k] < 0 || ix.strides[d][k] >= kLimit)
        return false;
      // Both factors are below 2^31: no overflow, and `last` stays below
      // 2^31 + 2^62 before the check.
      last += (ix.dims[d] - 1) * ix.strides[d][k];
      if (last >= kLimit)
        return false;
    }
  }
  out = Indexer32();
  out.rank = ix.rank;
  out.numOperands = ix.numOperands;
  out.total = static_cast<uint32_t>(ix.total);
  for (int d = 0; d < ix.rank; ++d) {
    out.dims[d] = static_cast<uint32_t>(ix.dims[d]);
    setDivisor(out.dims[d], out.magic[d], out.shift[d]);
    for (int k = 0; k < kMaxOperands; ++k)
      out.strides[d][k] = static_cast<int32_t>(ix.strides[d][k]);
  }
  return true;
}

/// Whether ix's innermost dim suits the four-per-thread kernels: a multiple
/// of 4 long, read with stride 0 or 1 by every operand.
inline bool fourWide(const Indexer32 &ix) {
  if (ix.rank < 1)
    return false;
  const int last = ix.rank - 1;
  if (ix.dims[last] % 4 != 0)
    return false;
  for (int k = 0; k < ix.numOperands; ++k)
    if (ix.strides[last][k] != 0 && ix.strides[last][k] != 1)
      return false;
  return true;
}

} // namespace tessel::runtime::cuda

#endif // TESSEL_RUNTIME_CUDA_INDEXER32_H
