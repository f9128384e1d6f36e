//===- Elementwise.cpp - Unary ops and cast on CUDA -----------------------===//
//
// Unary ops are registered from the op table's list of scalar functions
// (kElementwiseKinds, CudaKernelKinds.h) and launched by Elementwise.cu's
// unaryLaunch: a new one touches no file here. round_float is the CPU's
// scalar::roundToFormat (ScalarOps.h).
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

/// round_float: the nearest value of a narrower float format, in f32.
Status makeRoundFloat(const KernelContext &ctx, Step &out) {
  const int e = static_cast<int>(ctx.op.intAttr("exponent_bits", 8));
  const int m = static_cast<int>(ctx.op.intAttr("mantissa_bits", 7));
  const int64_t n = ctx.in(0).numel;
  out = f32Step(ctx, [=](const float *x, float *y, cudaStream_t s) {
    return launchRoundFloat(x, y, n, e, m, s);
  });
  return Status::ok();
}

} // namespace

void registerElementwiseKernels(KernelRegistry &registry) {
  registerFamily(registry, kElementwiseKinds, [](OpKind k) -> KernelFactory {
    switch (k) {
    case OpKind::Cast:
      return makeCast;
    case OpKind::RoundFloat:
      return makeRoundFloat;
    default: // the op table's unary scalar functions
      return makeUnary;
    }
  });
}

} // namespace tessel::runtime::cuda
