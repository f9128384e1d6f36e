//===- DnnlMatMul.cpp - matmul + bias + GELU as one oneDNN matmul ---------===//
#include "DnnlMatMul.h"
#include "DnnlContext.h"

#include <string>

namespace tessel::runtime::cpu {

using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

struct DnnlMatMul::Impl {
  std::shared_ptr<DnnlContext> ctx;
  dnnl::matmul matmul;
  dnnl::memory::desc a, y;
  dnnl::memory weights, bias;
};

DnnlMatMul::DnnlMatMul(std::unique_ptr<Impl> impl) : impl(std::move(impl)) {}
DnnlMatMul::~DnnlMatMul() = default;

std::unique_ptr<DnnlMatMul>
DnnlMatMul::create(std::shared_ptr<DnnlContext> ctx, int64_t rows, int64_t k,
                   int64_t n, const float *w, const float *bias,
                   bool tanhForm) {
  if (!ctx || rows <= 0 || k <= 0 || n <= 0)
    return nullptr;
  try {
    auto impl = std::make_unique<Impl>();
    impl->ctx = ctx;
    const dnnl::engine &eng = ctx->engine;
    impl->a = dnnl::memory::desc({rows, k}, dt::f32, tag::ab);
    impl->y = dnnl::memory::desc({rows, n}, dt::f32, tag::ab);
    dnnl::memory::desc anyW({k, n}, dt::f32, tag::any),
        biasDesc({1, n}, dt::f32, tag::ab);
    dnnl::post_ops ops;
    ops.append_eltwise(1.0f,
                       tanhForm ? dnnl::algorithm::eltwise_gelu_tanh
                                : dnnl::algorithm::eltwise_gelu_erf,
                       0.0f, 0.0f);
    dnnl::primitive_attr attr;
    attr.set_post_ops(ops);
    dnnl::matmul::primitive_desc pd(
        dnnl::matmul::desc(impl->a, anyW, biasDesc, impl->y), attr, eng);
    if (std::string(pd.impl_info_str()).find("ref") != std::string::npos)
      return nullptr; // the reference kernel would be far slower than sgemm
    impl->matmul = dnnl::matmul(pd);
    dnnl::memory plainW({{k, n}, dt::f32, tag::ab}, eng, const_cast<float *>(w));
    impl->weights = dnnl::memory(pd.weights_desc(), eng);
    dnnl::reorder(plainW, impl->weights).execute(ctx->stream, plainW, impl->weights);
    impl->bias = dnnl::memory(biasDesc, eng, const_cast<float *>(bias));
    ctx->stream.wait();
    return std::unique_ptr<DnnlMatMul>(new DnnlMatMul(std::move(impl)));
  } catch (const dnnl::error &) {
    return nullptr;
  }
}

Status DnnlMatMul::run(const float *a, float *y) {
  try {
    const dnnl::engine &eng = impl->ctx->engine;
    dnnl::memory am(impl->a, eng, const_cast<float *>(a)), ym(impl->y, eng, y);
    impl->matmul.execute(impl->ctx->stream, {{DNNL_ARG_SRC, am},
                                             {DNNL_ARG_WEIGHTS, impl->weights},
                                             {DNNL_ARG_BIAS, impl->bias},
                                             {DNNL_ARG_DST, ym}});
    impl->ctx->stream.wait();
    return Status::ok();
  } catch (const dnnl::error &e) {
    return Status::error(std::string("oneDNN matmul failed: ") + e.what());
  }
}

} // namespace tessel::runtime::cpu
