//===- Binary.cpp - Broadcasting binary ops, compare and where on CUDA ----===//
//
// The CUDA backend's Binary family, as the CPU's; device code in Binary.cu.
// makeBinaryStep also builds relu_grad's step (Training.cpp).
//
//===----------------------------------------------------------------------===//
#include "tessel/ops/Broadcast.h"
#include "CudaKernelRegistry.h"
#include "CudaKernels.h"
#include "CudaStatus.h"
#include "IndexPlan.h"

namespace tessel::runtime::cuda {

Status makeBinaryStep(const KernelContext &ctx, Step &out) {
  const BufferInfo &a = ctx.in(0), &b = ctx.in(1);
  StridedIndex ix;
  TSL_RETURN_IF_ERROR(toIndexer(
      makeBroadcastPlan(ctx.out(0).shape, {&a.shape, &b.shape}), ix));
  const void *x0 = ctx.operand(0), *x1 = ctx.operand(1);
  void *y = ctx.result(0);
  const OpKind kind = ctx.op.kind;
  const DType dtype = a.dtype;
  const bool bScalar = b.numel == 1;
  out = launchStep(ctx, [=](cudaStream_t s) {
    return launchBinary(kind, dtype, x0, x1, y, ix, bScalar, s);
  });
  return Status::ok();
}

namespace {

Status makeCompare(const KernelContext &ctx, Step &out) {
  const BufferInfo &a = ctx.in(0);
  StridedIndex ix;
  TSL_RETURN_IF_ERROR(toIndexer(
      makeBroadcastPlan(ctx.out(0).shape, {&a.shape, &ctx.in(1).shape}),
      ix));
  const void *x0 = ctx.operand(0), *x1 = ctx.operand(1);
  uint8_t *y = static_cast<uint8_t *>(ctx.result(0));
  const CmpPred pred = static_cast<CmpPred>(static_cast<int>(ctx.op.predicate));
  const DType dtype = a.dtype;
  out = launchStep(ctx, [=](cudaStream_t s) {
    return launchCompare(pred, dtype, x0, x1, y, ix, s);
  });
  return Status::ok();
}

Status makeWhere(const KernelContext &ctx, Step &out) {
  const BufferInfo &r = ctx.out(0);
  StridedIndex ix;
  TSL_RETURN_IF_ERROR(toIndexer(
      makeBroadcastPlan(
          r.shape, {&ctx.in(0).shape, &ctx.in(1).shape, &ctx.in(2).shape}),
      ix));
  const uint8_t *cond = static_cast<const uint8_t *>(ctx.operand(0));
  const void *x1 = ctx.operand(1), *x2 = ctx.operand(2);
  void *y = ctx.result(0);
  const size_t es = dtypeSize(r.dtype);
  out = launchStep(ctx, [=](cudaStream_t s) {
    return launchWhere(es, cond, x1, x2, y, ix, s);
  });
  return Status::ok();
}

} // namespace

void registerBinaryKernels(KernelRegistry &registry) {
  registerFamily(registry, kBinaryKinds, [](OpKind k) -> KernelFactory {
    return k == OpKind::Compare ? makeCompare
           : k == OpKind::Where ? makeWhere
                                : makeBinaryStep;
  });
}

} // namespace tessel::runtime::cuda
