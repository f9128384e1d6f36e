//===- Layout.h - Memory layouts of 4-D activations -------------*- C++ -*-===//
#ifndef TESSEL_RUNTIME_CPU_LAYOUT_H
#define TESSEL_RUNTIME_CPU_LAYOUT_H

#include <cstdint>

namespace tessel::runtime::cpu {

/// How a 4-D [N, C, H, W] f32 arena buffer lies in memory. Graph inputs,
/// outputs and every buffer of a non-conv program are NCHW; ConvPlan.h lets
/// buffers between oneDNN kernels keep the layout those kernels use.
enum class Layout : uint8_t {
  NCHW,
  NHWC,    // channels last (oneDNN's brgconv)
  NChw16c, // 16 channels innermost, C % 16 == 0 (oneDNN's jit and Winograd)
};

} // namespace tessel::runtime::cpu

#endif // TESSEL_RUNTIME_CPU_LAYOUT_H
