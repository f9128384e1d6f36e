//===- Elementwise.cpp - Unary ops and cast on CUDA -----------------------===//
//
// Unary ops are registered from the op table's list of scalar functions
// (cudaSupportsUnary) and launched by Kernels.cu's unaryLaunch: a new one
// touches no file here.
//
//===----------------------------------------------------------------------===//
#include "CudaKernelRegistry.h"
#include "CudaKernels.h"
#include "CudaStatus.h"

namespace tessel::runtime::cuda {

namespace {

Status makeUnary(const KernelContext &ctx, Step &out) {
  const BufferInfo &a = ctx.in(0);
  const void *x = ctx.operand(0);
  void *y = ctx.result(0);
  const UnaryLaunch launch = unaryLaunch(ctx.op);
  const DType dtype = a.dtype;
  const int64_t n = a.numel;
  out = launchStep(ctx, [=](cudaStream_t s) {
    return launch(dtype, x, y, n, s);
  });
  return Status::ok();
}

Status makeCast(const KernelContext &ctx, Step &out) {
  const BufferInfo &a = ctx.in(0);
  const void *x = ctx.operand(0);
  void *y = ctx.result(0);
  const DType from = a.dtype, to = ctx.op.to;
  const int64_t n = a.numel;
  out = launchStep(
      ctx, [=](cudaStream_t s) { return launchCast(from, x, to, y, n, s); });
  return Status::ok();
}

} // namespace

void registerElementwiseKernels(KernelRegistry &registry) {
  for (size_t k = 0; k < KernelRegistry::kMaxKinds; ++k)
    if (std::optional<OpKind> kind = opKindFromInt(static_cast<int>(k)))
      if (cudaSupportsUnary(*kind))
        registry.add(*kind, makeUnary);
  registry.add(OpKind::Cast, makeCast);
}

} // namespace tessel::runtime::cuda
