//===- Bf16MatMul.h - bf16 GEMMs on oneDNN ----------------------*- C++ -*-===//
//
// tesselc --precision bf16 marks each matmul and gemm whose operands hold
// bf16 values (f32 with the low 16 bits zero: -tessel-mark-bf16-operands)
// with `bf16_operands`. Where the CPU has bf16 dot products (oneDNN's ISA
// avx512_core_bf16 or better), such an op runs as a oneDNN matmul with bf16
// source and weights and an f32 destination: the operands are converted by
// taking the upper half of their bits (exact for those values), the
// products and sums are f32 as in the emulated f32 GEMM, so only the order
// of the sums differs. Elsewhere the op stays the f32 GEMM on the rounded
// values (the emulation), with a remark once per process.
//
// The same class runs a half model's own GEMMs (a matmul or gemm whose
// operands and result are all bf16, or all f16: -tessel-float-normalization
// keeps them half): oneDNN's matmul on those types, f32 sums rounded once
// into the half result, where oneDNN has a kernel for them that is not its
// reference one (MatMul.cpp widens them to f32 elsewhere).
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_RUNTIME_CPU_BF16MATMUL_H
#define TESSEL_RUNTIME_CPU_BF16MATMUL_H

#include "DnnlConv.h"
#include "tessel/runtime/Program.h"

#include <cstdint>
#include <memory>
#include <string>

namespace tessel::runtime::cpu {

class ThreadPool;

/// Whether oneDNN runs bf16 matmuls on this CPU's bf16 instructions. When
/// not, `why` says which ISA oneDNN found. TESSEL_BF16=emulate answers no
/// (to compare the two paths).
bool bf16GemmsAvailable(std::string &why);

/// Whether ops marked bf16_operands (GEMMs and convolutions) run on
/// oneDNN's bf16 kernels here; where not, the first call in the process
/// says why in a remark on stderr (they stay f32 kernels on the rounded
/// values, the emulation).
bool bf16KernelsUsable();

/// dst[i] = the upper 16 bits of src[i]: the bf16 of an f32 that holds a
/// bf16 value, exactly.
void toBf16(const float *src, uint16_t *dst, int64_t n, ThreadPool &pool);

/// A matmul or gemm instruction on oneDNN's bf16 matmul.
class Bf16MatMul {
public:
  /// For instruction `op` (a matmul or gemm with f32 operands marked
  /// bf16_operands, or with bf16 or f16 operands and result) of `prog`;
  /// null when oneDNN has no fast kernel for its types and shapes (the
  /// caller keeps the f32 GEMM).
  static std::unique_ptr<Bf16MatMul> create(std::shared_ptr<DnnlContext> ctx,
                                            const Program &prog,
                                            const Op &op);
  ~Bf16MatMul();
  /// y = alpha * op(a) op(b) + beta * y over bf16 (or a half GEMM's f16)
  /// operands in the instruction's shapes (beta 0 unless a gemm's c was
  /// written into y); y is the result's type (f32 for marked operands).
  Status run(const uint16_t *a, const uint16_t *b, void *y);
  /// Whether the gemm adds c: run() expects it broadcast into y first.
  bool addsC() const;
  /// The kernel oneDNN chose ("brg:avx512_core_bf16", ...).
  const char *kernelName() const;

private:
  struct Impl;
  explicit Bf16MatMul(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl;
};

} // namespace tessel::runtime::cpu

#endif // TESSEL_RUNTIME_CPU_BF16MATMUL_H
