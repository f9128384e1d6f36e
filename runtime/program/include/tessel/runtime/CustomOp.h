//===- CustomOp.h - custom_call instructions and their plugins --*- C++ -*-===//
//
// A `custom_call` instruction runs the kernel of the plugin op named by its
// `target` attribute (include/tessel/Extension/Op.h), looked up in the
// extension registry (runtime/extension).
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_RUNTIME_CUSTOMOP_H
#define TESSEL_RUNTIME_CUSTOMOP_H

#include "tessel/Extension/Op.h"
#include "tessel/runtime/Program.h"
#include "tessel/runtime/Status.h"

namespace tessel::artifact {
class Manifest;
} // namespace tessel::artifact

namespace tessel::runtime {

/// The instance of `op` (a custom_call of `program`) its kernel is built for:
/// operand and result types and the attributes other than `target`.
ext::KernelInstance customKernelInstance(const std::vector<BufferInfo> &buffers,
                                         const Op &op);

/// Builds the CPU kernel of custom_call `op`; fails naming the target when it
/// is not registered, has no CPU kernel, or refuses the instance.
Status buildCustomKernel(const std::vector<BufferInfo> &buffers, const Op &op,
                         ext::CpuKernelFn &run);

/// Fails, naming the first, unless every plugin the manifest of `artifact`
/// records is loaded at the recorded version.
Status checkRequiredPlugins(const artifact::Manifest &manifest);

} // namespace tessel::runtime

#endif // TESSEL_RUNTIME_CUSTOMOP_H
