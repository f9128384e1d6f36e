//===- Fused.cpp - fused_elementwise's step on CUDA -----------------------===//
//
// The program decoded once (tessel/runtime/FusedProgram.h) into the
// kernel's by-value FusedLaunch (Fused.cu), with each period's divisor
// (FastDivide.h): one launch per run.
//
//===----------------------------------------------------------------------===//
#include "CudaKernelRegistry.h"
#include "CudaKernels.h"
#include "FastDivide.h"
#include "tessel/runtime/FusedProgram.h"

namespace tessel::runtime::cuda {

namespace {

Status makeFused(const KernelContext &ctx, Step &out) {
  std::vector<Shape> shapes;
  std::vector<DType> dtypes;
  for (size_t i = 0; i < ctx.op.operands.size(); ++i) {
    shapes.push_back(ctx.in(i).shape);
    dtypes.push_back(ctx.in(i).dtype);
  }
  FusedProgram p;
  const std::string bad =
      decodeFusedProgram(fusedProgramOf(ctx.op), shapes, dtypes,
                         ctx.out(0).shape, ctx.out(0).dtype, p);
  if (!bad.empty())
    return Status::error(bad);
  if (p.inputs.size() > static_cast<size_t>(FusedLaunch::kMaxInputs) ||
      p.code.size() > static_cast<size_t>(FusedLaunch::kMaxCode))
    return Status::error("fused_elementwise: too many inputs or instructions");
  FusedLaunch l{};
  l.inputs = static_cast<int>(p.inputs.size());
  l.code = static_cast<int>(p.code.size());
  for (size_t i = 0; i < p.inputs.size(); ++i) {
    l.in[i] = ctx.operand(i);
    l.inType[i] = static_cast<signed char>(fusedCastCode(p.inputs[i].dtype));
    l.period[i] = p.inputs[i].kind == FusedInput::Whole    ? 0
                  : p.inputs[i].kind == FusedInput::Scalar ? -1
                                                           : p.inputs[i].period;
    if (l.period[i] > 0 && l.period[i] < (int64_t(1) << 31))
      setDivisor(static_cast<uint32_t>(l.period[i]), l.magic[i], l.shift[i]);
  }
  for (size_t k = 0; k < p.code.size(); ++k) {
    l.kind[k] = static_cast<int>(p.code[k].kind);
    l.a[k] = static_cast<signed char>(p.code[k].a);
    l.b[k] = static_cast<signed char>(p.code[k].b);
    const int b = p.code[k].b;
    const bool scalarRhs = b >= 0 && static_cast<size_t>(b) < p.inputs.size() &&
                           p.inputs[b].kind == FusedInput::Scalar;
    l.flag[k] = static_cast<signed char>(
        (p.code[k].flag ? 1 : 0) | (scalarRhs ? 2 : 0) |
        (fusedCastCode(p.code[k].type) << 2));
  }
  l.outType = static_cast<signed char>(fusedCastCode(ctx.out(0).dtype));
  void *y = ctx.result(0);
  const int64_t n = ctx.out(0).numel;
  out = launchStep(ctx, [=](cudaStream_t s) { return launchFused(l, y, n, s); });
  return Status::ok();
}

} // namespace

void registerFusedKernels(KernelRegistry &registry) {
  registerFamily(registry, kFusedKinds, [](OpKind k) -> KernelFactory {
    return k == OpKind::FusedElementwise ? makeFused : nullptr;
  });
}

} // namespace tessel::runtime::cuda
