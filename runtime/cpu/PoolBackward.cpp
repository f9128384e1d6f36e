//===- PoolBackward.cpp - max_pool's and avg_pool's gradients, oneDNN -----===//
//
// max_pool_backward (x, dy) -> dx and avg_pool_backward (dy) -> dx, which the
// pools' gradient rules emit (dialects/tessel/Gradients.cpp), on oneDNN's
// pooling backward primitive over NCHW buffers (DnnlStep.h). oneDNN's max
// pooling backward reads the forward pass's workspace (where each window's
// maximum was), so the max pool's step first runs the forward (training)
// pool on x into scratch it owns.
//
//===----------------------------------------------------------------------===//
#include "DnnlStep.h"

#include <algorithm>

namespace tessel::runtime::cpu {

namespace {

/// The pooling of x into y with the op's window: its oneDNN forward
/// (training) primitive descriptor. The right pads are those that give y's
/// size (ceil mode pads beyond ONNX's pads).
dnnl::pooling_forward::primitive_desc
poolHint(const dnnl::engine &eng, const Op &op, dnnl::algorithm alg,
         const Shape &x, const Shape &y, dnnl::memory::dims &padL,
         dnnl::memory::dims &padR) {
  padL = {op.pads[0], op.pads[1]};
  padR = {0, 0};
  for (int d = 0; d < 2; ++d)
    padR[d] = std::max<int64_t>(
        0, (y[2 + d] - 1) * op.strides[d] + op.kernel[d] - x[2 + d] - op.pads[d]);
  dnnl::pooling_forward::desc d(dnnl::prop_kind::forward_training, alg,
                                plainDesc(x), plainDesc(y),
                                {op.strides[0], op.strides[1]},
                                {op.kernel[0], op.kernel[1]}, padL, padR);
  return dnnl::pooling_forward::primitive_desc(d, eng);
}

Step poolBackwardStep(const KernelContext &c) {
  const bool max = c.op.kind == OpKind::MaxPoolBackward;
  return dnnlFactory(c, max ? "max_pool_backward" : "avg_pool_backward", [&](auto ctx) {
    const Shape &dxShape = c.out(0).shape, &dyShape = c.in(max ? 1 : 0).shape;
    dnnl::algorithm alg = max ? dnnl::algorithm::pooling_max
                          : c.op.countIncludePad
                              ? dnnl::algorithm::pooling_avg_include_padding
                              : dnnl::algorithm::pooling_avg_exclude_padding;
    dnnl::memory::dims padL, padR;
    auto hint = poolHint(ctx->engine, c.op, alg, dxShape, dyShape, padL, padR);
    dnnl::memory::desc dx = plainDesc(dxShape), dy = plainDesc(dyShape);
    dnnl::pooling_backward::desc d(alg, dx, dy,
                                   {c.op.strides[0], c.op.strides[1]},
                                   {c.op.kernel[0], c.op.kernel[1]}, padL, padR);
    dnnl::pooling_backward::primitive_desc pd(d, ctx->engine, hint);
    std::vector<DnnlArg> args = {{DNNL_ARG_DIFF_DST, dy, c.operand(max ? 1 : 0)},
                                 {DNNL_ARG_DIFF_SRC, dx, c.result(0)}};
    if (!max)
      return dnnlStep(ctx, "average pooling backward",
                      dnnl::pooling_backward(pd), std::move(args));
    // The forward pass, for the workspace: its result goes to scratch.
    dnnl::memory workspace(hint.workspace_desc(), ctx->engine);
    dnnl::memory y(hint.dst_desc(), ctx->engine);
    return dnnlStep(
        ctx, "max pooling backward", dnnl::pooling_backward(pd),
        std::move(args), {{DNNL_ARG_WORKSPACE, workspace}},
        {{dnnl::pooling_forward(hint), {{DNNL_ARG_SRC, dx, c.operand(0)}}}},
        {{DNNL_ARG_DST, y}, {DNNL_ARG_WORKSPACE, workspace}});
  });
}

} // namespace

void registerPoolBackwardKernels(KernelRegistry &r) {
  addKernels(r, {OpKind::MaxPoolBackward, OpKind::AvgPoolBackward},
             KernelFactory(poolBackwardStep));
}

} // namespace tessel::runtime::cpu
