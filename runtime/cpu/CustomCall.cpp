//===- CustomCall.cpp - the CPU kernel of custom_call: a plugin's ---------===//

#include "KernelRegistry.h"

#include "tessel/runtime/CustomOp.h"

namespace tessel::runtime::cpu {
namespace {

Step customCallStep(const KernelContext &c) {
  ext::CpuKernelFn run;
  Status s = buildCustomKernel(c.program.buffers, c.op, run);
  if (!s)
    return [s] { return s; };
  std::vector<const void *> in;
  std::vector<void *> out;
  for (size_t i = 0; i < c.op.operands.size(); ++i)
    in.push_back(c.operand(i));
  for (size_t i = 0; i < c.op.results.size(); ++i)
    out.push_back(c.result(i));
  return [run, in, out] {
    run(in.data(), out.data());
    return Status::ok();
  };
}

} // namespace

void registerCustomKernels(KernelRegistry &r) {
  r.add(OpKind::CustomCall, customCallStep);
}

} // namespace tessel::runtime::cpu
