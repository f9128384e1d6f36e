//===- DnnlPool.h - max_pool through oneDNN, NCHW or NHWC -------*- C++ -*-===//
//
// ResNet's max_pool sits between two convs whose activations keep oneDNN's
// layouts (ConvPlan.h); oneDNN's pooling reads and writes any of them, so
// the pool needs no NCHW copy of its input and its readers no reorder.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_RUNTIME_CPU_DNNLPOOL_H
#define TESSEL_RUNTIME_CPU_DNNLPOOL_H

#include "DnnlConv.h"

namespace tessel::runtime::cpu {

/// Max pooling of 4-D f32 `x` into `y` (its shape fixes floor or ceil
/// mode), in those layouts, run as run(x, y); null if oneDNN cannot.
using DnnlPool = DnnlPrimitive;
std::unique_ptr<DnnlPool> createDnnlMaxPool(std::shared_ptr<DnnlContext> ctx,
                                            const Shape &x, const Shape &y,
                                            const std::vector<int64_t> &kernel,
                                            const std::vector<int64_t> &strides,
                                            const std::vector<int64_t> &pads,
                                            Layout src, Layout dst);

} // namespace tessel::runtime::cpu

#endif // TESSEL_RUNTIME_CPU_DNNLPOOL_H
