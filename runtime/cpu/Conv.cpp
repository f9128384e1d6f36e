//===- Conv.cpp - conv2d NCHW via im2col + sgemm ---------------------------===//
#include "Gemm.h"
#include "KernelRegistry.h"
#include "KernelResources.h"
#include "Kernels.h"
#include "ThreadPool.h"

#include <cstdlib>
#include <cstring>
#include <string>

namespace tessel::runtime::cpu {

namespace {
bool isPointwise(const Shape &w, const std::vector<int64_t> &strides,
                 const std::vector<int64_t> &pads) {
  return w[2] == 1 && w[3] == 1 && strides[0] == 1 && strides[1] == 1 &&
         pads[0] == 0 && pads[1] == 0 && pads[2] == 0 && pads[3] == 0;
}
} // namespace

int64_t conv2dScratchSize(const Shape &x, const Shape &w, const Shape &y,
                          const std::vector<int64_t> &strides,
                          const std::vector<int64_t> &pads,
                          const std::vector<int64_t> &, int64_t group) {
  if (isPointwise(w, strides, pads))
    return 0;
  return (x[1] / group) * w[2] * w[3] * y[2] * y[3];
}

void conv2dKernel(const float *x, const Shape &xShape, const float *w,
                  const Shape &wShape, const float *bias, float *y,
                  const Shape &yShape, const std::vector<int64_t> &strides,
                  const std::vector<int64_t> &pads,
                  const std::vector<int64_t> &dilations, int64_t group,
                  float *scratch, ThreadPool &pool) {
  const int64_t n = xShape[0], c = xShape[1], h = xShape[2], wd = xShape[3];
  const int64_t o = wShape[0], kh = wShape[2], kw = wShape[3];
  const int64_t oh = yShape[2], ow = yShape[3];
  const int64_t cg = c / group, og = o / group;
  const int64_t kdim = cg * kh * kw, spatial = oh * ow;
  const bool pointwise = isPointwise(wShape, strides, pads);
  if (n * o * spatial == 0)
    return;
  for (int64_t b = 0; b < n; ++b) {
    for (int64_t g = 0; g < group; ++g) {
      const float *xg = x + (b * c + g * cg) * h * wd;
      const float *col = xg;
      if (!pointwise) {
        // col[(ci, i, j), (r, s)] = x[ci, r*sh - pt + i*dh, s*sw - pl + j*dw]
        pool.parallelFor(kdim, 4, [&](int64_t rb, int64_t re) {
          for (int64_t row = rb; row < re; ++row) {
            const int64_t ci = row / (kh * kw), i = (row / kw) % kh,
                          j = row % kw;
            float *dst = scratch + row * spatial;
            const float *src = xg + ci * h * wd;
            for (int64_t r = 0; r < oh; ++r) {
              const int64_t ih = r * strides[0] - pads[0] + i * dilations[0];
              float *d = dst + r * ow;
              if (ih < 0 || ih >= h) {
                std::memset(d, 0, ow * sizeof(float));
                continue;
              }
              const float *srow = src + ih * wd;
              const int64_t off = j * dilations[1] - pads[1];
              if (strides[1] == 1) {
                // Contiguous middle, zero edges.
                int64_t s0 = std::max<int64_t>(0, -off);
                int64_t s1 = std::min<int64_t>(ow, wd - off);
                if (s1 < s0)
                  s1 = s0;
                for (int64_t s = 0; s < s0; ++s)
                  d[s] = 0.0f;
                std::memcpy(d + s0, srow + s0 + off, (s1 - s0) * sizeof(float));
                for (int64_t s = s1; s < ow; ++s)
                  d[s] = 0.0f;
              } else {
                for (int64_t s = 0; s < ow; ++s) {
                  const int64_t iw = s * strides[1] + off;
                  d[s] = (iw >= 0 && iw < wd) ? srow[iw] : 0.0f;
                }
              }
            }
          }
        });
        col = scratch;
      }
      float *yg = y + (b * o + g * og) * spatial;
      sgemm(false, false, og, spatial, kdim, 1.0f, w + g * og * kdim, kdim,
            col, spatial, 0.0f, yg, spatial);
    }
    if (bias) {
      float *yb = y + b * o * spatial;
      pool.parallelFor(o, std::max<int64_t>(1, 16384 / spatial),
                       [&](int64_t ob, int64_t oe) {
                         for (int64_t oc = ob; oc < oe; ++oc) {
                           const float v = bias[oc];
                           float *p = yb + oc * spatial;
                           for (int64_t s = 0; s < spatial; ++s)
                             p[s] += v;
                         }
                       });
    }
  }
}

/// conv2d with a weight that changes between runs, on oneDNN
/// (ConvTraining.cpp); null where oneDNN has no kernel.
Step dnnlConvTrainingStep(const KernelContext &c);

namespace {

/// A conv on oneDNN (DnnlConv.h), with its folded ops (ConvPlan.h).
Step dnnlConvStep(const KernelContext &c, DnnlConv *conv) {
  KernelResources &res = c.resources;
  const size_t index = c.index;
  void *x0 = c.operand(0);
  ThreadPool *tp = &c.pool;
  float *srcScratch = res.convSrc.get(), *dstScratch = res.convDst.get();
  const int t = res.dnnlWrites[index], addend = res.fusions[index].addend;
  void *dst = c.ptrs[t];
  if (addend < 0 || res.fusions[index].inPlace)
    return [=] {
      return conv->run(static_cast<const float *>(x0),
                       static_cast<float *>(dst), srcScratch, dstScratch);
    };
  // A residual add folded in: the addend first goes where the conv's
  // sum post-op adds into, in that buffer's layout.
  const void *from = c.ptrs[addend];
  const size_t bytes = c.program.buffers[t].bytes;
  const bool sameLayout = res.layouts.layout[addend] == res.layouts.layout[t];
  LayoutReorder *convert =
      sameLayout
          ? nullptr
          : res.reorderFor(c.program.buffers[t].shape,
                           res.layouts.layout[addend], res.layouts.layout[t]);
  return [=] {
    if (!sameLayout) {
      TSL_RETURN_IF_ERROR(convert->run(from, dst));
    } else {
      tp->parallelFor(static_cast<int64_t>(bytes), 1 << 20,
                      [&](int64_t b, int64_t e) {
                        std::memcpy(static_cast<char *>(dst) + b,
                                    static_cast<const char *>(from) + b, e - b);
                      });
    }
    return conv->run(static_cast<const float *>(x0), static_cast<float *>(dst),
                     srcScratch, dstScratch);
  };
}

Step conv2dStep(const KernelContext &c) {
  if (DnnlConv *conv = c.resources.dnnlConvs[c.index].get())
    return dnnlConvStep(c, conv);
  // A weight that changes (training): oneDNN, its weight reordered each run
  // (TESSEL_CONV=im2col: not).
  const char *mode = std::getenv("TESSEL_CONV");
  if (!c.in(1).isReadOnly() && !(mode && std::string(mode) == "im2col"))
    if (Step s = dnnlConvTrainingStep(c))
      return s;
  const Op *o = &c.op;
  const BufferInfo *a = &c.in(0), *w = &c.in(1), *r = &c.out(0);
  void *x0 = c.operand(0), *x1 = c.operand(1), *y0 = c.result(0);
  void *x2 = o->operands.size() > 2 ? c.operand(2) : nullptr;
  float *sc = c.resources.scratch.data();
  ThreadPool *tp = &c.pool;
  return [=] {
    conv2dKernel(static_cast<const float *>(x0), a->shape,
                 static_cast<const float *>(x1), w->shape,
                 static_cast<const float *>(x2), static_cast<float *>(y0),
                 r->shape, o->strides, o->pads, o->dilations, o->group, sc,
                 *tp);
    return Status::ok();
  };
}

} // namespace

void registerConvBackwardKernels(KernelRegistry &r); // ConvTraining.cpp

void registerConvKernels(KernelRegistry &r) {
  r.add(OpKind::Conv2D, conv2dStep);
  registerConvBackwardKernels(r);
}

} // namespace tessel::runtime::cpu
