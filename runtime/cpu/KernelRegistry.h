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

#include "tessel/ops/KernelFamilies.h"
#include "tessel/ops/KernelTable.h"
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
struct KernelContext : InstructionRef {
  ThreadPool &pool;
  /// The executor's oneDNN kernels, layouts, scratch and communicators,
  /// prepared before any step is built (KernelResources.h).
  KernelResources &resources;
};

/// What most steps read when they run, captured when they are built: the
/// op, operands 0 and 1 (null without one) and result 0 (their buffers and
/// addresses), the pool.
struct StepArgs {
  const Op *o;
  const BufferInfo *a, *b, *r;
  void *x0, *x1, *y0;
  ThreadPool *tp;
};

/// The step that runs kernel(args) (which returns nothing) for c's
/// instruction.
template <typename Kernel>
Step kernelStep(const KernelContext &c, Kernel kernel) {
  const bool two = c.op.operands.size() > 1;
  const StepArgs s{&c.op,       &c.in(0),     two ? &c.in(1) : nullptr,
                   &c.out(0),   c.operand(0), two ? c.operand(1) : nullptr,
                   c.result(0), &c.pool};
  return [=] {
    kernel(s);
    return Status::ok();
  };
}

/// Builds the step of ctx.op, reading its attributes now, once.
using KernelFactory = Step (*)(const KernelContext &ctx);

/// Op kind -> kernel factory (tessel/ops/KernelTable.h).
using KernelRegistry = KernelTable<KernelFactory>;

/// The CPU backend's registry, filled by the register functions below on
/// first use.
KernelRegistry &cpuKernels();

// One per kernel file (registerElementwiseKernels in Elementwise.cpp, ...;
// KernelFamilies.h), each registering the kinds that file implements.
TESSEL_KERNEL_FAMILIES(TESSEL_DECLARE_KERNEL_FAMILY)

} // namespace tessel::runtime::cpu

#endif // TESSEL_RUNTIME_CPU_KERNELREGISTRY_H
