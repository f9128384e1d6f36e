//===- ConvPlan.h - Layouts and fusions around oneDNN kernels ---*- C++ -*-===//
//
// Planned once, when a CPU executor is created, for programs whose convs run
// on oneDNN (DnnlConv.h):
//
// - Fusion: a conv whose result only a relu reads writes the relu's result
//   itself through a relu post-op, and the relu does nothing. A conv whose
//   result only an add of a same-shape addend reads (ResNet's residual,
//   maybe followed by a relu) writes the add's (or the relu's) result: the
//   addend is copied there first and a sum post-op adds the conv into it.
//   Done only where that buffer overlaps no buffer live from the conv to the
//   last fused op (the arena planner reuses memory by liveness), and where
//   the addend exists when the conv runs.
// - Layouts: oneDNN's conv kernels read and write NHWC (brgconv) or
//   nChw16c (jit, Winograd), not NCHW. Between two convs, reordering to NCHW
//   and back costs two passes over the activations per conv (most of the gap
//   to ONNX Runtime on ResNet-50), so 4-D f32 arena buffers that a kernel
//   writes in its layout stay in it (the same bytes, permuted; nChw16c only
//   where C % 16 == 0) unless they are graph inputs or outputs. Elementwise
//   ops whose operands all have the result's shape and layout (relu, add,
//   ...) keep it; any other reader of such a buffer gets an NCHW copy made
//   just before it runs.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_RUNTIME_CPU_CONVPLAN_H
#define TESSEL_RUNTIME_CPU_CONVPLAN_H

#include "Layout.h"
#include "tessel/runtime/Program.h"

#include <vector>

namespace tessel::runtime::cpu {

/// Ops folded into a conv, and what the conv then writes.
struct ConvFusion {
  int add = -1;    // the add op folded in, or -1
  int addend = -1; // its other operand (buffer id), copied into `writes`
  int relu = -1;   // the relu op folded in, or -1
  int writes = -1; // the buffer the conv writes; -1: no fusion
  /// `writes` shares the addend's bytes (the planner made the add in
  /// place): no copy, and `writes` keeps the addend's layout.
  bool inPlace = false;
};

/// For each op: its fusion (all -1 where none). Only ops with
/// `eligible[i]` (convs that will run on oneDNN) are considered.
std::vector<ConvFusion> planConvFusion(const Program &prog,
                                       const std::vector<bool> &eligible);

/// A matmul's epilogue folded into it: matmul -> add of a constant [N] bias
/// -> gelu, the transformer MLP's first half, becomes one oneDNN matmul with
/// a bias and a GELU post-op (measured on GPT-2's c_fc, 1 thread: 6.0 ms
/// against 6.9 ms for sgemm + add + gelu).
struct MatMulEpilogue {
  int add = -1;          // the add op folded in; -1: no fusion
  int bias = -1;         // its bias (buffer id)
  int gelu = -1;         // the gelu op folded in
  bool tanhForm = false; // the gelu's tanh approximation
  int writes = -1;       // the buffer the matmul writes (the gelu's)
};

/// For each op: its epilogue (all -1 where none). Only ops with
/// `eligible[i]` (matmuls whose B is a constant [K, N]) are considered.
std::vector<MatMulEpilogue>
planMatMulEpilogue(const Program &prog, const std::vector<bool> &eligible);

struct LayoutPlan {
  /// By buffer id.
  std::vector<Layout> layout;
  /// By op index: operand positions whose (non-NCHW) buffer the op must read
  /// as an NCHW copy.
  std::vector<std::vector<int>> toPlain;
};

/// `dnnlDst[i]`: for an op that runs on oneDNN, the buffer it writes (its
/// result, or the fused relu's) and the layout its kernel writes
/// (`writes[i]`); -1 for other ops. `sameLayoutAs[i]`: a buffer whose layout
/// that buffer must have instead (an in-place addend; a pool's input), or
/// -1. `skipped[i]`: ops folded into a conv.
LayoutPlan planLayouts(const Program &prog, const std::vector<int> &dnnlDst,
                       const std::vector<Layout> &writes,
                       const std::vector<int> &sameLayoutAs,
                       const std::vector<bool> &skipped);

} // namespace tessel::runtime::cpu

#endif // TESSEL_RUNTIME_CPU_CONVPLAN_H
