//===- CudaKernelCoverageTest.cpp - Every op kind has a CUDA kernel -------===//
//
// Generated from the op table: for every kind of TESSEL_RUNTIME_OP_KINDS
// (the runtime's instruction set, from the dialect's ODS) a static_assert
// that exactly one CUDA kernel family lists it (runtime/cuda/
// CudaKernelKinds.h). A new op kind without a CUDA kernel breaks the build
// of this test, with the kind's name in the message, rather than a user's
// run on a GPU. The tests below need no device: the registry the backend
// builds holds a factory for exactly the listed kinds, and every kind the
// CPU backend runs has a CUDA kernel.
//
//===----------------------------------------------------------------------===//
#include "CudaKernelKinds.h"
#include "CudaKernelRegistry.h"
#include "KernelRegistry.h" // cpu/

#include <gtest/gtest.h>

namespace tessel::runtime {
namespace {

#define TESSEL_X(E, N, V)                                                      \
  static_assert(cuda::cudaFamiliesOf(OpKind::E) != 0,                          \
                "op kind '" N "' has no CUDA kernel: list it in a family of "  \
                "runtime/cuda/CudaKernelKinds.h and register its factory");    \
  static_assert(cuda::cudaFamiliesOf(OpKind::E) < 2,                           \
                "op kind '" N "' is listed by two CUDA kernel families");
TESSEL_RUNTIME_OP_KINDS(TESSEL_X)
#undef TESSEL_X

TEST(CudaKernelCoverage, RegistryHoldsExactlyTheListedKinds) {
  const cuda::KernelRegistry &kernels = cuda::cudaKernels();
  for (size_t k = 0; k < cuda::KernelRegistry::kMaxKinds; ++k) {
    const std::optional<OpKind> kind = opKindFromInt(static_cast<int>(k));
    if (!kind) {
      EXPECT_EQ(kernels.find(static_cast<OpKind>(k)), nullptr)
          << "a factory for kind number " << k << ", which the op table lacks";
      continue;
    }
    cuda::KernelFactory f = nullptr;
    const Status s = kernels.lookup(*kind, f);
    if (cuda::cudaFamiliesOf(*kind) == 1)
      EXPECT_TRUE(s.isOk()) << s.message();
    else
      EXPECT_EQ(f, nullptr) << opKindName(*kind) << " is registered but "
                            << "listed by no family of CudaKernelKinds.h";
  }
}

TEST(CudaKernelCoverage, EveryKindWithACpuKernelHasACudaKernel) {
  const cpu::KernelRegistry &cpuKernels = cpu::cpuKernels();
  const cuda::KernelRegistry &cudaKernels = cuda::cudaKernels();
#define TESSEL_X(E, N, V)                                                      \
  if (cpuKernels.find(OpKind::E)) {                                            \
    EXPECT_NE(cudaKernels.find(OpKind::E), nullptr)                            \
        << "no cuda kernel for " N;                                            \
  }
  TESSEL_RUNTIME_OP_KINDS(TESSEL_X)
#undef TESSEL_X
}

} // namespace
} // namespace tessel::runtime
