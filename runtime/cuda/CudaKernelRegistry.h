//===- CudaKernelRegistry.h - CUDA kernels, by op kind -------*- C++ -*-===//
//
// One op, one place: each kernel family (Elementwise.cpp, Binary.cpp, ...)
// registers the kinds it implements with a factory that builds the step of
// one instruction: a closure over device pointers and precomputed plans
// (Indexer, GEMM calls). The executor looks every instruction's factory up
// once, when it is created (a kind without one fails the load), and run()
// calls the steps: one std::function call per instruction, no lookup.
// Registration is explicit, from cudaKernels(), which calls every family's
// register function once.
//
// Which kinds each family registers is its array in CudaKernelKinds.h
// (registerFamily), known at compile time. Unary ops are registered from the
// op table's list of scalar functions (tessel/runtime/ScalarOps.h), so that
// such an op has no CUDA code of its own.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_RUNTIME_CUDA_CUDAKERNELREGISTRY_H
#define TESSEL_RUNTIME_CUDA_CUDAKERNELREGISTRY_H

#include "CudaKernelKinds.h"
#include "CudaStatus.h"
#include "DeviceResources.h"
#include "tessel/ops/KernelFamilies.h"
#include "tessel/ops/KernelTable.h"
#include "tessel/runtime/OpKind.h"
#include "tessel/runtime/Program.h"
#include "tessel/runtime/Status.h"

#include <cstddef>
#include <cstdint>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <functional>
#include <vector>

namespace tessel::runtime::cuda {

/// One instruction at run time: enqueues its kernels and cuBLAS calls on
/// the executor's stream.
using Step = std::function<Status()>;

/// What a factory builds one instruction's step from. The step captures
/// pointers, plans and LateAddresses by value, never the context.
struct KernelContext : InstructionRef {
  cudaStream_t stream;
  cublasHandle_t blas;
  /// Device memory allocated once the steps are built, gather checks and
  /// collectives (DeviceResources.h).
  DeviceResources &resources;
};

/// Builds the step of ctx.op, reading its attributes now, once. Fails where
/// the instruction exceeds what the kernels handle (e.g. cuBLAS's int range).
using KernelFactory = Status (*)(const KernelContext &ctx, Step &out);

/// The step that calls launch(stream), a launcher of CudaKernels.h, on the
/// executor's stream; a failed launch names the instruction's kind.
template <typename Launch>
Step launchStep(const KernelContext &ctx, Launch launch) {
  const char *name = opKindName(ctx.op.kind);
  cudaStream_t s = ctx.stream;
  return [=] { return launched(launch(s), name); };
}

/// The step of an f32 op from its operand x to its result y (pooling,
/// softmax): launch(x, y, stream), as launchStep.
template <typename Launch>
Step f32Step(const KernelContext &ctx, Launch launch) {
  const float *x = static_cast<const float *>(ctx.operand(0));
  float *y = static_cast<float *>(ctx.result(0));
  return launchStep(
      ctx, [=](cudaStream_t s) { return launch(x, y, s); });
}

/// y = x, `bytes` of device memory copied on `s` (nothing when in place):
/// reshape, copy and single-rank collectives.
Step deviceCopyStep(const void *x, void *y, size_t bytes, cudaStream_t s);

/// Op kind -> kernel factory (tessel/ops/KernelTable.h).
using KernelRegistry = KernelTable<KernelFactory>;

/// The CUDA backend's registry, filled by the register functions below on
/// first use.
const KernelRegistry &cudaKernels();

/// Registers factoryOf(k) for each kind k of a family's array
/// (CudaKernelKinds.h): the family's register function calls this once, so
/// the array is exactly what it registers.
template <size_t N, typename FactoryOf>
void registerFamily(KernelRegistry &registry, const OpKind (&kinds)[N],
                    FactoryOf factoryOf) {
  for (OpKind k : kinds)
    registry.add(k, factoryOf(k));
}

/// The step of a broadcasting binary op of the Binary family (Binary.cpp,
/// launchBinary); the Training family builds relu_grad's with it, as on the
/// CPU a Training op, on the device a case of the binary kernel.
Status makeBinaryStep(const KernelContext &ctx, Step &out);

// One per kernel family file (registerElementwiseKernels in Elementwise.cpp,
// ...; KernelFamilies.h), each registering the kinds that file builds.
TESSEL_KERNEL_FAMILIES(TESSEL_DECLARE_KERNEL_FAMILY)

} // namespace tessel::runtime::cuda

#endif // TESSEL_RUNTIME_CUDA_CUDAKERNELREGISTRY_H
