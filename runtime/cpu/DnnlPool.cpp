//===- DnnlPool.cpp - max_pool through oneDNN -----------------------------===//
#include "DnnlPool.h"
#include "DnnlContext.h"

namespace tessel::runtime::cpu {

using dt = dnnl::memory::data_type;

std::unique_ptr<DnnlPool> createDnnlMaxPool(std::shared_ptr<DnnlContext> ctx,
                                            const Shape &x, const Shape &y,
                                            const std::vector<int64_t> &kernel,
                                            const std::vector<int64_t> &strides,
                                            const std::vector<int64_t> &pads,
                                            Layout src, Layout dst) {
  if (!ctx || x.size() != 4 || y.size() != 4 || kernel.size() != 2 ||
      strides.size() != 2 || pads.size() != 4)
    return nullptr;
  try {
    auto impl = std::make_unique<DnnlPrimitive::Impl>();
    impl->ctx = ctx;
    impl->what = "max pooling";
    dnnl::memory::dims xd(x.begin(), x.end()), yd(y.begin(), y.end());
    impl->src = dnnl::memory::desc(xd, dt::f32, formatTag(src));
    impl->dst = dnnl::memory::desc(yd, dt::f32, formatTag(dst));
    // The right pads that give y's size (ceil mode pads more than ONNX
    // says; those windows are partial, which max pooling ignores).
    dnnl::memory::dims padL = {pads[0], pads[1]}, padR(2);
    for (int d = 0; d < 2; ++d)
      padR[d] = std::max<int64_t>(
          0, (y[2 + d] - 1) * strides[d] + kernel[d] - x[2 + d] - pads[d]);
    dnnl::pooling_forward::desc desc(
        dnnl::prop_kind::forward_inference, dnnl::algorithm::pooling_max,
        impl->src, impl->dst, {strides[0], strides[1]}, {kernel[0], kernel[1]},
        padL, padR);
    dnnl::pooling_forward::primitive_desc pd(desc, ctx->engine);
    impl->primitive = dnnl::pooling_forward(pd);
    return std::make_unique<DnnlPrimitive>(std::move(impl));
  } catch (const dnnl::error &) {
    return nullptr;
  }
}

} // namespace tessel::runtime::cpu
