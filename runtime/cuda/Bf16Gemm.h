//===- Bf16Gemm.h - GEMMs with bf16 operands on cuBLASLt --------*- C++ -*-===//
//
// matmul and gemm with `bf16_operands` (tesselc --precision bf16: both
// multiplied operands hold bf16 values in f32, docs/training.md). Each run
// converts the two f32 operands into bf16 copies in the shared scratch
// (launchToBf16: round to nearest even as the CPU's round_float, exact for
// these values) and runs cublasLtMatmul with bf16 A and B, f32 C and D and
// CUBLAS_COMPUTE_32F: the products are exact in f32 and only the order of
// the f32 sums differs from the CPU. The matmul descriptor, the layouts and
// the algorithm (cublasLtMatmulAlgoGetHeuristic) are chosen once, when the
// instruction's step is built.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_RUNTIME_CUDA_BF16GEMM_H
#define TESSEL_RUNTIME_CUDA_BF16GEMM_H

#include "DeviceResources.h"
#include "GemmPlan.h"
#include "tessel/runtime/Status.h"

#include <cstddef>
#include <cstdint>
#include <cublasLt.h>
#include <cuda_runtime.h>
#include <memory>

namespace tessel::runtime::cuda {

/// cuBLASLt's workspace, shared by every bf16 GEMM (one stream): 32 MiB,
/// NVIDIA's recommendation for Hopper.
constexpr size_t kLtWorkspaceBytes = size_t(32) << 20;

/// The bf16 copies of a GEMM instruction's two operands (aN and bN
/// elements) and cuBLASLt's workspace, in the executor's shared scratch:
/// [a | b | workspace], each part 256-byte aligned.
struct Bf16Operands {
  LateAddress base;
  int64_t aN = 0, bN = 0;
  size_t bOff = 0, wsOff = 0; // bytes from base

  /// Reserves the scratch; fails where the sizes overflow.
  static Status reserve(DeviceResources &res, int64_t aN, int64_t bN,
                        Bf16Operands &out);
  uint16_t *a() const { return base.get<uint16_t>(); }
  uint16_t *b() const {
    return reinterpret_cast<uint16_t *>(base.get<char>() + bOff);
  }
  void *workspace() const { return base.get<char>() + wsOff; }
  /// Converts `a` and `b` (f32) into the copies on `s`.
  Status convert(const float *a, const float *b, cudaStream_t s) const;
};

/// One cuBLASLt GEMM, C = alpha·op(A)·op(B) + beta·C over half A and B
/// (bf16, or f16: a half model's own f16 operands) and f32 C, with its
/// descriptors and algorithm.
class Bf16Gemm {
public:
  /// For the layouts of `g`, reading A from the element offset `aOff` of a
  /// bf16 array of `aN` elements whose first byte's address is a multiple
  /// of `aAlign` (B likewise), writing C in place at the byte address
  /// `cAddress` (or any number with its alignment: an offset from a
  /// 256-byte-aligned base); A and B are `operands` (CUDA_R_16BF or
  /// CUDA_R_16F). Fails, naming the GEMM, where a layout reaches past its
  /// array or cuBLASLt has no algorithm for it.
  static Status create(cublasLtHandle_t lt, const LtGemm &g, int64_t aOff,
                       int64_t aN, size_t aAlign, int64_t bOff, int64_t bN,
                       size_t bAlign, uint64_t cAddress,
                       std::shared_ptr<const Bf16Gemm> &out,
                       cudaDataType operands = CUDA_R_16BF);
  ~Bf16Gemm();
  Bf16Gemm(const Bf16Gemm &) = delete;
  Bf16Gemm &operator=(const Bf16Gemm &) = delete;

  /// Runs on `s` with `a` and `b` the copies' first elements (the offsets
  /// given at creation are added here) and a workspace of
  /// kLtWorkspaceBytes.
  Status run(float alpha, const uint16_t *a, const uint16_t *b, float beta,
             float *c, void *workspace, cudaStream_t s) const;

private:
  Bf16Gemm() = default;
  cublasLtHandle_t lt = nullptr;
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t la = nullptr, lb = nullptr, lc = nullptr;
  cublasLtMatmulAlgo_t algo{};
  int64_t aOff = 0, bOff = 0;
  size_t workspaceBytes = 0;
};

/// The largest power of two (at most 256) dividing the byte address or
/// offset `addr` and, for a batch (count > 1), the byte stride: the
/// alignment every matrix of a layout has.
size_t ltAlignment(uint64_t addr, long long strideBytes, int count);

} // namespace tessel::runtime::cuda

#endif // TESSEL_RUNTIME_CUDA_BF16GEMM_H
