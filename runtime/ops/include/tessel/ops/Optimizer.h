//===- Optimizer.h - adam_update and sgd_update, as both backends read them
//===//
//
// What the CPU kernels (cpu/Training.cpp) and the CUDA kernels
// (cuda/Training.cpp, Training.cu) of the optimizer updates take from an
// instruction (dialects/tessel/TrainingOps.td): the attributes, read once
// when the step is built, and the buffers' addresses (host or device).
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_OPS_OPTIMIZER_H
#define TESSEL_OPS_OPTIMIZER_H

#include "tessel/ops/KernelFamilies.h"
#include "tessel/runtime/ScalarOps.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>

namespace tessel::runtime {

/// The double a user's decimal beta was (0.999 for the f32 0.99900001f):
/// the shortest decimal that gives `f` back, read as a double. The
/// attributes are f32; PyTorch's betas are Python floats.
inline double decimalOf(float f) {
  char text[32];
  for (int digits = 1; digits <= 9; ++digits) {
    std::snprintf(text, sizeof(text), "%.*g", digits, double(f));
    if (std::strtof(text, nullptr) == f)
      return std::strtod(text, nullptr);
  }
  return double(f);
}

/// adam_update's attributes. omb1, omb2: 1 - beta as PyTorch computes it
/// (1 - 0.999 in Python floats, rounded once to f32 where lerp_ and
/// addcmul_ take it); 1 - the f32 beta would be 1.3e-5 smaller for 0.999,
/// and exp_avg_sq with it.
struct AdamParams {
  float beta1 = 0.9f, beta2 = 0.999f, omb1 = 0.1f, omb2 = 0.001f;
  float eps = 1e-8f, weightDecay = 0.0f;
};

inline AdamParams adamParams(const Op &op) {
  AdamParams k;
  k.beta1 = op.floatAttr("beta1", 0.9f);
  k.beta2 = op.floatAttr("beta2", 0.999f);
  k.omb1 = static_cast<float>(1.0 - decimalOf(k.beta1));
  k.omb2 = static_cast<float>(1.0 - decimalOf(k.beta2));
  k.eps = op.floatAttr("eps", 1e-8f);
  k.weightDecay = op.floatAttr("weight_decay", 0.0f);
  return k;
}

/// adam_update's buffers: param, grad, exp_avg, exp_avg_sq and the scalars
/// the step's program computes (step size, sqrt of the second bias
/// correction, the decoupled decay factor) -> param, exp_avg, exp_avg_sq
/// (in place or not), n floats each.
struct AdamBuffers {
  const float *p, *g, *m, *v, *stepSize, *sqrtBc2, *decay;
  float *p1, *m1, *v1;
  int64_t n;
};

inline AdamBuffers adamBuffers(const InstructionRef &c) {
  auto in = [&](size_t i) { return static_cast<const float *>(c.operand(i)); };
  auto res = [&](size_t i) { return static_cast<float *>(c.result(i)); };
  return {in(0), in(1),  in(2),  in(3),  in(4),        in(5),
          in(6), res(0), res(1), res(2), c.in(0).numel};
}

/// sgd_update's attributes.
struct SgdParams {
  float momentum = 0.0f, weightDecay = 0.0f;
  bool nesterov = false;
};

inline SgdParams sgdParams(const Op &op) {
  SgdParams k;
  k.momentum = op.floatAttr("momentum", 0.0f);
  k.weightDecay = op.floatAttr("weight_decay", 0.0f);
  k.nesterov = op.intAttr("nesterov", 0) != 0;
  return k;
}

/// sgd_update's buffers: param, grad, momentum buffer and the scalar
/// learning rate -> param, momentum buffer, n floats each.
struct SgdBuffers {
  const float *p, *g, *buf, *lr;
  float *p1, *buf1;
  int64_t n;
};

inline SgdBuffers sgdBuffers(const InstructionRef &c) {
  auto in = [&](size_t i) { return static_cast<const float *>(c.operand(i)); };
  auto res = [&](size_t i) { return static_cast<float *>(c.result(i)); };
  return {in(0), in(1), in(2), in(3), res(0), res(1), c.in(0).numel};
}

/// The updates' math, once for both backends, in the order of PyTorch 2's
/// single-tensor torch.optim code on the CPU: `M` is the backend's math
/// library (CpuMath, CudaMath), whose add, sub, mul, div and sqrt each
/// round once and whose fma rounds once, where ATen's vectorised kernels
/// fuse (lerp_, add_ with alpha): so that both backends give PyTorch's
/// bits wherever the gradients are PyTorch's.

/// Coupled weight decay (Adam's and SGD's `weight_decay`):
/// grad.add(param, alpha=wd), p * wd + g fused.
template <class M>
TESSEL_HOST_DEVICE inline float coupledDecay(float g, float p, float wd) {
  return M::fma(p, wd, g);
}

/// PyTorch's single-tensor Adam(W) step on one element (the op's
/// description): p, m, v updated from g (after coupledDecay where
/// weight_decay is set) and the step's scalars:
///   param.mul_(decay)                          p * decay
///   exp_avg.lerp_(grad, 1 - beta1)             m + (1 - beta1) (g - m), fused
///   exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
///                                              v beta2 + ((1 - beta2) g) g
///   denom = (exp_avg_sq.sqrt() / sqrt_bc2).add_(eps)
///   param.addcdiv_(exp_avg, denom, value=-step_size)
///                                              p + ((-step_size) m) / denom
template <class M> struct AdamStep {
  AdamParams k;
  float stepSize, sqrtBc2, decay;
  TESSEL_HOST_DEVICE void operator()(float &p, float g, float &m,
                                     float &v) const {
    const float pd = M::mul(p, decay);
    const float mi = M::fma(k.omb1, M::sub(g, m), m);
    const float vi = M::add(M::mul(v, k.beta2), M::mul(M::mul(k.omb2, g), g));
    const float denom = M::add(M::div(M::sqrt(vi), sqrtBc2), k.eps);
    p = M::add(pd, M::div(M::mul(-stepSize, mi), denom));
    m = mi;
    v = vi;
  }
};

/// PyTorch's single-tensor SGD step with momentum on one element: p and
/// the momentum buffer b from d (the gradient, after coupledDecay):
///   buf.mul_(momentum).add_(d)                 b momentum + d
///   d = d.add(buf, alpha=momentum) (nesterov)  buf momentum + d, fused
///   param.add_(d, alpha=-lr)                   d (-lr) + p, fused
template <class M> struct SgdStep {
  SgdParams k;
  float lr;
  TESSEL_HOST_DEVICE void operator()(float &p, float d, float &b) const {
    const float bi = M::add(M::mul(b, k.momentum), d);
    const float step = k.nesterov ? M::fma(bi, k.momentum, d) : bi;
    p = M::fma(step, -lr, p);
    b = bi;
  }
};

} // namespace tessel::runtime

#endif // TESSEL_OPS_OPTIMIZER_H
