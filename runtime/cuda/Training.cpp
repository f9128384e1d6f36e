//===- Training.cpp - the training step's fused ops on CUDA ---------------===//
//
// The ops of dialects/tessel/TrainingOps.td, each with the CPU kernel's
// formula (cpu/Training.cpp; kernels in Training.cu): gather_grad
// (its indices checked as gather's, DeviceResources::addGatherCheck, and
// summed in the CPU's order), gelu_grad, log_softmax_grad, BatchNorm's
// training pieces (batch_norm_variance, batch_norm_grad_sums,
// batch_norm_grad_input), and adam_update and sgd_update, in place on the
// state buffers, which may be pinned host memory (Gemini's host chunks: the
// update runs where the chunk lives). relu_grad, of this family as on the
// CPU, is a case of the binary kernel (makeBinaryStep, Binary.cu), since
// relu's gradient was compare + where.
//
//===----------------------------------------------------------------------===//
#include "tessel/ops/Broadcast.h"
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

Status makeGeluGrad(const KernelContext &ctx, Step &out) {
  const float *x = static_cast<const float *>(ctx.operand(0));
  const float *g = static_cast<const float *>(ctx.operand(1));
  float *y = static_cast<float *>(ctx.result(0));
  const int64_t n = ctx.in(0).numel;
  const bool tanhForm = ctx.op.tanhApproximation;
  out = launchStep(ctx, [=](cudaStream_t s) {
    return launchGeluGrad(x, g, y, n, tanhForm, s);
  });
  return Status::ok();
}

Status makeLogSoftmaxGrad(const KernelContext &ctx, Step &out) {
  const float *o = static_cast<const float *>(ctx.operand(0));
  const float *g = static_cast<const float *>(ctx.operand(1));
  float *y = static_cast<float *>(ctx.result(0));
  const AxisView v = aroundAxis(ctx.in(0).shape, ctx.op.axis);
  out = launchStep(ctx, [=](cudaStream_t s) {
    return launchLogSoftmaxGrad(o, g, y, v.outer, v.len, v.inner, s);
  });
  return Status::ok();
}

/// gather_grad: the indices checked against the result's axis (run()
/// reports the first out-of-range one with the CPU's message), then the
/// sorted scatter-add of launchGatherGrad through the shared scratch.
Status makeGatherGrad(const KernelContext &ctx, Step &out) {
  const AxisView v = aroundAxis(ctx.out(0).shape, ctx.op.axis);
  const BufferInfo &idx = ctx.in(1);
  const int64_t outer = v.outer, dim = v.len, inner = v.inner,
                n = idx.numel;
  size_t bytes = 0;
  if (n > 0) {
    cudaError_t e = gatherGradScratchBytes(n, dim, bytes);
    if (e == cudaErrorInvalidValue)
      return Status::error("gather_grad: " + std::to_string(n) +
                           " indices into an axis of size " +
                           std::to_string(dim) +
                           " exceed the cuda kernel's int range");
    TSL_CUDA(e, "sizing gather_grad's sort");
  }
  const LateAddress scratch = ctx.resources.reserveScratch(bytes);
  const LateAddress slot = ctx.resources.addGatherCheck(ctx.index, ctx.op, dim);
  const float *g = static_cast<const float *>(ctx.operand(0));
  const void *indices = ctx.operand(1);
  float *y = static_cast<float *>(ctx.result(0));
  const DType indexType = idx.dtype;
  cudaStream_t s = ctx.stream;
  out = [=] {
    TSL_RETURN_IF_ERROR(launched(
        launchGatherCheck(indexType, indices, n, dim,
                          slot.get<unsigned long long>(), s),
        "gather_grad"));
    return launched(launchGatherGrad(g, indexType, indices, n, outer, dim,
                                     inner, scratch.get(), bytes, y, s),
                    "gather_grad");
  };
  return Status::ok();
}

/// BatchNorm's training pieces over [N, C, spatial...] (ChannelGeometry).
Status makeBatchNormTrain(const KernelContext &ctx, Step &out) {
  const ChannelGeometry k(ctx.in(0).shape);
  const int64_t n = k.batch, c = k.channels, spatial = k.spatial;
  const float *in[6] = {};
  for (size_t i = 0; i < ctx.op.operands.size() && i < 6; ++i)
    in[i] = static_cast<const float *>(ctx.operand(i));
  float *r0 = static_cast<float *>(ctx.result(0));
  float *r1 = ctx.op.results.size() > 1 ? static_cast<float *>(ctx.result(1))
                                        : nullptr;
  switch (ctx.op.kind) {
  case OpKind::BatchNormVariance: // (x, mean) -> var
    out = launchStep(ctx, [=](cudaStream_t s) {
      return launchBatchNormVariance(in[0], in[1], n, c, spatial, r0, s);
    });
    break;
  case OpKind::BatchNormGradSums: // (g, x, mean) -> (sum_g, sum_g_centred)
    out = launchStep(ctx, [=](cudaStream_t s) {
      return launchBatchNormGradSums(in[0], in[1], in[2], n, c, spatial, r0,
                                     r1, s);
    });
    break;
  default: // (g, x, mean, grad_mean, proj, coef) -> dx
    out = launchStep(ctx, [=](cudaStream_t s) {
      return launchBatchNormGradInput(in[0], in[1], in[2], in[3], in[4], in[5],
                                      n, c, spatial, r0, s);
    });
    break;
  }
  return Status::ok();
}

} // namespace

void registerTrainingKernels(KernelRegistry &registry) {
  registerFamily(registry, kTrainingKinds, [](OpKind k) -> KernelFactory {
    switch (k) {
    case OpKind::GatherGrad:
      return makeGatherGrad;
    case OpKind::GeluGrad:
      return makeGeluGrad;
    case OpKind::LogSoftmaxGrad:
      return makeLogSoftmaxGrad;
    case OpKind::ReluGrad:
      return makeBinaryStep;
    case OpKind::BatchNormVariance:
    case OpKind::BatchNormGradSums:
    case OpKind::BatchNormGradInput:
      return makeBatchNormTrain;
    case OpKind::AdamUpdate:
      return makeUpdate<adamBuffers, adamParams, launchAdamUpdate>;
    case OpKind::SgdUpdate:
      return makeUpdate<sgdBuffers, sgdParams, launchSgdUpdate>;
    default:
      return nullptr;
    }
  });
}

} // namespace tessel::runtime::cuda
