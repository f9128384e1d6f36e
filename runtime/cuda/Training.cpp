//===- Training.cpp - the training step's fused ops on CUDA ---------------===//
//
// adam_update and sgd_update: the CPU kernels' formulas (cpu/Training.cpp),
// in place on the state buffers, which may be pinned host memory (Gemini's
// host chunks: the update runs where the chunk lives). gather_grad,
// gelu_grad, log_softmax_grad, batch_norm_variance, batch_norm_grad_sums
// and batch_norm_grad_input (dialects/tessel/TrainingOps.td) have CPU
// kernels only so far: a program holding one fails to load on this
// backend, naming the op. relu_grad is a case of the binary kernel
// (Binary.cpp), since relu's gradient was compare + where, which run here.
//
//===----------------------------------------------------------------------===//
#include "CudaKernelRegistry.h"
#include "CudaKernels.h"

namespace tessel::runtime::cuda {

namespace {

/// The step of an optimizer update: its buffers (Optimizer.h's
/// adamBuffers, sgdBuffers) and attributes read now, then `launch`
/// (launchAdamUpdate, launchSgdUpdate) on the executor's stream.
template <auto buffers, auto params, auto launch>
Status makeUpdate(const KernelContext &ctx, Step &out) {
  const auto b = buffers(ctx);
  const auto k = params(ctx.op);
  out = launchStep(ctx, [=](cudaStream_t s) { return launch(b, k, s); });
  return Status::ok();
}

} // namespace

void registerTrainingKernels(KernelRegistry &registry) {
  registry.add(OpKind::AdamUpdate,
               makeUpdate<adamBuffers, adamParams, launchAdamUpdate>);
  registry.add(OpKind::SgdUpdate,
               makeUpdate<sgdBuffers, sgdParams, launchSgdUpdate>);
}

// Plugins' ops (custom_call) have CPU kernels only.
void registerCustomKernels(KernelRegistry &) {}

} // namespace tessel::runtime::cuda
