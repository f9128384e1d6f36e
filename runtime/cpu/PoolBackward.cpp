//===- PoolBackward.cpp - max_pool's and avg_pool's gradients, oneDNN -----===//
//
// max_pool_backward (x, dy) -> dx and avg_pool_backward (dy) -> dx, which the
// pools' gradient rules emit (dialects/tessel/Gradients.cpp), on oneDNN's
// pooling backward primitive over NCHW buffers (DnnlStep.h). oneDNN's max
// pooling backward reads the forward pass's workspace (where each window's
// maximum was), so the max pool's step first runs the forward (training)
// pool on x into scratch it owns. oneDNN's average pooling that counts the
// padding counts ceil mode's extra right padding too, which ONNX does not:
// that one case runs loops of its own.
//
//===----------------------------------------------------------------------===//
#include "DnnlStep.h"

#include "ThreadPool.h"

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

/// avg_pool_backward by loops: each window's gradient spread over its input
/// elements, divided by its size within the input and the explicit pads.
Step avgPoolBackwardLoops(const KernelContext &c) {
  return kernelStep(c, [](const StepArgs &s) {
    const Shape &x = s.r->shape, &y = s.a->shape;
    const std::vector<int64_t> &k = s.o->kernel, &st = s.o->strides,
                               &p = s.o->pads;
    const float *dy = static_cast<const float *>(s.x0);
    float *dx = static_cast<float *>(s.y0);
    const int64_t planes = x[0] * x[1], hw = x[2] * x[3], ohw = y[2] * y[3];
    s.tp->parallelFor(planes, 1, [&](int64_t b, int64_t e) {
      for (int64_t pl = b; pl < e; ++pl) {
        float *d = dx + pl * hw;
        std::fill(d, d + hw, 0.0f);
        for (int64_t r = 0; r < y[2]; ++r)
          for (int64_t q = 0; q < y[3]; ++q) {
            const int64_t h0 = r * st[0] - p[0], w0 = q * st[1] - p[1];
            const int64_t h1 = std::min(h0 + k[0], x[2] + p[2]),
                          w1 = std::min(w0 + k[1], x[3] + p[3]);
            const float g = dy[pl * ohw + r * y[3] + q] /
                            static_cast<float>((h1 - h0) * (w1 - w0));
            for (int64_t i = std::max<int64_t>(h0, 0); i < std::min(h1, x[2]); ++i)
              for (int64_t j = std::max<int64_t>(w0, 0); j < std::min(w1, x[3]); ++j)
                d[i * x[3] + j] += g;
          }
      }
    });
  });
}

Step poolBackwardStep(const KernelContext &c) {
  const bool max = c.op.kind == OpKind::MaxPoolBackward;
  if (!max && c.op.countIncludePad) {
    const Shape &x = c.out(0).shape, &y = c.in(0).shape;
    for (int d = 0; d < 2; ++d)
      if ((y[2 + d] - 1) * c.op.strides[d] + c.op.kernel[d] >
          x[2 + d] + c.op.pads[d] + c.op.pads[d + 2])
        return avgPoolBackwardLoops(c);
  }
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
