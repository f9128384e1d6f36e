//===- KernelRegistry.cpp - The CPU backend's kernels, by op kind ---------===//
#include "KernelRegistry.h"

namespace tessel::runtime::cpu {

KernelRegistry &cpuKernels() {
  static KernelRegistry registry = makeKernelRegistry<KernelRegistry>("cpu");
  return registry;
}

} // namespace tessel::runtime::cpu
