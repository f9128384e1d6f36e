//===- DnnlMatMul.h - matmul + bias + GELU as one oneDNN matmul -*- C++ -*-===//
//
// The transformer MLP's `gelu(x @ W + b)` with constant W and b (ConvPlan.h,
// planMatMulEpilogue): W is reordered once into oneDNN's layout when the
// executor is created, and the bias and GELU run in the GEMM's epilogue
// instead of two more passes over the activations.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_RUNTIME_CPU_DNNLMATMUL_H
#define TESSEL_RUNTIME_CPU_DNNLMATMUL_H

#include "DnnlConv.h"

namespace tessel::runtime::cpu {

/// y[rows, n] = gelu(a[rows, k] @ w[k, n] + bias[n]) (tanh or erf form), run
/// as run(a, y); null when oneDNN has no JIT kernel for it.
using DnnlMatMul = DnnlPrimitive;
std::unique_ptr<DnnlMatMul> createDnnlMatMul(std::shared_ptr<DnnlContext> ctx,
                                             int64_t rows, int64_t k, int64_t n,
                                             const float *w, const float *bias,
                                             bool tanhForm);

} // namespace tessel::runtime::cpu

#endif // TESSEL_RUNTIME_CPU_DNNLMATMUL_H
