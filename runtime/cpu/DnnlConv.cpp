//===- DnnlConv.cpp - conv2d through oneDNN's direct kernels --------------===//
#include "DnnlConv.h"
#include "DnnlContext.h"

#include <optional>

#include <oneapi/dnnl/dnnl.hpp>

namespace tessel::runtime::cpu {

using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

std::shared_ptr<DnnlContext> createDnnlContext() {
  try {
    return std::make_shared<DnnlContext>();
  } catch (const dnnl::error &) {
    return nullptr;
  }
}

struct DnnlConv::Impl {
  std::shared_ptr<DnnlContext> ctx;
  dnnl::convolution_forward conv;
  // The arena buffers' layouts (NCHW or NHWC), and the kernel's.
  dnnl::memory::desc plainSrc, plainDst, src, dst;
  dnnl::memory::dims xd, yd;
  dnnl::memory weights, bias;
  bool reorderSrc = false, reorderDst = false;
  ConvPostOps post;
  std::string name;
  // toDst: the sum post-op's addend, into the kernel's layout.
  dnnl::reorder toSrc, toDst, fromDst;
};

DnnlConv::DnnlConv(std::unique_ptr<Impl> impl) : impl(std::move(impl)) {}
DnnlConv::~DnnlConv() = default;

std::unique_ptr<DnnlConv>
DnnlConv::create(std::shared_ptr<DnnlContext> ctx, const Shape &x,
                 const Shape &w, const Shape &y,
                 const std::vector<int64_t> &strides,
                 const std::vector<int64_t> &pads,
                 const std::vector<int64_t> &dilations, int64_t group,
                 const float *weights, const float *bias, ConvPostOps post,
                 ConvAlgo algo) {
  if (!ctx || group != 1 || x.size() != 4 || w.size() != 4 || y.size() != 4 ||
      x[0] * x[1] * x[2] * x[3] == 0 || y[0] * y[1] * y[2] * y[3] == 0)
    return nullptr;
  try {
    auto impl = std::make_unique<Impl>();
    impl->ctx = ctx;
    const dnnl::engine &eng = ctx->engine;
    dnnl::memory::dims xd(x.begin(), x.end()), wd(w.begin(), w.end()),
        yd(y.begin(), y.end());
    impl->xd = xd;
    impl->yd = yd;
    impl->post = post;
    impl->plainSrc = dnnl::memory::desc(xd, dt::f32, tag::nchw);
    impl->plainDst = dnnl::memory::desc(yd, dt::f32, tag::nchw);
    dnnl::memory::desc anyW(wd, dt::f32, tag::any),
        biasDesc({w[0]}, dt::f32, tag::x);
    // oneDNN counts dilation from 0 (no dilation); ONNX from 1.
    dnnl::memory::dims st = {strides[0], strides[1]},
                       dil = {dilations[0] - 1, dilations[1] - 1},
                       padL = {pads[0], pads[1]}, padR = {pads[2], pads[3]};
    dnnl::primitive_attr attr;
    dnnl::post_ops ops;
    if (post.sum)
      ops.append_sum(1.0f);
    if (post.relu)
      ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
    attr.set_post_ops(ops);
    // Only oneDNN's JIT kernels beat im2col + GEMM; its own gemm-based and
    // reference convs do not. Winograd first where asked for and possible.
    // `act`: the activations' layout (any: oneDNN's choice).
    auto kernel = [&](dnnl::algorithm alg, tag act)
        -> std::optional<dnnl::convolution_forward::primitive_desc> {
      try {
        dnnl::memory::desc anySrc(xd, dt::f32, act), anyDst(yd, dt::f32, act);
        auto desc = bias ? dnnl::convolution_forward::desc(
                               dnnl::prop_kind::forward_inference, alg, anySrc,
                               anyW, biasDesc, anyDst, st, dil, padL, padR)
                         : dnnl::convolution_forward::desc(
                               dnnl::prop_kind::forward_inference, alg, anySrc,
                               anyW, anyDst, st, dil, padL, padR);
        dnnl::convolution_forward::primitive_desc pd(desc, attr, eng);
        std::string name = pd.impl_info_str();
        if (name.find("gemm") != std::string::npos ||
            name.find("ref") != std::string::npos)
          return std::nullopt;
        return pd;
      } catch (const dnnl::error &) {
        return std::nullopt; // no kernel for this algorithm
      }
    };
    const bool wino = algo.winograd && w[2] == 3 && w[3] == 3 &&
                      strides[0] == 1 && strides[1] == 1 &&
                      dilations[0] == 1 && dilations[1] == 1;
    // The asked-for layout first, then oneDNN's own (NCHW asks for that):
    // an AVX2 CPU has no JIT kernel for nChw16c (its blocks are 8 wide).
    std::vector<tag> acts = {tag::any};
    if (algo.layout != Layout::NCHW)
      acts.insert(acts.begin(), formatTag(algo.layout));
    std::optional<dnnl::convolution_forward::primitive_desc> found;
    for (tag act : acts) {
      if (!found && wino)
        found = kernel(dnnl::algorithm::convolution_winograd, act);
      if (!found)
        found = kernel(dnnl::algorithm::convolution_direct, act);
    }
    if (!found)
      return nullptr;
    const dnnl::convolution_forward::primitive_desc &pd = *found;
    impl->name = pd.impl_info_str();
    impl->conv = dnnl::convolution_forward(pd);
    impl->src = pd.src_desc();
    impl->dst = pd.dst_desc();
    // The weights, once, into the kernel's layout (owned by the memory).
    dnnl::memory plainW({wd, dt::f32, tag::oihw}, eng,
                        const_cast<float *>(weights));
    impl->weights = dnnl::memory(pd.weights_desc(), eng);
    dnnl::reorder(plainW, impl->weights)
        .execute(ctx->stream, plainW, impl->weights);
    if (bias)
      impl->bias = dnnl::memory(biasDesc, eng, const_cast<float *>(bias));
    ctx->stream.wait();
    std::unique_ptr<DnnlConv> conv(new DnnlConv(std::move(impl)));
    if (!conv->setBufferLayouts(Layout::NCHW, Layout::NCHW))
      return nullptr;
    return conv;
  } catch (const dnnl::error &) {
    return nullptr;
  }
}

bool dnnlHasWinograd() {
  try {
    dnnl::engine eng(dnnl::engine::kind::cpu, 0);
    const dnnl::memory::dims x = {1, 16, 16, 16}, w = {16, 16, 3, 3};
    dnnl::convolution_forward::desc desc(
        dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_winograd,
        dnnl::memory::desc(x, dt::f32, tag::any),
        dnnl::memory::desc(w, dt::f32, tag::any),
        dnnl::memory::desc(x, dt::f32, tag::any), {1, 1}, {1, 1}, {1, 1});
    dnnl::convolution_forward::primitive_desc pd(desc, eng);
    return true;
  } catch (const dnnl::error &) {
    return false; // no Winograd kernel on this CPU
  }
}

static dnnl::memory::desc layoutDesc(const dnnl::memory::dims &d, Layout l) {
  return dnnl::memory::desc(d, dt::f32, formatTag(l));
}

Layout DnnlConv::dstLayout() const {
  for (Layout l : {Layout::NHWC, Layout::NChw16c})
    if (impl->dst == layoutDesc(impl->yd, l))
      return l;
  return Layout::NCHW;
}

const char *DnnlConv::kernelName() const { return impl->name.c_str(); }

Status DnnlConv::setBufferLayouts(Layout src, Layout dst) {
  try {
    const dnnl::engine &eng = impl->ctx->engine;
    impl->plainSrc = layoutDesc(impl->xd, src);
    impl->plainDst = layoutDesc(impl->yd, dst);
    impl->reorderSrc = impl->src != impl->plainSrc;
    impl->reorderDst = impl->dst != impl->plainDst;
    if (impl->reorderSrc)
      impl->toSrc = dnnl::reorder(
          dnnl::reorder::primitive_desc(eng, impl->plainSrc, eng, impl->src));
    if (impl->reorderDst)
      impl->fromDst = dnnl::reorder(
          dnnl::reorder::primitive_desc(eng, impl->dst, eng, impl->plainDst));
    if (impl->reorderDst && impl->post.sum)
      impl->toDst = dnnl::reorder(
          dnnl::reorder::primitive_desc(eng, impl->plainDst, eng, impl->dst));
    return Status::ok();
  } catch (const dnnl::error &e) {
    return Status::error(std::string("oneDNN reorder: ") + e.what());
  }
}

size_t DnnlConv::srcScratchBytes() const {
  return impl->reorderSrc ? impl->src.get_size() : 0;
}
size_t DnnlConv::dstScratchBytes() const {
  return impl->reorderDst ? impl->dst.get_size() : 0;
}

Status DnnlConv::run(const float *x, float *y, void *srcScratch,
                     void *dstScratch) {
  try {
    const dnnl::engine &eng = impl->ctx->engine;
    dnnl::stream &s = impl->ctx->stream;
    dnnl::memory xPlain(impl->plainSrc, eng, const_cast<float *>(x));
    dnnl::memory yPlain(impl->plainDst, eng, y);
    dnnl::memory xs = xPlain, ys = yPlain;
    if (impl->reorderSrc) {
      xs = dnnl::memory(impl->src, eng, srcScratch);
      impl->toSrc.execute(s, xPlain, xs);
    }
    if (impl->reorderDst) {
      ys = dnnl::memory(impl->dst, eng, dstScratch);
      if (impl->post.sum)
        impl->toDst.execute(s, yPlain, ys);
    }
    std::unordered_map<int, dnnl::memory> args = {
        {DNNL_ARG_SRC, xs}, {DNNL_ARG_WEIGHTS, impl->weights}, {DNNL_ARG_DST, ys}};
    if (impl->bias)
      args[DNNL_ARG_BIAS] = impl->bias;
    impl->conv.execute(s, args);
    if (impl->reorderDst)
      impl->fromDst.execute(s, ys, yPlain);
    s.wait();
    return Status::ok();
  } catch (const dnnl::error &e) {
    return Status::error(std::string("oneDNN convolution failed: ") + e.what());
  }
}

DnnlPrimitive::DnnlPrimitive(std::unique_ptr<Impl> impl)
    : impl(std::move(impl)) {}
DnnlPrimitive::~DnnlPrimitive() = default;

Status DnnlPrimitive::run(const void *src, void *dst) {
  try {
    const dnnl::engine &eng = impl->ctx->engine;
    std::unordered_map<int, dnnl::memory> args = impl->args;
    args[DNNL_ARG_SRC] = dnnl::memory(impl->src, eng, const_cast<void *>(src));
    args[DNNL_ARG_DST] = dnnl::memory(impl->dst, eng, dst);
    impl->primitive.execute(impl->ctx->stream, args);
    impl->ctx->stream.wait();
    return Status::ok();
  } catch (const dnnl::error &e) {
    return Status::error(std::string("oneDNN ") + impl->what +
                         " failed: " + e.what());
  }
}

std::unique_ptr<LayoutReorder>
createLayoutReorder(std::shared_ptr<DnnlContext> ctx, const Shape &shape,
                    Layout from, Layout to) {
  if (!ctx || shape.size() != 4)
    return nullptr;
  try {
    auto impl = std::make_unique<DnnlPrimitive::Impl>();
    impl->ctx = ctx;
    impl->what = "reorder";
    dnnl::memory::dims d(shape.begin(), shape.end());
    impl->src = layoutDesc(d, from);
    impl->dst = layoutDesc(d, to);
    impl->primitive = dnnl::reorder(dnnl::reorder::primitive_desc(
        ctx->engine, impl->src, ctx->engine, impl->dst));
    return std::make_unique<DnnlPrimitive>(std::move(impl));
  } catch (const dnnl::error &) {
    return nullptr;
  }
}

} // namespace tessel::runtime::cpu
