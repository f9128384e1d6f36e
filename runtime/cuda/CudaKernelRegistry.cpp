//===- CudaKernelRegistry.cpp - The CUDA backend's kernels, by op kind ----===//
#include "CudaKernelRegistry.h"

namespace tessel::runtime::cuda {

const KernelRegistry &cudaKernels() {
  static const KernelRegistry registry =
      makeKernelRegistry<KernelRegistry>("cuda");
  return registry;
}

} // namespace tessel::runtime::cuda
