//===- DnnlMatMul.cpp - matmul + bias + GELU as one oneDNN matmul ---------===//
#include "DnnlMatMul.h"
#include "DnnlContext.h"

#include <string>

namespace tessel::runtime::cpu {

using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

std::unique_ptr<DnnlMatMul> createDnnlMatMul(std::shared_ptr<DnnlContext> ctx,
                                             int64_t rows, int64_t k, int64_t n,
                                             const float *w, const float *bias,
                                             bool tanhForm) {
  if (!ctx || rows <= 0 || k <= 0 || n <= 0)
    return nullptr;
  try {
    auto impl = std::make_unique<DnnlPrimitive::Impl>();
    impl->ctx = ctx;
    impl->what = "matmul";
    const dnnl::engine &eng = ctx->engine;
    impl->src = dnnl::memory::desc({rows, k}, dt::f32, tag::ab);
    impl->dst = dnnl::memory::desc({rows, n}, dt::f32, tag::ab);
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
        dnnl::matmul::desc(impl->src, anyW, biasDesc, impl->dst), attr, eng);
    if (std::string(pd.impl_info_str()).find("ref") != std::string::npos)
      return nullptr; // the reference kernel would be far slower than sgemm
    impl->primitive = dnnl::matmul(pd);
    dnnl::memory plainW({{k, n}, dt::f32, tag::ab}, eng, const_cast<float *>(w));
    dnnl::memory weights(pd.weights_desc(), eng);
    dnnl::reorder(plainW, weights).execute(ctx->stream, plainW, weights);
    impl->args[DNNL_ARG_WEIGHTS] = weights;
    impl->args[DNNL_ARG_BIAS] =
        dnnl::memory(biasDesc, eng, const_cast<float *>(bias));
    ctx->stream.wait();
    return std::make_unique<DnnlPrimitive>(std::move(impl));
  } catch (const dnnl::error &) {
    return nullptr;
  }
}

} // namespace tessel::runtime::cpu
