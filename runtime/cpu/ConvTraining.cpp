//===- ConvTraining.cpp - conv2d's kernels for training, on oneDNN -------===//
//
// conv2d_backward_data (dy, w) -> dx and conv2d_backward_weight (x, dy) -> dw,
// which conv2d's gradient rule emits (dialects/tessel/Gradients.cpp), on
// oneDNN's convolution backward primitives over the arena's NCHW and OIHW
// buffers (DnnlStep.h); each is created with its forward (training)
// primitive as the hint oneDNN asks for.
//
// And the forward conv2d whose weight changes from step to step (a
// parameter being trained: DnnlConv.h prepacks constant weights only): on
// oneDNN's direct convolution in the layouts it chooses, the activations and
// the weight reordered in (exactly) each run and the result reordered out,
// through scratch every such conv shares (KernelResources::trainedConv).
// Its rounding is then that of PyTorch's CPU convolution (oneDNN too), not
// im2col + GEMM's: ReLUs after BatchNorm see values within a few ulps of 0,
// and which side of 0 they round to changes a training trajectory visibly
// after a few steps (test/Training/resnet-sgd.test).
//
//===----------------------------------------------------------------------===//
#include "DnnlStep.h"

#include <unordered_map>

namespace tessel::runtime::cpu {

namespace {

/// A conv2d's geometry in oneDNN's terms (dilation counted from 0).
struct ConvGeometry {
  dnnl::memory::dims strides, dilations, padL, padR;
  explicit ConvGeometry(const Op &op)
      : strides{op.strides[0], op.strides[1]},
        dilations{op.dilations[0] - 1, op.dilations[1] - 1},
        padL{op.pads[0], op.pads[1]}, padR{op.pads[2], op.pads[3]} {}
};

/// The forward conv2d of x with w into y, as the backward primitives' hint.
dnnl::convolution_forward::primitive_desc
forwardHint(const dnnl::engine &eng, const ConvGeometry &g,
            const dnnl::memory::desc &x, const dnnl::memory::desc &w,
            const dnnl::memory::desc &y) {
  dnnl::convolution_forward::desc d(
      dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct,
      x, w, y, g.strides, g.dilations, g.padL, g.padR);
  return dnnl::convolution_forward::primitive_desc(d, eng);
}

Step convBackwardDataStep(const KernelContext &c) {
  return dnnlFactory(c, "conv2d_backward_data", [&](auto ctx) {
    const ConvGeometry g(c.op);
    dnnl::memory::desc dy = plainDesc(c.in(0).shape),
                       w = plainDesc(c.in(1).shape, c.op.group),
                       dx = plainDesc(c.out(0).shape);
    dnnl::convolution_backward_data::desc d(
        dnnl::algorithm::convolution_direct, dx, w, dy, g.strides,
        g.dilations, g.padL, g.padR);
    dnnl::convolution_backward_data::primitive_desc pd(
        d, ctx->engine, forwardHint(ctx->engine, g, dx, w, dy));
    return dnnlStep(ctx, "convolution backward data",
                    dnnl::convolution_backward_data(pd),
                    {{DNNL_ARG_DIFF_DST, dy, c.operand(0)},
                     {DNNL_ARG_WEIGHTS, w, c.operand(1)},
                     {DNNL_ARG_DIFF_SRC, dx, c.result(0)}});
  });
}

Step convBackwardWeightStep(const KernelContext &c) {
  return dnnlFactory(c, "conv2d_backward_weight", [&](auto ctx) {
    const ConvGeometry g(c.op);
    dnnl::memory::desc x = plainDesc(c.in(0).shape),
                       dy = plainDesc(c.in(1).shape),
                       dw = plainDesc(c.out(0).shape, c.op.group);
    dnnl::convolution_backward_weights::desc d(
        dnnl::algorithm::convolution_direct, x, dw, dy, g.strides,
        g.dilations, g.padL, g.padR);
    dnnl::convolution_backward_weights::primitive_desc pd(
        d, ctx->engine, forwardHint(ctx->engine, g, x, dw, dy));
    return dnnlStep(ctx, "convolution backward weights",
                    dnnl::convolution_backward_weights(pd),
                    {{DNNL_ARG_SRC, x, c.operand(0)},
                     {DNNL_ARG_DIFF_DST, dy, c.operand(1)},
                     {DNNL_ARG_DIFF_WEIGHTS, dw, c.result(0)}});
  });
}

} // namespace

Step dnnlConvTrainingStep(const KernelContext &c) {
  std::shared_ptr<DnnlContext> ctx = dnnlContextOf(c.resources);
  if (!ctx || c.in(0).shape.size() != 4 || c.in(1).shape.size() != 4)
    return nullptr;
  try {
    const dnnl::engine &eng = ctx->engine;
    const ConvGeometry g(c.op);
    const bool hasBias = c.op.operands.size() > 2;
    dnnl::memory::desc x = plainDesc(c.in(0).shape),
                       w = plainDesc(c.in(1).shape, c.op.group),
                       y = plainDesc(c.out(0).shape);
    auto any = [](const dnnl::memory::desc &d) {
      return dnnl::memory::desc(d.dims(), dnnl::memory::data_type::f32,
                                dnnl::memory::format_tag::any);
    };
    dnnl::memory::desc bias =
        hasBias ? plainDesc(c.in(2).shape) : dnnl::memory::desc();
    auto desc = hasBias ? dnnl::convolution_forward::desc(
                              dnnl::prop_kind::forward_training,
                              dnnl::algorithm::convolution_direct, any(x),
                              any(w), bias, any(y), g.strides, g.dilations,
                              g.padL, g.padR)
                        : dnnl::convolution_forward::desc(
                              dnnl::prop_kind::forward_training,
                              dnnl::algorithm::convolution_direct, any(x),
                              any(w), any(y), g.strides, g.dilations, g.padL,
                              g.padR);
    dnnl::convolution_forward::primitive_desc pd(desc, eng);
    // Each operand in the kernel's layout: reordered through the scratch
    // all trained convs share where that differs from the buffer's.
    struct Moved {
      dnnl::memory::desc plain, kernel;
      void *ptr;
      KernelResources::Scratch *scratch; // null: no reorder
      dnnl::reorder reorder;
    };
    auto moved = [&](const dnnl::memory::desc &plain,
                     const dnnl::memory::desc &kernel, void *ptr, int slot,
                     bool in) {
      Moved m{plain, kernel, ptr, nullptr, {}};
      if (plain != kernel) {
        m.scratch = &c.resources.trainedConv[slot];
        if (!m.scratch->reserve(kernel.get_size()))
          throw dnnl::error(dnnl_out_of_memory, "convolution scratch");
        m.reorder = in ? dnnl::reorder(dnnl::reorder::primitive_desc(
                             eng, plain, eng, kernel))
                       : dnnl::reorder(dnnl::reorder::primitive_desc(
                             eng, kernel, eng, plain));
      }
      return m;
    };
    Moved mx = moved(x, pd.src_desc(), c.operand(0), 0, true);
    Moved mw = moved(w, pd.weights_desc(), c.operand(1), 1, true);
    Moved my = moved(y, pd.dst_desc(), c.result(0), 2, false);
    void *biasPtr = hasBias ? c.operand(2) : nullptr;
    dnnl::convolution_forward conv(pd);
    return [=]() -> Status {
      try {
        dnnl::stream &s = ctx->stream;
        // The operand as the kernel reads it (reordered in) or writes it.
        auto kernelMemory = [&](const Moved &m, bool in) {
          dnnl::memory plain(m.plain, eng, m.ptr);
          if (!m.scratch)
            return plain;
          dnnl::memory k(m.kernel, eng, m.scratch->data.get());
          if (in)
            m.reorder.execute(s, plain, k);
          return k;
        };
        dnnl::memory yKernel = kernelMemory(my, false);
        std::unordered_map<int, dnnl::memory> args = {
            {DNNL_ARG_SRC, kernelMemory(mx, true)},
            {DNNL_ARG_WEIGHTS, kernelMemory(mw, true)},
            {DNNL_ARG_DST, yKernel}};
        if (biasPtr)
          args[DNNL_ARG_BIAS] = dnnl::memory(bias, eng, biasPtr);
        conv.execute(s, args);
        if (my.scratch) {
          dnnl::memory yPlain(y, eng, my.ptr);
          my.reorder.execute(s, yKernel, yPlain);
        }
        s.wait();
        return Status::ok();
      } catch (const dnnl::error &e) {
        return Status::error(std::string("oneDNN convolution failed: ") +
                             e.what());
      }
    };
  } catch (const dnnl::error &) {
    return nullptr; // no oneDNN kernel: im2col + GEMM
  }
}

void registerConvBackwardKernels(KernelRegistry &r) {
  addKernels(r, {{OpKind::Conv2DBackwardData, convBackwardDataStep},
                 {OpKind::Conv2DBackwardWeight, convBackwardWeightStep}});
}

} // namespace tessel::runtime::cpu
