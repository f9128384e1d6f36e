//===- KernelRegistry.h - The CPU backend's kernels, by op kind -*- C++ -*-===//
//
// One op, one place: each kernel file registers the kinds it implements
// (registerElementwiseKernels in Elementwise.cpp, ...) with a factory that
// builds the step of one instruction. The executor looks every instruction's
// factory up once, when it is created (a kind without one fails the load),
// and run() calls the steps: one std::function call per instruction, no
// lookup. Registration is explicit, from cpuKernels(): the runtime is a
// static library, whose unreferenced static initializers the linker drops.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_RUNTIME_CPU_KERNELREGISTRY_H
#define TESSEL_RUNTIME_CPU_KERNELREGISTRY_H

#include "tessel/runtime/KernelTable.h"
#include "tessel/runtime/OpKind.h"
#include "tessel/runtime/Program.h"
#include "tessel/runtime/Status.h"

#include <cstddef>
#include <functional>
#include <vector>

namespace tessel::runtime::cpu {

class ThreadPool;
struct KernelResources;

/// One instruction's work at run time.
using Step = std::function<Status()>;

/// What a factory builds one instruction's step from. Everything is resolved:
/// the step should capture pointers and precomputed values, not the context.
struct KernelContext {
  const Program &program;
  const Op &op;
  size_t index; // op == program.ops[index]
  /// Every buffer's address, by id (an operand the executor keeps in another
  /// layout reads its NCHW copy here).
  const std::vector<void *> &ptrs;
  ThreadPool &pool;
  /// The executor's oneDNN kernels, layouts, scratch and communicators,
  /// prepared before any step is built (KernelResources.h).
  KernelResources &resources;

  const BufferInfo &in(size_t i) const {
    return program.buffers[op.operands[i]];
  }
  const BufferInfo &out(size_t i) const {
    return program.buffers[op.results[i]];
  }
  void *operand(size_t i) const { return ptrs[op.operands[i]]; }
  void *result(size_t i) const { return ptrs[op.results[i]]; }
};

/// Builds the step of ctx.op, reading its attributes now, once.
using KernelFactory = Step (*)(const KernelContext &ctx);

/// Op kind -> kernel factory (tessel/runtime/KernelTable.h).
using KernelRegistry = KernelTable<KernelFactory>;

/// The CPU backend's registry, filled by the register functions below on
/// first use.
KernelRegistry &cpuKernels();

// One per kernel file, each registering the kinds that file implements.
void registerElementwiseKernels(KernelRegistry &registry); // Elementwise.cpp
void registerBinaryKernels(KernelRegistry &registry);      // Binary.cpp
void registerMatMulKernels(KernelRegistry &registry);      // MatMul.cpp
void registerReduceKernels(KernelRegistry &registry);      // Reduce.cpp
void registerNormalizationKernels(
    KernelRegistry &registry);                              // Normalization.cpp
void registerDataMovementKernels(KernelRegistry &registry); // DataMovement.cpp
void registerConvKernels(KernelRegistry &registry);         // Conv.cpp
void registerPoolKernels(KernelRegistry &registry);         // Pool.cpp
void registerCollectiveKernels(KernelRegistry &registry);   // Collectives.cpp

} // namespace tessel::runtime::cpu

#endif // TESSEL_RUNTIME_CPU_KERNELREGISTRY_H
