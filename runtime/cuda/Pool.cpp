//===- Pool.cpp - The pools and their gradients on CUDA --------------------===//
//
// max_pool, avg_pool (one thread per result), global_avg_pool (one block
// per plane), and the gradients max_pool_backward (x, dy) -> dx and
// avg_pool_backward (dy) -> dx: one thread per dx element, summing over the
// windows that cover it (the CPU's oneDNN primitives: the gradient of each
// window's first maximum, or its share of the window's count).
//
//===----------------------------------------------------------------------===//
#include "tessel/ops/Broadcast.h"
#include "CudaKernelRegistry.h"
#include "CudaKernels.h"
#include "CudaStatus.h"

namespace tessel::runtime::cuda {

namespace {

Status makePool(const KernelContext &ctx, Step &out) {
  const Op &op = ctx.op;
  const PoolGeom g = poolGeom(op, ctx.in(0).shape, ctx.out(0).shape);
  const bool isMax = op.kind == OpKind::MaxPool;
  out = f32Step(ctx, [=](const float *x, float *y, cudaStream_t s) {
    return isMax ? launchMaxPool(x, y, g, s) : launchAvgPool(x, y, g, s);
  });
  return Status::ok();
}

Status makeGlobalAvgPool(const KernelContext &ctx, Step &out) {
  const ChannelGeometry k(ctx.in(0).shape);
  const int64_t planes = k.batch * k.channels, spatial = k.spatial;
  out = f32Step(ctx, [=](const float *x, float *y, cudaStream_t s) {
    return launchGlobalAvgPool(x, y, planes, spatial, s);
  });
  return Status::ok();
}

/// max_pool_backward (x, dy) -> dx, avg_pool_backward (dy) -> dx.
Status makePoolBackward(const KernelContext &ctx, Step &out) {
  const Op &op = ctx.op;
  const bool isMax = op.kind == OpKind::MaxPoolBackward;
  const BufferInfo &dyInfo = ctx.in(isMax ? 1 : 0);
  const PoolGeom g = poolGeom(op, ctx.out(0).shape, dyInfo.shape);
  const float *x =
      isMax ? static_cast<const float *>(ctx.operand(0)) : nullptr;
  const float *dy = static_cast<const float *>(ctx.operand(isMax ? 1 : 0));
  float *dx = static_cast<float *>(ctx.result(0));
  out = launchStep(ctx, [=](cudaStream_t s) {
    return isMax ? launchMaxPoolBackward(x, dy, dx, g, s)
                 : launchAvgPoolBackward(dy, dx, g, s);
  });
  return Status::ok();
}

} // namespace

void registerPoolKernels(KernelRegistry &registry) {
  registerFamily(registry, kPoolKinds, [](OpKind k) -> KernelFactory {
    switch (k) {
    case OpKind::MaxPool:
    case OpKind::AvgPool:
      return makePool;
    case OpKind::GlobalAvgPool:
      return makeGlobalAvgPool;
    default: // max_pool_backward, avg_pool_backward
      return makePoolBackward;
    }
  });
}

} // namespace tessel::runtime::cuda
