//===- Reduce.cpp - Reductions and cumsum on CUDA ------------------------===//
#include "tessel/ops/Broadcast.h"
#include "CudaKernelRegistry.h"
#include "CudaKernels.h"
#include "CudaStatus.h"
#include "IndexPlan.h"

#include <limits>

namespace tessel::runtime::cuda {

namespace {

Status makeReduce(const KernelContext &ctx, Step &out) {
  const BufferInfo &a = ctx.in(0);
  const Shape &shape = a.shape;
  std::vector<bool> reduced(shape.size(), false);
  for (int64_t d : ctx.op.dims)
    reduced[d] = true;
  const std::vector<int64_t> st = rowMajorStrides(shape);
  Shape keptShape, redShape;
  std::vector<int64_t> keptStr, redStr;
  for (size_t d = 0; d < shape.size(); ++d) {
    (reduced[d] ? redShape : keptShape).push_back(shape[d]);
    (reduced[d] ? redStr : keptStr).push_back(st[d]);
  }
  StridedIndex kept, red;
  TSL_RETURN_IF_ERROR(stridedIndexer(keptShape, {keptStr}, kept));
  TSL_RETURN_IF_ERROR(stridedIndexer(redShape, {redStr}, red));
  const int64_t count = numElements(redShape);
  const float scale = count ? 1.0f / static_cast<float>(count)
                            : std::numeric_limits<float>::quiet_NaN();
  const void *x = ctx.operand(0);
  void *y = ctx.result(0);
  const OpKind kind = ctx.op.kind;
  const DType dtype = a.dtype;
  out = launchStep(ctx, [=](cudaStream_t s) {
    return launchReduce(kind, dtype, x, y, kept, red, scale, s);
  });
  return Status::ok();
}

Status makeCumSum(const KernelContext &ctx, Step &out) {
  const BufferInfo &a = ctx.in(0);
  const AxisView v = aroundAxis(a.shape, ctx.op.axis);
  const int64_t outer = v.outer, len = v.len, inner = v.inner;
  const bool exclusive = ctx.op.intAttr("exclusive", 0) != 0,
             reverse = ctx.op.intAttr("reverse", 0) != 0;
  const void *x = ctx.operand(0);
  void *y = ctx.result(0);
  const DType dtype = a.dtype;
  out = launchStep(ctx, [=](cudaStream_t s) {
    return launchCumSum(dtype, x, y, outer, len, inner, exclusive, reverse, s);
  });
  return Status::ok();
}

} // namespace

void registerReduceKernels(KernelRegistry &registry) {
  registerFamily(registry, kReduceKinds, [](OpKind k) -> KernelFactory {
    return k == OpKind::CumSum ? makeCumSum : makeReduce;
  });
}

} // namespace tessel::runtime::cuda
