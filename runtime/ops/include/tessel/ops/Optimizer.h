//===- Optimizer.h - adam_update and sgd_update, as both backends read them ===//
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

#include <cstdint>

namespace tessel::runtime {

/// adam_update's attributes. omb1, omb2: 1 - beta of the f32 attribute,
/// in double, rounded once: against PyTorch 2.15's AdamW on GPT-2-small
/// this lands 3x closer than float(1 - 0.999) (bench/run-train-compare's
/// loss column).
struct AdamParams {
  float beta1 = 0.9f, beta2 = 0.999f, omb1 = 0.1f, omb2 = 0.001f;
  float eps = 1e-8f, weightDecay = 0.0f;
};

inline AdamParams adamParams(const Op &op) {
  AdamParams k;
  k.beta1 = op.floatAttr("beta1", 0.9f);
  k.beta2 = op.floatAttr("beta2", 0.999f);
  k.omb1 = static_cast<float>(1.0 - double(k.beta1));
  k.omb2 = static_cast<float>(1.0 - double(k.beta2));
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
  return {in(0),  in(1),  in(2),  in(3),  in(4),       in(5),
          in(6),  res(0), res(1), res(2), c.in(0).numel};
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

} // namespace tessel::runtime

#endif // TESSEL_OPS_OPTIMIZER_H
