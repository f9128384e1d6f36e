//===- KernelRegistry.cpp - The CPU backend's kernels, by op kind ---------===//
#include "KernelRegistry.h"

namespace tessel::runtime::cpu {

KernelRegistry &cpuKernels() {
  static KernelRegistry registry = [] {
    KernelRegistry r("cpu");
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

} // namespace tessel::runtime::cpu
