//===- Normalization.cpp - Softmax, layer_norm, rms_norm, batch_norm ------===//
//
// The CUDA backend's Normalization family, as the CPU's
// (cpu/Normalization.cpp): softmax, log_softmax, layer_norm, rms_norm and
// batch_norm; device code in Normalization.cu.
//
//===----------------------------------------------------------------------===//
#include "tessel/ops/Broadcast.h"
#include "CudaKernelRegistry.h"
#include "CudaKernels.h"
#include "CudaStatus.h"
#include "IndexPlan.h"

namespace tessel::runtime::cuda {

namespace {

Status makeSoftmax(const KernelContext &ctx, Step &out) {
  const Shape &shape = ctx.in(0).shape;
  const int64_t axis = ctx.op.axis;
  const AxisView v = aroundAxis(shape, axis);
  const int64_t outer = v.outer, len = v.len, inner = v.inner;
  const bool logS = ctx.op.kind == OpKind::LogSoftmax;
  out = f32Step(ctx, [=](const float *x, float *y, cudaStream_t s) {
    return launchSoftmax(logS, x, y, outer, len, inner, s);
  });
  return Status::ok();
}

Status makeNorm(const KernelContext &ctx, Step &out) {
  const Op &op = ctx.op;
  const BufferInfo &X = ctx.in(0);
  Shape norm(X.shape.begin() + op.axis, X.shape.end());
  const int64_t d = numElements(norm);
  int64_t rows = 1;
  for (int64_t i = 0; i < op.axis; ++i)
    rows *= X.shape[i];
  // Scale and bias that broadcast are expanded to the normalized shape on
  // every run (their contents may change between runs), into extra memory.
  struct Param {
    const float *src = nullptr;
    bool expand = false;
    LateAddress expanded;
    StridedIndex ix;
  };
  std::vector<Param> params;
  for (size_t i = 1; i < op.operands.size(); ++i) {
    const BufferInfo &b = ctx.in(i);
    Param pr;
    pr.src = static_cast<const float *>(ctx.operand(i));
    if (b.numel != d) {
      pr.expand = true;
      pr.expanded = ctx.resources.reserveExtra(d * sizeof(float));
      TSL_RETURN_IF_ERROR(stridedIndexer(
          norm, {broadcastStrides(b.shape, norm.size(), norm)}, pr.ix));
    }
    params.push_back(pr);
  }
  const float *x = static_cast<const float *>(ctx.operand(0));
  float *y = static_cast<float *>(ctx.result(0));
  const bool rms = op.kind == OpKind::RmsNorm;
  const float eps = op.epsilon;
  cudaStream_t s = ctx.stream;
  out = [=] {
    const float *sp[2] = {nullptr, nullptr};
    for (size_t i = 0; i < params.size() && i < 2; ++i) {
      if (!params[i].expand) {
        sp[i] = params[i].src;
        continue;
      }
      float *dst = params[i].expanded.get<float>();
      TSL_RETURN_IF_ERROR(launched(
          launchStridedCopy(4, params[i].src, dst, params[i].ix, s), "expand"));
      sp[i] = dst;
    }
    return launched(launchLayerNorm(rms, x, rows, d, eps, sp[0], sp[1], y, s),
                    rms ? "rms_norm" : "layer_norm");
  };
  return Status::ok();
}

Status makeBatchNorm(const KernelContext &ctx, Step &out) {
  const ChannelGeometry k(ctx.in(0).shape);
  const float *sc = static_cast<const float *>(ctx.operand(1));
  const float *bi = static_cast<const float *>(ctx.operand(2));
  const float *me = static_cast<const float *>(ctx.operand(3));
  const float *va = static_cast<const float *>(ctx.operand(4));
  const int64_t n = k.batch, c = k.channels, spatial = k.spatial;
  const float eps = ctx.op.epsilon;
  out = f32Step(ctx, [=](const float *x, float *y, cudaStream_t s) {
    return launchBatchNorm(x, n, c, spatial, sc, bi, me, va, eps, y, s);
  });
  return Status::ok();
}

} // namespace

void registerNormalizationKernels(KernelRegistry &registry) {
  registerFamily(registry, kNormalizationKinds, [](OpKind k) -> KernelFactory {
    switch (k) {
    case OpKind::Softmax:
    case OpKind::LogSoftmax:
      return makeSoftmax;
    case OpKind::BatchNorm:
      return makeBatchNorm;
    default:
      return makeNorm;
    }
  });
}

} // namespace tessel::runtime::cuda
