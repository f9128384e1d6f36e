//===- Fused.cpp - fused_elementwise on the CPU ---------------------------===//
//
// One pass over memory for a chain of elementwise ops
// (tessel/runtime/FusedProgram.h): the result is cut into blocks of kBlock
// elements, spread over the threads; per block, each input is loaded once
// (whole, one element, or its period; a bf16 or f16 one widened to f32),
// each instruction maps its functor (ScalarOps.h, BinaryOps.h with
// CpuMath: the unfused kernels' math) over the block in a buffer that
// stays in L1, and the last is stored (narrowed where the result is a
// half). A cast to f32 is the value it reads; one to a half rounds the
// block (HalfConvert.h: the cast kernel's loops).
//
//===----------------------------------------------------------------------===//
#include "HalfConvert.h"
#include "KernelRegistry.h"
#include "ThreadPool.h"
#include "VecMath.h"
#include "tessel/runtime/BinaryOps.h"
#include "tessel/runtime/FusedProgram.h"
#include "tessel/runtime/HalfFloat.h"
#include "tessel/runtime/ScalarOps.h"

#include <algorithm>
#include <type_traits>
#include <vector>

namespace tessel::runtime::cpu {
namespace {

constexpr int64_t kBlock = 256;

template <typename F>
void mapUnary(F f, const float *x, float *y, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i)
    y[i] = f(x[i]);
}

template <typename F>
void mapBinary(F f, const float *x, const float *y, float *z, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i)
    z[i] = f(x[i], y[i]);
}

/// A unary functor over its dtypes `Types` (Bool ones never reach here:
/// the load-time checks refuse them); gelu by its form.
template <typename Types, typename F>
void unary(F f, bool flag, const float *x, float *y, int64_t n) {
  if constexpr (std::is_same_v<F, scalar::Gelu<CpuMath>>) {
    if (flag) // the tanh form as a sigmoid (VecMath.h)
      mapUnary([](float v) { return vgeluTanh(v); }, x, y, n);
    else
      mapUnary([](float v) { return F{false}(v); }, x, y, n);
  } else if constexpr (!std::is_same_v<Types, scalar::Bool>) {
    mapUnary([f](float v) { return f(v); }, x, y, n);
  }
}

/// pow whose exponent is one element for the whole op (as the unfused
/// kernel's powByConstant: the functor's fast paths with the exponent a
/// constant of the loop).
void powScalar(const float *x, float e, float *out, int64_t n) {
  scalar::Pow<CpuMath> f;
  f.scalarExponent = true;
  if (e == 2.0f)
    mapUnary([f](float v) { return f(v, 2.0f); }, x, out, n);
  else if (e == 3.0f)
    mapUnary([f](float v) { return f(v, 3.0f); }, x, out, n);
  else if (e == 1.0f)
    mapUnary([f](float v) { return f(v, 1.0f); }, x, out, n);
  else if (e == 0.5f)
    mapUnary([f](float v) { return f(v, 0.5f); }, x, out, n);
  else if (e == -1.0f)
    mapUnary([f](float v) { return f(v, -1.0f); }, x, out, n);
  else
    mapUnary([f, e](float v) { return f(v, e); }, x, out, n);
}

/// Instruction `ins` over n elements; `scalarRhs`: its right operand is an
/// input of one element (the unfused binary kernel's setScalarRhs).
void apply(const FusedInstruction &ins, bool scalarRhs, const float *x,
           const float *y, float *out, int64_t n) {
  if (ins.kind == OpKind::Pow && scalarRhs)
    return powScalar(x, y[0], out, n);
  switch (ins.kind) {
#define TESSEL_FUSED_UNARY(Kind, Types, SetMembers)                            \
  case OpKind::Kind:                                                           \
    unary<scalar::Types>(scalar::Kind<CpuMath>{}, ins.flag, x, out, n);        \
    return;
    TESSEL_RUNTIME_UNARY_SCALAR_OPS(TESSEL_FUSED_UNARY)
#undef TESSEL_FUSED_UNARY
#define TESSEL_FUSED_BINARY(Kind, Types)                                       \
  case OpKind::Kind:                                                           \
    if constexpr (!std::is_same_v<scalar::Types, scalar::Integer>)             \
      mapBinary(scalar::Kind<CpuMath>{}, x, y, out, n);                        \
    return;
    TESSEL_RUNTIME_BINARY_SCALAR_OPS(TESSEL_FUSED_BINARY)
#undef TESSEL_FUSED_BINARY
  default:
    return; // the load-time checks admit no other kind
  }
}

Step fusedStep(const KernelContext &c) {
  FusedProgram p;
  std::vector<Shape> shapes;
  std::vector<DType> dtypes;
  std::vector<const void *> in;
  for (size_t i = 0; i < c.op.operands.size(); ++i) {
    shapes.push_back(c.in(i).shape);
    dtypes.push_back(c.in(i).dtype);
    in.push_back(c.operand(i));
  }
  const DType resultType = c.out(0).dtype;
  // The load-time checks accepted it.
  decodeFusedProgram(fusedProgramOf(c.op), shapes, dtypes, c.out(0).shape,
                     resultType, p);
  std::vector<bool> scalarRhs;
  for (const FusedInstruction &ins : p.code)
    scalarRhs.push_back(ins.b >= 0 &&
                        static_cast<size_t>(ins.b) < p.inputs.size() &&
                        p.inputs[ins.b].kind == FusedInput::Scalar);
  void *out = c.result(0);
  const int64_t numel = c.out(0).numel;
  ThreadPool *pool = &c.pool;
  // Element j of input i as f32.
  auto element = [](const void *x, DType t, int64_t j) {
    return t == DType::F32
               ? static_cast<const float *>(x)[j]
               : halfToF32(t, static_cast<const uint16_t *>(x)[j]);
  };
  return [=] {
    const int64_t blocks = (numel + kBlock - 1) / kBlock;
    const size_t inputs = p.inputs.size(), values = inputs + p.code.size();
    pool->parallelFor(blocks, 16, [&](int64_t begin, int64_t end) {
      // Each thread's blocks, kept between runs (at most 96 values of 256
      // floats): no allocation per run, which small ops would notice.
      thread_local std::vector<float> buf;
      thread_local std::vector<const float *> at;
      if (buf.size() < values * kBlock)
        buf.resize(values * kBlock);
      at.resize(values);
      auto slot = [&](size_t v) { return buf.data() + v * kBlock; };
      // One-element inputs fill their block once.
      for (size_t i = 0; i < inputs; ++i)
        if (p.inputs[i].kind == FusedInput::Scalar)
          std::fill(slot(i), slot(i) + kBlock,
                    element(in[i], p.inputs[i].dtype, 0));
      for (size_t v = 0; v < values; ++v)
        at[v] = slot(v);
      for (int64_t blk = begin; blk < end; ++blk) {
        const int64_t e0 = blk * kBlock, n = std::min(kBlock, numel - e0);
        for (size_t i = 0; i < inputs; ++i) {
          const FusedInput &fi = p.inputs[i];
          if (fi.kind == FusedInput::Whole) {
            if (fi.dtype == DType::F32)
              at[i] = static_cast<const float *>(in[i]) + e0; // in place
            else
              widenHalfArray(fi.dtype,
                             static_cast<const uint16_t *>(in[i]) + e0,
                             slot(i), n);
          } else if (fi.kind == FusedInput::Period) {
            // Runs of the period copied (widened where it is a half).
            float *dst = slot(i);
            int64_t j = e0 % fi.period;
            for (int64_t k = 0; k < n;) {
              const int64_t run = std::min(n - k, fi.period - j);
              if (fi.dtype == DType::F32)
                std::copy_n(static_cast<const float *>(in[i]) + j, run,
                            dst + k);
              else
                widenHalfArray(fi.dtype,
                               static_cast<const uint16_t *>(in[i]) + j,
                               dst + k, run);
              k += run;
              j = 0;
            }
          }
        }
        for (size_t k = 0; k < p.code.size(); ++k) {
          const FusedInstruction &ins = p.code[k];
          const bool last = k + 1 == p.code.size();
          if (ins.kind == OpKind::Cast) {
            // The value read is exact in f32; to f32 it is that value.
            if (last && ins.type != DType::F32) {
              narrowHalfArray(ins.type, at[ins.a],
                              static_cast<uint16_t *>(out) + e0, n);
            } else if (last) {
              std::copy(at[ins.a], at[ins.a] + n,
                        static_cast<float *>(out) + e0);
            } else if (ins.type == DType::F32) {
              at[inputs + k] = at[ins.a];
            } else {
              // An inner cast to a half: the unfused cast's rounding, then
              // its reader's exact widening.
              float *dst = slot(inputs + k);
              roundHalfArray(ins.type, at[ins.a], dst, n);
              at[inputs + k] = dst;
            }
            continue;
          }
          float *dst =
              last ? static_cast<float *>(out) + e0 : slot(inputs + k);
          apply(ins, scalarRhs[k], at[ins.a], ins.b >= 0 ? at[ins.b] : nullptr,
                dst, n);
          at[inputs + k] = dst;
        }
      }
    });
    return Status::ok();
  };
}

} // namespace

void registerFusedKernels(KernelRegistry &r) {
  addKernels(r, {{OpKind::FusedElementwise, fusedStep}});
}

} // namespace tessel::runtime::cpu
