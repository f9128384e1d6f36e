//===- CustomCall.cpp - custom_call on CUDA: the plugin's kernel, on host -===//
//
// A plugin op has one kernel, its CPU kernel (include/tessel/Extension/Op.h,
// built by buildCustomKernel as on the CPU backend). On CUDA it runs in
// stream order on host copies: the operands are copied into pinned host
// staging (cudaMemcpyAsync), a host function enqueued on the stream
// (cudaLaunchHostFunc) runs the kernel once they have landed, and the
// results are copied back, so the stream is never synchronised and the
// results are the CPU backend's bits. The staging is allocated once, when
// the step is built, and owned by DeviceResources.
//
//===----------------------------------------------------------------------===//
#include "CudaKernelRegistry.h"
#include "CudaStatus.h"
#include "tessel/runtime/CustomOp.h"

#include <memory>
#include <vector>

namespace tessel::runtime::cuda {

namespace {

/// What the host function reads: the kernel and its host buffers.
struct HostCall {
  ext::CpuKernelFn run;
  std::vector<const void *> in;
  std::vector<void *> out;
};

void CUDART_CB runHostCall(void *data) {
  const HostCall &c = *static_cast<const HostCall *>(data);
  c.run(c.in.data(), c.out.data());
}

Status makeCustomCall(const KernelContext &ctx, Step &out) {
  const Op &op = ctx.op;
  auto call = std::make_shared<HostCall>();
  TSL_RETURN_IF_ERROR(buildCustomKernel(ctx.program.buffers, op, call->run));
  struct Copy {
    void *dst;
    const void *src;
    size_t bytes;
  };
  std::vector<Copy> toHost, toDevice;
  size_t total = 0;
  std::vector<size_t> offsets;
  const size_t buffers = op.operands.size() + op.results.size();
  for (size_t i = 0; i < buffers; ++i) {
    const bool operand = i < op.operands.size();
    const size_t j = operand ? i : i - op.operands.size();
    offsets.push_back(DeviceResources::reserve(
        (operand ? ctx.in(j) : ctx.out(j)).bytes, total));
  }
  void *staging = nullptr;
  TSL_CUDA(
      cudaHostAlloc(&staging, std::max<size_t>(total, 1), cudaHostAllocDefault),
      "cudaHostAlloc of custom_call's staging (" + std::to_string(total) +
          " bytes)");
  ctx.resources.pinned.push_back(staging);
  char *base = static_cast<char *>(staging);
  for (size_t i = 0; i < buffers; ++i) {
    char *host = base + offsets[i];
    if (i < op.operands.size()) {
      call->in.push_back(host);
      toHost.push_back({host, ctx.operand(i), ctx.in(i).bytes});
    } else {
      const size_t j = i - op.operands.size();
      call->out.push_back(host);
      toDevice.push_back({ctx.result(j), host, ctx.out(j).bytes});
    }
  }
  cudaStream_t s = ctx.stream;
  out = [=]() -> Status {
    for (const Copy &c : toHost)
      if (c.bytes)
        TSL_CUDA(cudaMemcpyAsync(c.dst, c.src, c.bytes, cudaMemcpyDefault, s),
                 "copying a custom_call operand to the host");
    TSL_CUDA(cudaLaunchHostFunc(s, runHostCall, call.get()),
             "cudaLaunchHostFunc of custom_call's kernel");
    for (const Copy &c : toDevice)
      if (c.bytes)
        TSL_CUDA(cudaMemcpyAsync(c.dst, c.src, c.bytes, cudaMemcpyDefault, s),
                 "copying a custom_call result to the device");
    return Status::ok();
  };
  return Status::ok();
}

} // namespace

void registerCustomKernels(KernelRegistry &registry) {
  registerFamily(registry, kCustomKinds,
                 [](OpKind) -> KernelFactory { return makeCustomCall; });
}

} // namespace tessel::runtime::cuda
