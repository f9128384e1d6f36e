//===- DnnlPool.cpp - max_pool through oneDNN -----------------------------===//
#include "DnnlPool.h"
#include "DnnlContext.h"

namespace tessel::runtime::cpu {

using dt = dnnl::memory::data_type;

struct DnnlPool::Impl {
  std::shared_ptr<DnnlContext> ctx;
  dnnl::pooling_forward pool;
  dnnl::memory::desc src, dst;
};

DnnlPool::DnnlPool(std::unique_ptr<Impl> impl) : impl(std::move(impl)) {}
DnnlPool::~DnnlPool() = default;

std::unique_ptr<DnnlPool>
DnnlPool::createMax(std::shared_ptr<DnnlContext> ctx, const Shape &x,
                    const Shape &y, const std::vector<int64_t> &kernel,
                    const std::vector<int64_t> &strides,
                    const std::vector<int64_t> &pads, Layout src,
                    Layout dst) {
  if (!ctx || x.size() != 4 || y.size() != 4 || kernel.size() != 2 ||
      strides.size() != 2 || pads.size() != 4)
    return nullptr;
  try {
    auto impl = std::make_unique<Impl>();
    impl->ctx = ctx;
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
    impl->pool = dnnl::pooling_forward(pd);
    return std::unique_ptr<DnnlPool>(new DnnlPool(std::move(impl)));
  } catch (const dnnl::error &) {
    return nullptr;
  }
}

Status DnnlPool::run(const float *x, float *y) {
  try {
    const dnnl::engine &eng = impl->ctx->engine;
    dnnl::memory xm(impl->src, eng, const_cast<float *>(x)), ym(impl->dst, eng, y);
    impl->pool.execute(impl->ctx->stream, {{DNNL_ARG_SRC, xm}, {DNNL_ARG_DST, ym}});
    impl->ctx->stream.wait();
    return Status::ok();
  } catch (const dnnl::error &e) {
    return Status::error(std::string("oneDNN max pooling failed: ") + e.what());
  }
}

} // namespace tessel::runtime::cpu
