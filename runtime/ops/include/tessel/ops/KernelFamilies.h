//===- KernelFamilies.h - The kernel families of every backend --*- C++ -*-===//
//
// The CPU (KernelRegistry.h) and CUDA (CudaKernelRegistry.h) backends split
// their kernels into the same families, one file and one register function
// (registerElementwiseKernels, ...) each, in their own namespaces. Both
// registries are filled here, from one list.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_OPS_KERNELFAMILIES_H
#define TESSEL_OPS_KERNELFAMILIES_H

#include "tessel/ops/KernelTable.h"
#include "tessel/runtime/Program.h"

#include <initializer_list>
#include <utility>

/// X(Family) for each family: Family.cpp defines register<Family>Kernels.
#define TESSEL_KERNEL_FAMILIES(X)                                              \
  X(Elementwise)                                                               \
  X(Binary)                                                                    \
  X(MatMul)                                                                    \
  X(Reduce)                                                                    \
  X(Normalization)                                                             \
  X(DataMovement)                                                              \
  X(Conv)                                                                      \
  X(Pool)                                                                      \
  X(Collective)                                                                \
  X(Training)                                                                  \
  X(Attention)                                                                 \
  X(Fused)                                                                     \
  X(Custom)

namespace tessel::runtime {

/// The instruction a factory builds a step for, as both backends'
/// KernelContext (which adds their own resources) see it.
struct InstructionRef {
  const Program &program;
  const Op &op;
  size_t index; // op == program.ops[index]
  /// Every buffer's address, by id (host or device memory; on the CPU an
  /// operand the executor keeps in another layout reads its NCHW copy here).
  const std::vector<void *> &ptrs;

  const BufferInfo &in(size_t i) const {
    return program.buffers[op.operands[i]];
  }
  const BufferInfo &out(size_t i) const {
    return program.buffers[op.results[i]];
  }
  void *operand(size_t i) const { return ptrs[op.operands[i]]; }
  void *result(size_t i) const { return ptrs[op.results[i]]; }
};

/// Declares `void registerFamilyKernels(Registry &registry);` of each
/// family, in the namespace where it is used.
#define TESSEL_DECLARE_KERNEL_FAMILY(F)                                        \
  void register##F##Kernels(KernelRegistry &registry);

/// A registry of backend `name`, every family registered once. The
/// register functions are found by argument-dependent lookup, in the
/// namespace of the backend's KernelContext (the factory type's argument).
template <typename Registry> Registry makeKernelRegistry(const char *name) {
  Registry r(name);
#define TESSEL_X(F) register##F##Kernels(r);
  TESSEL_KERNEL_FAMILIES(TESSEL_X)
#undef TESSEL_X
  return r;
}

/// Registers each (kind, factory) of `kernels`.
template <typename F>
void addKernels(KernelTable<F> &table,
                std::initializer_list<std::pair<OpKind, F>> kernels) {
  for (const auto &[kind, factory] : kernels)
    table.add(kind, factory);
}

/// Registers `factory` for each of `kinds`.
template <typename F>
void addKernels(KernelTable<F> &table, std::initializer_list<OpKind> kinds,
                F factory) {
  for (OpKind kind : kinds)
    table.add(kind, factory);
}

} // namespace tessel::runtime

#endif // TESSEL_OPS_KERNELFAMILIES_H
