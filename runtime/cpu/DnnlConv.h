//===- DnnlConv.h - conv2d through oneDNN's direct kernels ------*- C++ -*-===//
//
// A conv2d with constant weights (ResNet's 3x3 and strided convs) runs on
// oneDNN's direct convolution (brgconv on AVX-512) instead of im2col + GEMM:
// 25-35% faster on ResNet-50's 3x3 shapes at one thread, reorders included
// (runtime/README.md). The weights are reordered into oneDNN's blocked layout
// once, when the executor is created (as ONNX Runtime prepacks). oneDNN's
// kernels want NHWC (brgconv) or nChw16c (jit, Winograd) activations: arena
// buffers between convs stay so where ConvPlan.h can keep them; others are
// reordered through a scratch pair shared by every conv of the program.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_RUNTIME_CPU_DNNLCONV_H
#define TESSEL_RUNTIME_CPU_DNNLCONV_H

#include "Layout.h"
#include "tessel/runtime/Status.h"
#include "tessel/runtime/Tensor.h"

#include <cstddef>
#include <memory>
#include <vector>

namespace tessel::runtime::cpu {

/// The oneDNN engine and stream of one executor.
class DnnlContext;
std::shared_ptr<DnnlContext> createDnnlContext();

/// What a conv does to its result before storing it: dst = relu?(conv(x) +
/// (sum ? dst : 0)).
struct ConvPostOps {
  bool sum = false;
  bool relu = false;
};

/// How to pick the kernel: Winograd (F(4x4, 3x3) on AVX-512: 3x3 stride-1
/// convs in about half the time, with rounding errors a few times larger
/// than direct convolution's, still ~1e-6 relative on ResNet-50) where
/// oneDNN has it, and the activation layout to build it for (NCHW: let
/// oneDNN choose).
struct ConvAlgo {
  bool winograd = false;
  Layout layout = Layout::NCHW;
};

/// Whether oneDNN has a Winograd convolution on this CPU (its kernels need
/// AVX-512; ONEDNN_MAX_CPU_ISA=AVX2 shows an AVX2-only machine's answer).
bool dnnlHasWinograd();

class DnnlConv {
public:
  /// A conv of these shapes and attributes with constant `weights` (and
  /// `bias`, or null), or null when oneDNN has no direct kernel for it (the
  /// caller keeps im2col + GEMM).
  static std::unique_ptr<DnnlConv>
  create(std::shared_ptr<DnnlContext> ctx, const Shape &x, const Shape &w,
         const Shape &y, const std::vector<int64_t> &strides,
         const std::vector<int64_t> &pads,
         const std::vector<int64_t> &dilations, int64_t group,
         const float *weights, const float *bias, ConvPostOps post = {},
         ConvAlgo algo = {});
  ~DnnlConv();

  /// The layout the kernel writes (NCHW also for layouts no buffer keeps).
  Layout dstLayout() const;
  /// The layouts of the arena buffers it reads and writes (default NCHW).
  Status setBufferLayouts(Layout src, Layout dst);
  /// The kernel oneDNN chose ("brgconv:avx512_core", ...).
  const char *kernelName() const;

  /// Bytes of the reordered source and destination scratch this conv needs.
  size_t srcScratchBytes() const;
  size_t dstScratchBytes() const;

  /// y = conv(x) (with its post-ops) in the buffers' layouts; `srcScratch` / `dstScratch` hold at least
  /// srcScratchBytes() / dstScratchBytes() (64-byte aligned).
  Status run(const float *x, float *y, void *srcScratch, void *dstScratch);

private:
  struct Impl;
  explicit DnnlConv(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl;
};

/// One oneDNN primitive from a source to a destination buffer, its other
/// arguments (weights, bias) fixed when it is created (DnnlContext.h): a
/// layout reorder, a max pool (DnnlPool.h), a matmul with its epilogue
/// (DnnlMatMul.h).
class DnnlPrimitive {
public:
  struct Impl;
  explicit DnnlPrimitive(std::unique_ptr<Impl> impl);
  ~DnnlPrimitive();
  /// dst = primitive(src).
  Status run(const void *src, void *dst);

private:
  std::unique_ptr<Impl> impl;
};

/// Converts a 4-D f32 tensor between layouts; null when oneDNN cannot (it
/// always can for f32).
using LayoutReorder = DnnlPrimitive;
std::unique_ptr<LayoutReorder>
createLayoutReorder(std::shared_ptr<DnnlContext> ctx, const Shape &shape,
                    Layout from, Layout to);

} // namespace tessel::runtime::cpu

#endif // TESSEL_RUNTIME_CPU_DNNLCONV_H
