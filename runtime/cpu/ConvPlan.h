//===- ConvPlan.h - Layouts and fusions around oneDNN convs -----*- C++ -*-===//
//
// Planned once, when a CPU executor is created, for programs whose convs run
// on oneDNN (DnnlConv.h):
//
// - Relu fusion: a conv whose result only a relu reads writes the relu's
//   result itself through a relu post-op, and the relu does nothing. Done
//   only where the relu's buffer overlaps no buffer that is live while the
//   conv runs (the arena planner reuses memory by liveness).
// - Channels-last layouts: oneDNN 2.6's direct convs read and write NHWC
//   (f32, AVX-512). Between two convs, reordering to NCHW and back costs two
//   passes over the activations per conv (most of the gap to ONNX Runtime
//   on ResNet-50), so 4-D f32 arena buffers that a conv writes in NHWC stay
//   NHWC (the same bytes, permuted) unless they are graph inputs or outputs.
//   Elementwise ops whose operands all have the result's shape (relu, add,
//   ...) keep the layout; any other reader of such a buffer gets an NCHW
//   copy made just before it runs.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_RUNTIME_CPU_CONVPLAN_H
#define TESSEL_RUNTIME_CPU_CONVPLAN_H

#include "tessel/runtime/Program.h"

#include <vector>

namespace tessel::runtime::cpu {

/// For each op: the op index of the relu to fuse into it, or -1. Only ops
/// with `eligible[i]` (convs that will run on oneDNN) are considered.
std::vector<int> planReluFusion(const Program &prog,
                                const std::vector<bool> &eligible);

struct LayoutPlan {
  /// By buffer id: the buffer holds NHWC.
  std::vector<bool> nhwc;
  /// By op index: operand positions whose (NHWC) buffer the op must read as
  /// an NCHW copy.
  std::vector<std::vector<int>> toPlain;
};

/// `convDst[i]`: for an op that runs on oneDNN, the buffer it writes (its
/// result, or the fused relu's) and whether its kernel writes NHWC
/// (`writesNhwc[i]`); -1 for other ops. `skipped[i]`: ops folded into a
/// conv.
LayoutPlan planNhwcLayouts(const Program &prog,
                              const std::vector<int> &convDst,
                              const std::vector<bool> &writesNhwc,
                              const std::vector<bool> &skipped);

} // namespace tessel::runtime::cpu

#endif // TESSEL_RUNTIME_CPU_CONVPLAN_H
