//===- ConvTraining.cpp - conv2d's kernels for training, on oneDNN -------===//
//
// The forward conv2d whose weight changes from step to step (a parameter
// being trained: DnnlConv.h prepacks constant weights only), and the
// conv2d_backward_data (dy, w) -> dx and conv2d_backward_weight (x, dy) -> dw
// that conv2d's gradient rule emits (dialects/tessel/Gradients.cpp), on
// oneDNN's convolution primitives (the backward ones created with their
// forward as the hint oneDNN asks for).
//
// 3x3, 5x5 and 7x7 convs run in the layouts oneDNN chooses for them
// (blocked, nChw16c / OIhw16i16o on AVX-512): the arena's NCHW / OIHW
// operands are reordered in and the result reordered out, through scratch
// every trained conv shares (KernelResources::trainedConv). On NCHW itself
// oneDNN falls back to its GEMM kernels, 1.5-2x slower for the backward ones
// (ResNet-50's 3x3 convs at batch 8: backward data 121 vs 242 GFLOP/s, 1
// thread), and the reorders cost a few percent of that. 1x1 convs stay on
// NCHW: there the GEMM kernels run at the blocked ones' speed (ResNet-50's
// 1x1 convs at ~200 GFLOP/s) and the reorders would be pure cost.
//
// Direct convolution rounds as PyTorch's CPU convolution (oneDNN's direct
// kernel too). That matters: ReLUs after BatchNorm see values within a few
// ulps of 0, and which side of 0 they round to changes a training trajectory
// visibly after a few steps (test/Training/resnet-sgd.test). So Winograd
// F(4x4, 3x3) (oneDNN's jit_wino_4x3; ~1.7x faster on ResNet-50's 3x3 convs,
// forward and backward) is opt-in for training: TESSEL_WINOGRAD=1 runs every
// trained 3x3 stride-1 conv on maps of at least 14x14 with it (the trajectory
// then drifts from PyTorch's by ~3e-4 relative over 8 steps on the test's
// ResNet, as one ReLU flip does: oneDNN's AVX2 direct kernel, rounding one
// element differently from its AVX-512 one, drifts 4.0e-4 from f64 there;
// test/models/resnet_train/train/f64_reference.py); TESSEL_WINOGRAD=0 also
// turns it off for inference (DnnlConv.cpp), where it is on by default.
//
// A conv marked `bf16_operands` (tesselc --precision bf16: its two
// multiplied operands hold bf16 values) runs on oneDNN's bf16 kernels where
// the CPU has them (Bf16MatMul.h's bf16KernelsUsable): those two operands
// reordered into bf16 (exact for such values), the result and a bias in f32,
// so only the order of the f32 sums differs from the f32 kernel. Always in
// the layouts oneDNN picks, and direct (oneDNN has no bf16 Winograd); where
// it offers only its reference kernel, the f32 kernel instead.
//
//===----------------------------------------------------------------------===//
#include "Bf16MatMul.h"
#include "DnnlStep.h"

#include <cstdlib>
#include <string>
#include <type_traits>
#include <unordered_map>

namespace tessel::runtime::cpu {

namespace {

/// A conv2d's geometry in oneDNN's terms (dilation counted from 0), and
/// the layouts and types its primitives run in: f32 1x1 convs on the
/// arena's own NCHW (oneDNN runs them as GEMMs, at the speed of its blocked
/// kernels less the reorders those would need), the others in the layouts
/// oneDNN picks; with `bf16`, the two multiplied operands in bf16.
struct ConvGeometry {
  dnnl::memory::dims strides, dilations, padL, padR;
  bool blocked, bf16;
  ConvGeometry(const Op &op, const Shape &weight, bool bf16)
      : strides{op.strides[0], op.strides[1]},
        dilations{op.dilations[0] - 1, op.dilations[1] - 1},
        padL{op.pads[0], op.pads[1]}, padR{op.pads[2], op.pads[3]},
        blocked(bf16 || !(weight[2] == 1 && weight[3] == 1)), bf16(bf16) {}
  /// `d` (a plain f32 layout) as the kernel takes it: itself, or "any"
  /// where the kernel picks, in bf16 for a `multiplied` operand of a bf16
  /// conv.
  dnnl::memory::desc layout(const dnnl::memory::desc &d,
                            bool multiplied) const {
    if (!blocked)
      return d;
    return dnnl::memory::desc(d.dims(),
                              bf16 && multiplied
                                  ? dnnl::memory::data_type::bf16
                                  : dnnl::memory::data_type::f32,
                              dnnl::memory::format_tag::any);
  }
};

/// Whether conv instruction `op` runs on oneDNN's bf16 kernels.
bool bf16Conv(const Op &op) {
  return op.intAttr("bf16_operands", 0) != 0 && bf16KernelsUsable();
}

/// `build(g)` for the bf16 geometry where it has a kernel better than
/// oneDNN's reference one, else for the f32 geometry: a primitive
/// descriptor (of anything with impl_info_str()).
template <typename Build>
auto preferBf16(const Op &op, const Shape &weight, Build build)
    -> decltype(build(std::declval<const ConvGeometry &>())) {
  if (bf16Conv(op)) {
    try {
      const ConvGeometry g(op, weight, true);
      auto pd = build(g);
      if (std::string(pd.impl_info_str()).find("ref") == std::string::npos)
        return pd;
    } catch (const dnnl::error &) {
    }
  }
  return build(ConvGeometry(op, weight, false));
}

/// Winograd, where TESSEL_WINOGRAD=1, for 3x3, stride 1, undilated,
/// ungrouped convs whose output maps are at least 14x14 (below that oneDNN's
/// Winograd loses to its direct kernel on ResNet-50's shapes).
dnnl::algorithm convAlgorithm(const Op &op, const Shape &w, const Shape &y,
                              const ConvGeometry &g) {
  const char *v = std::getenv("TESSEL_WINOGRAD"); // read when created
  const bool allowed = v && std::string(v) == "1" && !g.bf16;
  const bool wino = allowed && op.group == 1 && w[2] == 3 && w[3] == 3 &&
                    op.strides[0] == 1 && op.strides[1] == 1 &&
                    op.dilations[0] == 1 && op.dilations[1] == 1 &&
                    y[2] * y[3] >= 14 * 14;
  return wino ? dnnl::algorithm::convolution_winograd
              : dnnl::algorithm::convolution_direct;
}

/// `build(alg)`, and where Winograd has no kernel here (a CPU without
/// AVX-512), `build` on the direct algorithm.
template <typename Build>
auto withFallback(dnnl::algorithm alg, Build build) -> decltype(build(alg)) {
  if (alg == dnnl::algorithm::convolution_winograd) {
    try {
      return build(alg);
    } catch (const dnnl::error &) {
    }
  }
  return build(dnnl::algorithm::convolution_direct);
}

/// The forward conv2d of x with w (and bias) into y, in the layouts oneDNN
/// picks: the trained forward itself, and the backward primitives' hint.
dnnl::convolution_forward::primitive_desc
forwardDesc(const dnnl::engine &eng, dnnl::algorithm alg, const ConvGeometry &g,
            const dnnl::memory::desc &x, const dnnl::memory::desc &w,
            const dnnl::memory::desc *bias, const dnnl::memory::desc &y) {
  auto d = bias ? dnnl::convolution_forward::desc(
                      dnnl::prop_kind::forward_training, alg,
                      g.layout(x, true), g.layout(w, true), *bias,
                      g.layout(y, false), g.strides, g.dilations, g.padL,
                      g.padR)
                : dnnl::convolution_forward::desc(
                      dnnl::prop_kind::forward_training, alg,
                      g.layout(x, true), g.layout(w, true),
                      g.layout(y, false), g.strides, g.dilations, g.padL,
                      g.padR);
  return dnnl::convolution_forward::primitive_desc(d, eng);
}

/// A backward primitive's descriptor (Prim: convolution_backward_data or
/// convolution_backward_weights) over src, weights and dst (x or dx, w or
/// dw, dy), Winograd where convAlgorithm picks it (direct where it has no
/// kernel), with its forward as the hint. dy and the operand that is not
/// the result are the multiplied ones.
template <typename Prim>
typename Prim::primitive_desc
backwardDesc(const Op &op, const ConvGeometry &g, const dnnl::engine &eng,
             const Shape &weight, const Shape &dy,
             const dnnl::memory::desc &srcD, const dnnl::memory::desc &wD,
             const dnnl::memory::desc &dyD) {
  constexpr bool data =
      std::is_same_v<Prim, dnnl::convolution_backward_data>;
  return withFallback(convAlgorithm(op, weight, dy, g), [&](dnnl::algorithm alg) {
    typename Prim::desc d(alg, g.layout(srcD, !data), g.layout(wD, data),
                          g.layout(dyD, true), g.strides, g.dilations,
                          g.padL, g.padR);
    return typename Prim::primitive_desc(
        d, eng, forwardDesc(eng, alg, g, srcD, wD, nullptr, dyD));
  });
}

/// One operand of a primitive: the arena's plain buffer and, where the
/// kernel's layout differs, the reorder between them through scratch.
struct Moved {
  int arg;                 // DNNL_ARG_*
  dnnl::memory::desc plain, kernel;
  void *ptr;
  bool in;                 // read (reordered in) or written (reordered out)
  KernelResources::Scratch *scratch = nullptr; // null: no reorder
  dnnl::reorder reorder;
};

/// The step that reorders the inputs in, runs `primitive`, and reorders the
/// result out; `fixed` are arguments already in place (a plain bias).
Step movedStep(std::shared_ptr<DnnlContext> ctx, const char *what,
               dnnl::primitive primitive, std::vector<Moved> moved,
               std::vector<DnnlArg> fixed = {}) {
  return [=]() -> Status {
    try {
      const dnnl::engine &eng = ctx->engine;
      dnnl::stream &s = ctx->stream;
      std::unordered_map<int, dnnl::memory> args;
      for (const Moved &m : moved) {
        dnnl::memory plain(m.plain, eng, m.ptr);
        if (!m.scratch) {
          args[m.arg] = plain;
          continue;
        }
        dnnl::memory k(m.kernel, eng, m.scratch->data.get());
        if (m.in)
          m.reorder.execute(s, plain, k);
        args[m.arg] = k;
      }
      for (const DnnlArg &a : fixed)
        args[a.id] = dnnl::memory(a.desc, eng, a.ptr);
      primitive.execute(s, args);
      for (const Moved &m : moved)
        if (!m.in && m.scratch) {
          dnnl::memory plain(m.plain, eng, m.ptr);
          m.reorder.execute(s, args[m.arg], plain);
        }
      s.wait();
      return Status::ok();
    } catch (const dnnl::error &e) {
      return Status::error(std::string("oneDNN ") + what + " failed: " +
                           e.what());
    }
  };
}

/// Builds the Moved operands of one trained-conv primitive; each reordered
/// operand gets its own scratch slot (three per primitive, shared by all).
class Mover {
public:
  Mover(const KernelContext &c, const dnnl::engine &eng) : c(c), eng(eng) {}
  void add(int arg, const dnnl::memory::desc &plain,
           const dnnl::memory::desc &kernel, void *ptr, bool in) {
    Moved m{arg, plain, kernel, ptr, in};
    if (plain != kernel) {
      m.scratch = &c.resources.trainedConv[slot++];
      if (!m.scratch->reserve(kernel.get_size()))
        throw dnnl::error(dnnl_out_of_memory, "convolution scratch");
      m.reorder = in ? dnnl::reorder(dnnl::reorder::primitive_desc(
                           eng, plain, eng, kernel))
                     : dnnl::reorder(dnnl::reorder::primitive_desc(
                           eng, kernel, eng, plain));
    }
    moved.push_back(std::move(m));
  }
  std::vector<Moved> moved;

private:
  const KernelContext &c;
  const dnnl::engine &eng;
  int slot = 0;
};

Step convBackwardDataStep(const KernelContext &c) {
  return dnnlFactory(c, "conv2d_backward_data", [&](auto ctx) {
    const dnnl::engine &eng = ctx->engine;
    dnnl::memory::desc dy = plainDesc(c.in(0).shape),
                       w = plainDesc(c.in(1).shape, c.op.group),
                       dx = plainDesc(c.out(0).shape);
    auto pd = preferBf16(c.op, c.in(1).shape, [&](const ConvGeometry &g) {
      return backwardDesc<dnnl::convolution_backward_data>(
          c.op, g, eng, c.in(1).shape, c.in(0).shape, dx, w, dy);
    });
    Mover m(c, eng);
    m.add(DNNL_ARG_DIFF_DST, dy, pd.diff_dst_desc(), c.operand(0), true);
    m.add(DNNL_ARG_WEIGHTS, w, pd.weights_desc(), c.operand(1), true);
    m.add(DNNL_ARG_DIFF_SRC, dx, pd.diff_src_desc(), c.result(0), false);
    return movedStep(ctx, "convolution backward data",
                     dnnl::convolution_backward_data(pd), std::move(m.moved));
  });
}

Step convBackwardWeightStep(const KernelContext &c) {
  return dnnlFactory(c, "conv2d_backward_weight", [&](auto ctx) {
    const dnnl::engine &eng = ctx->engine;
    dnnl::memory::desc x = plainDesc(c.in(0).shape),
                       dy = plainDesc(c.in(1).shape),
                       dw = plainDesc(c.out(0).shape, c.op.group);
    auto pd = preferBf16(c.op, c.out(0).shape, [&](const ConvGeometry &g) {
      return backwardDesc<dnnl::convolution_backward_weights>(
          c.op, g, eng, c.out(0).shape, c.in(1).shape, x, dw, dy);
    });
    Mover m(c, eng);
    m.add(DNNL_ARG_SRC, x, pd.src_desc(), c.operand(0), true);
    m.add(DNNL_ARG_DIFF_DST, dy, pd.diff_dst_desc(), c.operand(1), true);
    m.add(DNNL_ARG_DIFF_WEIGHTS, dw, pd.diff_weights_desc(), c.result(0),
          false);
    return movedStep(ctx, "convolution backward weights",
                     dnnl::convolution_backward_weights(pd),
                     std::move(m.moved));
  });
}

} // namespace

Step dnnlConvTrainingStep(const KernelContext &c) {
  std::shared_ptr<DnnlContext> ctx = dnnlContextOf(c.resources);
  if (!ctx || c.in(0).shape.size() != 4 || c.in(1).shape.size() != 4)
    return nullptr;
  try {
    const dnnl::engine &eng = ctx->engine;
    const bool hasBias = c.op.operands.size() > 2;
    dnnl::memory::desc x = plainDesc(c.in(0).shape),
                       w = plainDesc(c.in(1).shape, c.op.group),
                       y = plainDesc(c.out(0).shape);
    dnnl::memory::desc bias =
        hasBias ? plainDesc(c.in(2).shape) : dnnl::memory::desc();
    auto pd = preferBf16(c.op, c.in(1).shape, [&](const ConvGeometry &g) {
      return withFallback(
          convAlgorithm(c.op, c.in(1).shape, c.out(0).shape, g),
          [&](dnnl::algorithm alg) {
            return forwardDesc(eng, alg, g, x, w, hasBias ? &bias : nullptr,
                               y);
          });
    });
    Mover m(c, eng);
    m.add(DNNL_ARG_SRC, x, pd.src_desc(), c.operand(0), true);
    m.add(DNNL_ARG_WEIGHTS, w, pd.weights_desc(), c.operand(1), true);
    m.add(DNNL_ARG_DST, y, pd.dst_desc(), c.result(0), false);
    std::vector<DnnlArg> fixed;
    if (hasBias)
      fixed.push_back({DNNL_ARG_BIAS, bias, c.operand(2)});
    return movedStep(ctx, "convolution", dnnl::convolution_forward(pd),
                     std::move(m.moved), std::move(fixed));
  } catch (const dnnl::error &) {
    return nullptr; // no oneDNN kernel: im2col + GEMM
  }
}

void registerConvBackwardKernels(KernelRegistry &r) {
  addKernels(r, {{OpKind::Conv2DBackwardData, convBackwardDataStep},
                 {OpKind::Conv2DBackwardWeight, convBackwardWeightStep}});
}

} // namespace tessel::runtime::cpu
