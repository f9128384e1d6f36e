//===- CudaKernelRegistry.cpp - The CUDA backend's kernels, by op kind ----===//
#include "CudaKernelRegistry.h"

namespace tessel::runtime::cuda {

const KernelRegistry &cudaKernels() {
  static const KernelRegistry registry = [] {
    KernelRegistry r("cuda");
    registerElementwiseKernels(r);
    registerBinaryKernels(r);
    registerMatMulKernels(r);
    registerReduceKernels(r);
    registerNormalizationKernels(r);
    registerDataMovementKernels(r);
    registerConvKernels(r);
    registerPoolKernels(r);
    registerCollectiveKernels(r);
    return r;
  }();
  return registry;
}

} // namespace tessel::runtime::cuda
