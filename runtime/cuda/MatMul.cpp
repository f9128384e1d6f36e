//===- MatMul.cpp - matmul and gemm on CUDA (cuBLAS) ----------------------===//
//
// Row-major GEMMs through column-major cuBLAS: a row-major [r, c] matrix is
// the column-major [c, r] matrix with leading dimension c, so
// C = op(A)·op(B) (row-major) is computed as C^T = op(B)^T·op(A)^T, i.e.
// cublasSgemm(opB, opA, n, m, k, B, ldb, A, lda, C, n) with the row-major
// leading dimensions (GemmPlan.h).
//
// With `bf16_operands` both run on cuBLASLt with bf16 operands (Bf16Gemm.h);
// without it, cuBLAS in FP32. A half GEMM (bf16 or f16 operands and result:
// a half model's, which -tessel-float-normalization keeps half) sums in f32
// into an f32 result in the shared scratch and rounds it once into its
// half: PyTorch's half GEMM up to the order of the f32 sums, as the CPU
// computes it. It reads its own operands on cuBLASLt (tensor cores,
// makeLtHalf: bf16 or f16 A and B, f32 sums; a product of two halves is
// exact in f32); one with an empty dim, or layouts cuBLASLt has no
// algorithm for, widens its operands into f32 copies in the scratch for the
// FP32 path (makeHalf).
//
//===----------------------------------------------------------------------===//
#include "Bf16Gemm.h"
#include "tessel/ops/Broadcast.h"
#include "CudaKernelRegistry.h"
#include "CudaKernels.h"
#include "CudaStatus.h"
#include "GemmPlan.h"
#include "IndexPlan.h"
#include "RowMajorGemm.h"

#include <functional>

namespace tessel::runtime::cuda {

namespace {

/// Where a GEMM step reads and writes, asked when it runs: the
/// instruction's buffers, or a half GEMM's f32 copies in the scratch.
struct GemmAddresses {
  const float *a, *b;
  const void *c;
  float *y;
};
using AddressFn = std::function<GemmAddresses()>;

AddressFn ownAddresses(const KernelContext &ctx) {
  const GemmAddresses g{
      static_cast<const float *>(ctx.operand(0)),
      static_cast<const float *>(ctx.operand(1)),
      ctx.op.operands.size() > 2 ? ctx.operand(2) : nullptr,
      static_cast<float *>(ctx.result(0))};
  return [g] { return g; };
}

bool bf16Operands(const KernelContext &ctx) {
  return ctx.op.intAttr("bf16_operands", 0) != 0;
}

/// matmul with bf16_operands: both operands converted to bf16, then one
/// cublasLtMatmul per call of the plan (descriptors and algorithms chosen
/// here).
Status makeBf16MatMul(const KernelContext &ctx, const MatMulPlan &plan,
                      Step &out) {
  const float *a = static_cast<const float *>(ctx.operand(0));
  const float *b = static_cast<const float *>(ctx.operand(1));
  float *y = static_cast<float *>(ctx.result(0));
  Bf16Operands ops;
  TSL_RETURN_IF_ERROR(Bf16Operands::reserve(ctx.resources, ctx.in(0).numel,
                                            ctx.in(1).numel, ops));
  // Per call: the LtGemm's A is the matmul's b (columnMajor), B its a.
  std::vector<std::shared_ptr<const Bf16Gemm>> gemms;
  std::vector<int64_t> cOffs;
  for (const GemmCall &call : plan.calls) {
    const ColumnMajorCall c = columnMajor(call);
    std::shared_ptr<const Bf16Gemm> g;
    TSL_RETURN_IF_ERROR(Bf16Gemm::create(ctx.resources.lt, ltGemm(c), c.aOff,
                                         ops.bN, 256, c.bOff, ops.aN, 256,
                                         reinterpret_cast<uintptr_t>(y + c.cOff),
                                         g));
    gemms.push_back(std::move(g));
    cOffs.push_back(c.cOff);
  }
  const bool nothing = plan.nothing, zeros = plan.zeros;
  const size_t bytes = ctx.out(0).bytes;
  cudaStream_t s = ctx.stream;
  out = [=] {
    if (nothing)
      return Status::ok();
    if (zeros) { // k = 0: an empty sum
      TSL_CUDA(cudaMemsetAsync(y, 0, bytes, s), "cudaMemsetAsync");
      return Status::ok();
    }
    TSL_RETURN_IF_ERROR(ops.convert(a, b, s));
    for (size_t i = 0; i < gemms.size(); ++i)
      TSL_RETURN_IF_ERROR(gemms[i]->run(1.0f, ops.b(), ops.a(), 0.0f,
                                        y + cOffs[i], ops.workspace(), s));
    return Status::ok();
  };
  return Status::ok();
}

Status makeMatMulOn(const KernelContext &ctx, const AddressFn &where,
                    Step &out) {
  MatMulPlan plan;
  TSL_RETURN_IF_ERROR(
      planMatMul(ctx.in(0).shape, ctx.in(1).shape, ctx.out(0).shape, plan));
  if (bf16Operands(ctx))
    return makeBf16MatMul(ctx, plan, out);
  const size_t bytes = ctx.out(0).numel * sizeof(float);
  cudaStream_t s = ctx.stream;
  cublasHandle_t h = ctx.blas;
  out = [=] {
    const GemmAddresses at = where();
    const float *a = at.a, *b = at.b;
    float *y = at.y;
    if (plan.nothing)
      return Status::ok();
    if (plan.zeros) { // k = 0: an empty sum
      TSL_CUDA(cudaMemsetAsync(y, 0, bytes, s), "cudaMemsetAsync");
      return Status::ok();
    }
    return issueMatMul(
        plan, a, b, y,
        [h](int m, int n, int k, const float *A, int lda, long long sA,
            const float *B, int ldb, long long sB, float *C, int ldc,
            long long sC, int count) {
          const float one = 1.0f, zero = 0.0f;
          if (count == 1) {
            TSL_CUBLAS(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &one,
                                   A, lda, B, ldb, &zero, C, ldc),
                       "cublasSgemm");
          } else {
            TSL_CUBLAS(cublasSgemmStridedBatched(h, CUBLAS_OP_N, CUBLAS_OP_N, m,
                                                 n, k, &one, A, lda, sA, B, ldb,
                                                 sB, &zero, C, ldc, sC, count),
                       "cublasSgemmStridedBatched");
          }
          return Status::ok();
        });
  };
  return Status::ok();
}

Status makeGemmOn(const KernelContext &ctx, const AddressFn &where,
                  Step &out) {
  const Op &op = ctx.op;
  const Shape &as = ctx.in(0).shape;
  const Shape &bs = ctx.in(1).shape;
  const bool hasC = op.operands.size() > 2;
  const int64_t m = op.transA ? as[1] : as[0];
  const int64_t k = op.transA ? as[0] : as[1];
  const int64_t n = op.transB ? bs[0] : bs[1];
  if (!fitsInt(m) || !fitsInt(n) || !fitsInt(k) || !fitsInt(as[1]) ||
      !fitsInt(bs[1]) || !fitsInt(m * n))
    return Status::error("a matrix dim exceeds cuBLAS's int range");
  const bool useC = hasC && op.beta != 0.0f;
  StridedIndex cIx;
  if (useC) {
    Shape outShape = {m, n};
    TSL_RETURN_IF_ERROR(stridedIndexer(
        outShape, {broadcastStrides(ctx.in(2).shape, 2, outShape)}, cIx));
  }
  const float beta = useC ? op.beta : 0.0f, alpha = op.alpha;
  const bool ta = op.transA, tb = op.transB;
  const int lda = static_cast<int>(as[1]), ldb = static_cast<int>(bs[1]);
  cudaStream_t s = ctx.stream;
  cublasHandle_t h = ctx.blas;
  // bf16_operands: a and b converted to bf16, then cuBLASLt (Bf16Gemm.h).
  Bf16Operands ops;
  std::shared_ptr<const Bf16Gemm> bf16;
  if (bf16Operands(ctx) && m != 0 && n != 0 && k != 0) {
    TSL_RETURN_IF_ERROR(Bf16Operands::reserve(
        ctx.resources, ctx.in(0).numel, ctx.in(1).numel, ops));
    // The LtGemm's A is b, its B is a (issueRowMajorGemm's mapping).
    TSL_RETURN_IF_ERROR(Bf16Gemm::create(
        ctx.resources.lt,
        ltRowMajorGemm(ta, tb, static_cast<int>(m), static_cast<int>(n),
                       static_cast<int>(k), lda, ldb),
        0, ops.bN, 256, 0, ops.aN, 256,
        reinterpret_cast<uintptr_t>(ctx.result(0)), bf16));
  }
  out = [=] {
    const GemmAddresses at = where();
    const float *a = at.a, *b = at.b;
    const void *c = at.c;
    float *y = at.y;
    if (m == 0 || n == 0)
      return Status::ok();
    if (useC) // Y = C broadcast to [m, n], then Y = alpha·A·B + beta·Y
      TSL_RETURN_IF_ERROR(
          launched(launchStridedCopy(4, c, y, cIx, s), "gemm bias"));
    if (k == 0) { // BLAS leaves this case to the implementation; be explicit
      if (beta == 0.0f) {
        TSL_CUDA(cudaMemsetAsync(y, 0, m * n * sizeof(float), s),
                 "cudaMemsetAsync");
      } else {
        TSL_CUBLAS(cublasSscal(h, static_cast<int>(m * n), &beta, y, 1),
                   "cublasSscal");
      }
      return Status::ok();
    }
    if (bf16) {
      TSL_RETURN_IF_ERROR(ops.convert(a, b, s));
      return bf16->run(alpha, ops.b(), ops.a(), beta, y, ops.workspace(), s);
    }
    return gemmRowMajor(h, ta, tb, static_cast<int>(m), static_cast<int>(n),
                        static_cast<int>(k), alpha, a, lda, b, ldb, beta, y);
  };
  return Status::ok();
}

/// A half GEMM: its operands widened into f32 copies in the shared scratch
/// (a, b, c, then the f32 result), the FP32 GEMM on them, the result
/// rounded into the instruction's half.
Status makeHalf(const KernelContext &ctx, bool matmul, Step &out) {
  const DType half = ctx.out(0).dtype;
  const size_t n = ctx.op.operands.size();
  size_t off[4] = {0, 0, 0, 0}, total = 0;
  int64_t count[4] = {0, 0, 0, ctx.out(0).numel};
  for (size_t k = 0; k < n; ++k)
    count[k] = ctx.in(k).numel;
  for (int k = 0; k < 4; ++k) {
    off[k] = total;
    // 256-byte aligned, as cuBLAS prefers.
    total += (static_cast<size_t>(count[k]) * sizeof(float) + 255) / 256 * 256;
  }
  const LateAddress base = ctx.resources.reserveScratch(total);
  auto at = [base](size_t o) {
    return reinterpret_cast<float *>(base.get<char>() + o);
  };
  AddressFn where = [=] {
    return GemmAddresses{at(off[0]), at(off[1]), n > 2 ? at(off[2]) : nullptr,
                         at(off[3])};
  };
  Step f32;
  TSL_RETURN_IF_ERROR(matmul ? makeMatMulOn(ctx, where, f32)
                             : makeGemmOn(ctx, where, f32));
  const void *x[3] = {ctx.operand(0), ctx.operand(1),
                      n > 2 ? ctx.operand(2) : nullptr};
  void *y = ctx.result(0);
  cudaStream_t s = ctx.stream;
  out = [=] {
    for (size_t k = 0; k < n; ++k)
      if (count[k])
        TSL_RETURN_IF_ERROR(launched(
            launchCast(half, x[k], DType::F32, at(off[k]), count[k], s),
            "half GEMM operand"));
    TSL_RETURN_IF_ERROR(f32());
    if (!count[3])
      return Status::ok();
    return launched(launchCast(DType::F32, at(off[3]), half, y, count[3], s),
                    "half GEMM result");
  };
  return Status::ok();
}

/// A half GEMM on cuBLASLt: the instruction's own bf16 or f16 operands,
/// f32 sums into an f32 result in the shared scratch (a gemm's c widened
/// into it first, for beta), rounded once into the half result. The
/// scratch: [result f32 | c f32 | cuBLASLt's workspace], each part 256-byte
/// aligned.
Status makeLtHalf(const KernelContext &ctx, bool matmul, Step &out) {
  const Op &op = ctx.op;
  const DType half = ctx.out(0).dtype;
  const cudaDataType lt = half == DType::BF16 ? CUDA_R_16BF : CUDA_R_16F;
  const uint16_t *a = static_cast<const uint16_t *>(ctx.operand(0));
  const uint16_t *b = static_cast<const uint16_t *>(ctx.operand(1));
  const bool hasC = !matmul && op.operands.size() > 2;
  const void *c = hasC ? ctx.operand(2) : nullptr;
  void *y = ctx.result(0);
  const int64_t yN = ctx.out(0).numel, cN = hasC ? ctx.in(2).numel : 0;
  const int64_t aN = ctx.in(0).numel, bN = ctx.in(1).numel;
  auto padded = [](int64_t n) {
    return (static_cast<size_t>(n) * sizeof(float) + 255) / 256 * 256;
  };
  const size_t cAt = padded(yN), wsAt = cAt + padded(cN);
  const LateAddress base =
      ctx.resources.reserveScratch(wsAt + kLtWorkspaceBytes);
  const auto aAddr = reinterpret_cast<uintptr_t>(a);
  const auto bAddr = reinterpret_cast<uintptr_t>(b);
  // Per cuBLASLt call: the GEMM and its result's offset (elements). The
  // LtGemm's A is the op's b, its B the op's a (the row-major mapping).
  std::vector<std::shared_ptr<const Bf16Gemm>> gemms;
  std::vector<int64_t> yOffs;
  bool nothing = false, zeros = false, useC = false;
  float alpha = 1.0f, beta = 0.0f;
  StridedIndex cIx;
  if (matmul) {
    MatMulPlan plan;
    TSL_RETURN_IF_ERROR(
        planMatMul(ctx.in(0).shape, ctx.in(1).shape, ctx.out(0).shape, plan));
    nothing = plan.nothing;
    zeros = plan.zeros;
    if (!nothing && !zeros)
      for (const GemmCall &call : plan.calls) {
        const ColumnMajorCall cm = columnMajor(call);
        std::shared_ptr<const Bf16Gemm> g;
        TSL_RETURN_IF_ERROR(Bf16Gemm::create(
            ctx.resources.lt, ltGemm(cm), cm.aOff, bN, bAddr, cm.bOff, aN,
            aAddr, static_cast<uint64_t>(cm.cOff) * sizeof(float), g, lt));
        gemms.push_back(std::move(g));
        yOffs.push_back(cm.cOff);
      }
  } else {
    const Shape &as = ctx.in(0).shape, &bs = ctx.in(1).shape;
    const int64_t m = op.transA ? as[1] : as[0];
    const int64_t n = op.transB ? bs[0] : bs[1];
    const int64_t k = op.transA ? as[0] : as[1];
    if (!fitsInt(m) || !fitsInt(n) || !fitsInt(k) || !fitsInt(as[1]) ||
        !fitsInt(bs[1]) || !fitsInt(m * n))
      return Status::error("a matrix dim exceeds cuBLAS's int range");
    useC = hasC && op.beta != 0.0f;
    if (useC) {
      Shape outShape = {m, n};
      TSL_RETURN_IF_ERROR(stridedIndexer(
          outShape, {broadcastStrides(ctx.in(2).shape, 2, outShape)}, cIx));
    }
    alpha = op.alpha;
    beta = useC ? op.beta : 0.0f;
    std::shared_ptr<const Bf16Gemm> g;
    TSL_RETURN_IF_ERROR(Bf16Gemm::create(
        ctx.resources.lt,
        ltRowMajorGemm(op.transA, op.transB, static_cast<int>(m),
                       static_cast<int>(n), static_cast<int>(k),
                       static_cast<int>(as[1]), static_cast<int>(bs[1])),
        0, bN, bAddr, 0, aN, aAddr, 0, g, lt));
    gemms.push_back(std::move(g));
    yOffs.push_back(0);
  }
  cudaStream_t s = ctx.stream;
  out = [=] {
    if (nothing)
      return Status::ok();
    if (zeros) { // k = 0: an empty sum
      TSL_CUDA(cudaMemsetAsync(y, 0, yN * sizeof(uint16_t), s),
               "cudaMemsetAsync");
      return Status::ok();
    }
    float *acc = base.get<float>();
    void *ws = base.get<char>() + wsAt;
    if (useC) { // acc = c widened and broadcast to [m, n]
      float *wide = reinterpret_cast<float *>(base.get<char>() + cAt);
      TSL_RETURN_IF_ERROR(
          launched(launchCast(half, c, DType::F32, wide, cN, s), "gemm bias"));
      TSL_RETURN_IF_ERROR(
          launched(launchStridedCopy(4, wide, acc, cIx, s), "gemm bias"));
    }
    for (size_t i = 0; i < gemms.size(); ++i)
      TSL_RETURN_IF_ERROR(
          gemms[i]->run(alpha, b, a, beta, acc + yOffs[i], ws, s));
    return launched(launchCast(DType::F32, acc, half, y, yN, s),
                    "half GEMM result");
  };
  return Status::ok();
}

/// Whether a gemm has an empty dim (the FP32 path's special cases).
bool gemmHasEmptyDim(const KernelContext &ctx) {
  const Shape &as = ctx.in(0).shape, &bs = ctx.in(1).shape;
  return as[0] == 0 || as[1] == 0 || bs[0] == 0 || bs[1] == 0;
}

// A half GEMM that cuBLASLt has no algorithm for (its layouts' alignment)
// takes the widening path.
Status makeMatMul(const KernelContext &ctx, Step &out) {
  if (isHalf(ctx.out(0).dtype) && makeLtHalf(ctx, true, out).isOk())
    return Status::ok();
  if (isHalf(ctx.out(0).dtype))
    return makeHalf(ctx, true, out);
  return makeMatMulOn(ctx, ownAddresses(ctx), out);
}

Status makeGemm(const KernelContext &ctx, Step &out) {
  if (isHalf(ctx.out(0).dtype) && !gemmHasEmptyDim(ctx) &&
      makeLtHalf(ctx, false, out).isOk())
    return Status::ok();
  if (isHalf(ctx.out(0).dtype))
    return makeHalf(ctx, false, out);
  return makeGemmOn(ctx, ownAddresses(ctx), out);
}

} // namespace

void registerMatMulKernels(KernelRegistry &registry) {
  registerFamily(registry, kMatMulKinds, [](OpKind k) -> KernelFactory {
    return k == OpKind::MatMul ? makeMatMul : makeGemm;
  });
}

} // namespace tessel::runtime::cuda
