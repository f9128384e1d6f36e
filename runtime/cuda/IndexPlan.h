//===- IndexPlan.h - Indexers from shapes and strides -----------*- C++ -*-===//
//
// Builds the kernels' Indexer (CudaKernels.h), and its 32-bit form where it
// fits (Indexer32.h), from the CPU backend's merged StridedPlan
// (tessel/ops/Broadcast.h), at step creation.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_RUNTIME_CUDA_INDEXPLAN_H
#define TESSEL_RUNTIME_CUDA_INDEXPLAN_H

#include "tessel/ops/Broadcast.h"
#include "CudaKernels.h"
#include "tessel/runtime/DType.h"
#include "tessel/runtime/Status.h"

#include <cstdint>
#include <vector>

namespace tessel::runtime::cuda {

std::vector<int64_t> rowMajorStrides(const Shape &s);

/// Converts a CPU StridedPlan into the kernels' Indexer; fails beyond
/// kMaxDims merged dims or kMaxOperands operands.
/// The plan's Indexer, and its 32-bit form where it fits (narrow()).
Status toIndexer(const StridedPlan &plan, StridedIndex &ix);

/// The Indexer over `dims` with one stride list per operand.
Status stridedIndexer(const Shape &dims,
                      const std::vector<std::vector<int64_t>> &strides,
                      StridedIndex &ix);

} // namespace tessel::runtime::cuda

#endif // TESSEL_RUNTIME_CUDA_INDEXPLAN_H
