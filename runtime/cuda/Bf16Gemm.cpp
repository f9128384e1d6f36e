//===- Bf16Gemm.cpp - GEMMs with bf16 operands on cuBLASLt ----------------===//
#include "Bf16Gemm.h"

#include "CudaKernels.h"
#include "CudaStatus.h"

#include <string>

namespace tessel::runtime::cuda {

namespace {

std::string layoutString(const LtLayout &l) {
  std::string s = std::to_string(l.rows) + "x" + std::to_string(l.cols) +
                  " ld " + std::to_string(l.ld);
  if (l.count > 1)
    s += " batch " + std::to_string(l.count) + " stride " +
         std::to_string(l.stride);
  return s;
}

std::string gemmString(const LtGemm &g) {
  return std::string("cuBLASLt bf16 GEMM (A ") + (g.transA ? "T " : "") +
         layoutString(g.a) + ", B " + (g.transB ? "T " : "") +
         layoutString(g.b) + ", C " + layoutString(g.c) + ")";
}

Status makeLayout(const LtLayout &l, cudaDataType_t type,
                  cublasLtMatrixLayout_t &out) {
  TSL_CUBLAS(cublasLtMatrixLayoutCreate(&out, type, l.rows, l.cols, l.ld),
             "cublasLtMatrixLayoutCreate");
  if (l.count > 1) {
    const int32_t count = l.count;
    const int64_t stride = l.stride;
    TSL_CUBLAS(cublasLtMatrixLayoutSetAttribute(
                   out, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count,
                   sizeof count),
               "cublasLtMatrixLayoutSetAttribute(BATCH_COUNT)");
    TSL_CUBLAS(cublasLtMatrixLayoutSetAttribute(
                   out, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride,
                   sizeof stride),
               "cublasLtMatrixLayoutSetAttribute(STRIDED_BATCH_OFFSET)");
  }
  return Status::ok();
}

/// Owns a matmul preference for the length of create().
struct Preference {
  cublasLtMatmulPreference_t p = nullptr;
  ~Preference() {
    if (p)
      cublasLtMatmulPreferenceDestroy(p);
  }
};

Status setAlignment(cublasLtMatmulPreference_t p,
                    cublasLtMatmulPreferenceAttributes_t attr,
                    uint32_t bytes) {
  TSL_CUBLAS(cublasLtMatmulPreferenceSetAttribute(p, attr, &bytes,
                                                  sizeof bytes),
             "cublasLtMatmulPreferenceSetAttribute(MIN_ALIGNMENT)");
  return Status::ok();
}

size_t roundUp256(size_t v) { return (v + 255) / 256 * 256; }

} // namespace

size_t ltAlignment(uint64_t addr, long long strideBytes, int count) {
  uint64_t bits = addr | 256u;
  if (count > 1 && strideBytes != 0)
    bits |= static_cast<uint64_t>(strideBytes < 0 ? -strideBytes : strideBytes);
  return static_cast<size_t>(bits & (~bits + 1)); // the lowest set bit
}

Status Bf16Operands::reserve(DeviceResources &res, int64_t aN, int64_t bN,
                             Bf16Operands &out) {
  constexpr int64_t kMax = int64_t(1) << 60; // bytes: far from overflow
  if (aN < 0 || bN < 0 || aN > kMax / 2 || bN > kMax / 2)
    return Status::error("a bf16 GEMM operand of " +
                         std::to_string(aN > bN ? aN : bN) +
                         " elements is too large for its bf16 copy");
  out.aN = aN;
  out.bN = bN;
  out.bOff = roundUp256(static_cast<size_t>(aN) * 2);
  out.wsOff = out.bOff + roundUp256(static_cast<size_t>(bN) * 2);
  out.base = res.reserveScratch(out.wsOff + kLtWorkspaceBytes);
  if (!res.lt)
    TSL_CUBLAS(cublasLtCreate(&res.lt), "cublasLtCreate");
  return Status::ok();
}

Status Bf16Operands::convert(const float *a, const float *b,
                             cudaStream_t s) const {
  TSL_RETURN_IF_ERROR(
      launched(launchToBf16(a, this->a(), aN, s), "bf16 operand"));
  return launched(launchToBf16(b, this->b(), bN, s), "bf16 operand");
}

Status Bf16Gemm::create(cublasLtHandle_t lt, const LtGemm &g, int64_t aOff,
                        int64_t aN, size_t aAlign, int64_t bOff, int64_t bN,
                        size_t bAlign, uint64_t cAddress,
                        std::shared_ptr<const Bf16Gemm> &out,
                        cudaDataType operands) {
  const std::string what = gemmString(g);
  if (aOff < 0 || bOff < 0 || aOff + ltExtent(g.a) > aN ||
      bOff + ltExtent(g.b) > bN)
    return Status::error(what + " reads past its half operands (" +
                         std::to_string(aN) + " and " + std::to_string(bN) +
                         " elements)");
  std::shared_ptr<Bf16Gemm> gemm(new Bf16Gemm());
  gemm->lt = lt;
  gemm->aOff = aOff;
  gemm->bOff = bOff;
  TSL_CUBLAS(cublasLtMatmulDescCreate(&gemm->desc, CUBLAS_COMPUTE_32F,
                                      CUDA_R_32F),
             "cublasLtMatmulDescCreate");
  const cublasOperation_t ta = g.transA ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t tb = g.transB ? CUBLAS_OP_T : CUBLAS_OP_N;
  TSL_CUBLAS(cublasLtMatmulDescSetAttribute(
                 gemm->desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta),
             "cublasLtMatmulDescSetAttribute(TRANSA)");
  TSL_CUBLAS(cublasLtMatmulDescSetAttribute(
                 gemm->desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb),
             "cublasLtMatmulDescSetAttribute(TRANSB)");
  TSL_RETURN_IF_ERROR(makeLayout(g.a, operands, gemm->la));
  TSL_RETURN_IF_ERROR(makeLayout(g.b, operands, gemm->lb));
  TSL_RETURN_IF_ERROR(makeLayout(g.c, CUDA_R_32F, gemm->lc));

  // The heuristic may only pick algorithms that work with the operands'
  // real alignment (its default assumes 256 bytes).
  Preference pref;
  TSL_CUBLAS(cublasLtMatmulPreferenceCreate(&pref.p),
             "cublasLtMatmulPreferenceCreate");
  const uint64_t ws = kLtWorkspaceBytes;
  TSL_CUBLAS(cublasLtMatmulPreferenceSetAttribute(
                 pref.p, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws,
                 sizeof ws),
             "cublasLtMatmulPreferenceSetAttribute(MAX_WORKSPACE_BYTES)");
  const uint32_t alignA = static_cast<uint32_t>(
      ltAlignment(aAlign | uint64_t(aOff) * 2, g.a.stride * 2, g.a.count));
  const uint32_t alignB = static_cast<uint32_t>(
      ltAlignment(bAlign | uint64_t(bOff) * 2, g.b.stride * 2, g.b.count));
  const uint32_t alignC = static_cast<uint32_t>(ltAlignment(
      cAddress, g.c.stride * 4, g.c.count));
  TSL_RETURN_IF_ERROR(setAlignment(
      pref.p, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, alignA));
  TSL_RETURN_IF_ERROR(setAlignment(
      pref.p, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, alignB));
  TSL_RETURN_IF_ERROR(setAlignment(
      pref.p, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, alignC));
  TSL_RETURN_IF_ERROR(setAlignment(
      pref.p, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, alignC));

  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  TSL_CUBLAS(cublasLtMatmulAlgoGetHeuristic(lt, gemm->desc, gemm->la,
                                            gemm->lb, gemm->lc, gemm->lc,
                                            pref.p, 1, &result, &found),
             "cublasLtMatmulAlgoGetHeuristic for the " + what);
  if (found == 0)
    return Status::error("cuBLASLt has no algorithm for the " + what);
  gemm->algo = result.algo;
  gemm->workspaceBytes = result.workspaceSize;
  out = std::move(gemm);
  return Status::ok();
}

Bf16Gemm::~Bf16Gemm() {
  for (cublasLtMatrixLayout_t l : {la, lb, lc})
    if (l)
      cublasLtMatrixLayoutDestroy(l);
  if (desc)
    cublasLtMatmulDescDestroy(desc);
}

Status Bf16Gemm::run(float alpha, const uint16_t *a, const uint16_t *b,
                     float beta, float *c, void *workspace,
                     cudaStream_t s) const {
  TSL_CUBLAS(cublasLtMatmul(lt, desc, &alpha, a + aOff, la, b + bOff, lb,
                            &beta, c, lc, c, lc, &algo, workspace,
                            workspaceBytes, s),
             "cublasLtMatmul");
  return Status::ok();
}

} // namespace tessel::runtime::cuda
