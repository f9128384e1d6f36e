//===- Pool.cpp - max_pool, avg_pool, global_avg_pool on CUDA -------------===//
#include "CudaKernelRegistry.h"
#include "CudaKernels.h"
#include "CudaStatus.h"

namespace tessel::runtime::cuda {

namespace {

Status makePool(const KernelContext &ctx, Step &out) {
  const Op &op = ctx.op;
  const Shape &xs = ctx.in(0).shape, &ys = ctx.out(0).shape;
  PoolGeom g;
  g.planes = xs[0] * xs[1];
  g.h = xs[2];
  g.w = xs[3];
  g.oh = ys[2];
  g.ow = ys[3];
  g.kh = op.kernel[0];
  g.kw = op.kernel[1];
  g.sh = op.strides[0];
  g.sw = op.strides[1];
  g.pt = op.pads[0];
  g.pl = op.pads[1];
  g.pb = op.pads[2];
  g.pr = op.pads[3];
  g.countIncludePad = op.countIncludePad;
  const bool isMax = op.kind == OpKind::MaxPool;
  const float *x = static_cast<const float *>(ctx.operand(0));
  float *y = static_cast<float *>(ctx.result(0));
  cudaStream_t s = ctx.stream;
  out = [=] {
    return isMax ? launched(launchMaxPool(x, y, g, s), "max_pool")
                 : launched(launchAvgPool(x, y, g, s), "avg_pool");
  };
  return Status::ok();
}

Status makeGlobalAvgPool(const KernelContext &ctx, Step &out) {
  const Shape &xs = ctx.in(0).shape;
  const int64_t planes = xs[0] * xs[1];
  int64_t spatial = 1;
  for (size_t d = 2; d < xs.size(); ++d)
    spatial *= xs[d];
  const float *x = static_cast<const float *>(ctx.operand(0));
  float *y = static_cast<float *>(ctx.result(0));
  cudaStream_t s = ctx.stream;
  out = [=] {
    return launched(launchGlobalAvgPool(x, y, planes, spatial, s),
                    "global_avg_pool");
  };
  return Status::ok();
}

} // namespace

void registerPoolKernels(KernelRegistry &registry) {
  registry.add(OpKind::MaxPool, makePool);
  registry.add(OpKind::AvgPool, makePool);
  registry.add(OpKind::GlobalAvgPool, makeGlobalAvgPool);
}

} // namespace tessel::runtime::cuda
