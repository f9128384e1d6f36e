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

Status makeAdamUpdate(const KernelContext &ctx, Step &out) {
  const Op &op = ctx.op;
  AdamParams k;
  k.beta1 = op.floatAttr("beta1", 0.9f);
  k.beta2 = op.floatAttr("beta2", 0.999f);
  k.omb1 = static_cast<float>(1.0 - double(k.beta1));
  k.omb2 = static_cast<float>(1.0 - double(k.beta2));
  k.eps = op.floatAttr("eps", 1e-8f);
  k.weightDecay = op.floatAttr("weight_decay", 0.0f);
  auto in = [&](int i) { return static_cast<const float *>(ctx.operand(i)); };
  auto res = [&](int i) { return static_cast<float *>(ctx.result(i)); };
  const float *p = in(0), *g = in(1), *m = in(2), *v = in(3), *stepSize = in(4),
              *sqrtBc2 = in(5), *decay = in(6);
  float *p1 = res(0), *m1 = res(1), *v1 = res(2);
  const int64_t n = ctx.in(0).numel;
  out = launchStep(ctx, [=](cudaStream_t s) {
    return launchAdamUpdate(p, g, m, v, stepSize, sqrtBc2, decay, p1, m1, v1,
                            n, k, s);
  });
  return Status::ok();
}

Status makeSgdUpdate(const KernelContext &ctx, Step &out) {
  const Op &op = ctx.op;
  SgdParams k;
  k.momentum = op.floatAttr("momentum", 0.0f);
  k.weightDecay = op.floatAttr("weight_decay", 0.0f);
  k.nesterov = op.intAttr("nesterov", 0) != 0;
  const float *p = static_cast<const float *>(ctx.operand(0));
  const float *g = static_cast<const float *>(ctx.operand(1));
  const float *buf = static_cast<const float *>(ctx.operand(2));
  const float *lr = static_cast<const float *>(ctx.operand(3));
  float *p1 = static_cast<float *>(ctx.result(0));
  float *buf1 = static_cast<float *>(ctx.result(1));
  const int64_t n = ctx.in(0).numel;
  out = launchStep(ctx, [=](cudaStream_t s) {
    return launchSgdUpdate(p, g, buf, lr, p1, buf1, n, k, s);
  });
  return Status::ok();
}

} // namespace

void registerTrainingKernels(KernelRegistry &registry) {
  registry.add(OpKind::AdamUpdate, makeAdamUpdate);
  registry.add(OpKind::SgdUpdate, makeSgdUpdate);
}

// Plugins' ops (custom_call) have CPU kernels only.
void registerCustomKernels(KernelRegistry &) {}

} // namespace tessel::runtime::cuda
