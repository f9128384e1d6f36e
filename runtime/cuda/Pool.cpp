//===- Pool.cpp - max_pool, avg_pool, global_avg_pool on CUDA -------------===//
#include "Broadcast.h"
#include "CudaKernelRegistry.h"
#include "CudaKernels.h"
#include "CudaStatus.h"

namespace tessel::runtime::cuda {

namespace {

Status makePool(const KernelContext &ctx, Step &out) {
  const Op &op = ctx.op;
  const Shape &xs = ctx.in(0).shape, &ys = ctx.out(0).shape;
  PoolGeom g;
  setWindow(g, op, xs, ys, op.kernel[0], op.kernel[1]);
  g.planes = xs[0] * xs[1];
  g.pb = op.pads[2];
  g.pr = op.pads[3];
  g.countIncludePad = op.countIncludePad;
  const bool isMax = op.kind == OpKind::MaxPool;
  out = f32Step(ctx, [=](const float *x, float *y, cudaStream_t s) {
    return isMax ? launchMaxPool(x, y, g, s) : launchAvgPool(x, y, g, s);
  });
  return Status::ok();
}

Status makeGlobalAvgPool(const KernelContext &ctx, Step &out) {
  const cpu::ChannelGeometry k(ctx.in(0).shape);
  const int64_t planes = k.batch * k.channels, spatial = k.spatial;
  out = f32Step(ctx, [=](const float *x, float *y, cudaStream_t s) {
    return launchGlobalAvgPool(x, y, planes, spatial, s);
  });
  return Status::ok();
}

} // namespace

void registerPoolKernels(KernelRegistry &registry) {
  addKernels(registry, {{OpKind::MaxPool, makePool},
                        {OpKind::AvgPool, makePool},
                        {OpKind::GlobalAvgPool, makeGlobalAvgPool}});
}

} // namespace tessel::runtime::cuda
