//===- CudaKernels.h - CUDA kernels of the instruction set ------*- C++ -*-===//
//
// Host-side launchers of the kernels, grouped by kernel family: each
// family's launchers are defined in its device code, <Family>.cu (Reduce.cu
// beside Reduce.cpp). Every pointer is device memory, or pinned host memory
// mapped into the device's address space (a STATE buffer kept in host
// memory: Gemini's host chunks); every launcher enqueues on `stream` and
// returns the launch status (cudaGetLastError()). Shapes and attributes were
// checked by Program::create, so launchers trust them, exactly as the CPU
// kernels do.
//
// Kernels index tensors with the strided index math of an Indexer: the
// result's flat index is decomposed over `dims` (row-major) and each operand's
// element offset is the dot product of that multi-index with its strides
// (0 where the operand broadcasts). Indexers are built from the CPU
// backends' StridedPlan (tessel/ops/Broadcast.h), which drops dims of size 1 and
// merges contiguous neighbours, so the rank seen by kernels is small.
//
// Semantics mirror the CPU kernels operation by operation (same formulas,
// same NaN handling, same integer wrap-around); only the order of
// floating-point sums differs.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_RUNTIME_CUDA_CUDAKERNELS_H
#define TESSEL_RUNTIME_CUDA_CUDAKERNELS_H

#include "tessel/ops/Optimizer.h"
#include "tessel/runtime/DType.h"
#include "tessel/runtime/OpKind.h"

#include <cstddef>
#include <cstdint>
#include <cuda_runtime.h>
#include <functional>

namespace tessel::runtime {
struct Op; // tessel/runtime/Program.h: Elementwise.cu reads unary attributes
} // namespace tessel::runtime

namespace tessel::runtime::cuda {

/// Predicates of `compare` (the values of ComparePredicate; this header
/// stays free of Program.h).
enum class CmpPred : int { Eq, Ne, Lt, Le, Gt, Ge };

constexpr int kMaxDims = 8;
constexpr int kMaxOperands = 4;

/// Strided index math over the (merged) dims of a result; passed to kernels
/// by value.
struct Indexer {
  int rank = 1;
  int numOperands = 0;
  int64_t total = 0;
  int64_t dims[kMaxDims] = {1};
  int64_t strides[kMaxDims][kMaxOperands] = {};
};

/// An Indexer in 32-bit arithmetic, for results and operands of fewer than
/// 2^31 elements (nearly all): Indexer32.h's narrow() makes it. Kernels are
/// templated on the indexer and take its index type.
struct Indexer32 {
  int rank = 1;
  int numOperands = 0;
  uint32_t total = 0;
  uint32_t dims[kMaxDims] = {1};
  int32_t strides[kMaxDims][kMaxOperands] = {};
  /// Division by dims[d] as a multiply-high and a shift (FastDivide.h).
  uint32_t magic[kMaxDims] = {};
  uint32_t shift[kMaxDims] = {};
};

/// What the strided launchers take: an Indexer and, where it fits, its
/// 32-bit form, both made once when the step is built (IndexPlan.h), not
/// on every launch.
struct StridedIndex {
  Indexer wide;
  Indexer32 narrow;
  bool fits32 = false;
};

// Elementwise (Elementwise.cu) -------------------------------------------
/// Launches y = f(x) over n elements of a dtype on a stream.
using UnaryLaunch = std::function<cudaError_t(DType, const void *, void *,
                                              int64_t, cudaStream_t)>;
/// The launch of unary instruction `op`, its scalar function's attributes
/// read from `op` now; empty for a kind that is not one of the op table's
/// unary scalar functions (TESSEL_RUNTIME_UNARY_SCALAR_OPS).
UnaryLaunch unaryLaunch(const Op &op);
/// round_float: y = scalar::roundToFormat(x, e, m) over n floats.
cudaError_t launchRoundFloat(const float *x, float *y, int64_t n, int e, int m,
                             cudaStream_t s);
cudaError_t launchCast(DType from, const void *x, DType to, void *y, int64_t n,
                       cudaStream_t s);

// Binary, compare, where (Binary.cu) -------------------------------------
/// y = a op b; `ix` has operands (a, b); `bScalar` enables pow's fast paths
/// for a single-element exponent (as the CPU backend does).
cudaError_t launchBinary(OpKind kind, DType dtype, const void *a, const void *b,
                         void *y, const StridedIndex &ix, bool bScalar,
                         cudaStream_t s);
cudaError_t launchCompare(CmpPred pred, DType dtype, const void *a,
                          const void *b, uint8_t *y, const StridedIndex &ix,
                          cudaStream_t s);
/// `ix` has operands (cond, x, y).
cudaError_t launchWhere(size_t elemSize, const uint8_t *cond, const void *x,
                        const void *y, void *out, const StridedIndex &ix,
                        cudaStream_t s);

// Data movement (DataMovement.cu) ----------------------------------------
/// Copies ix.total elements: source offset from operand 0; destination
/// offset from operand 1 when ix.numOperands == 2, else the flat index.
cudaError_t launchStridedCopy(size_t elemSize, const void *src, void *dst,
                              const StridedIndex &ix, cudaStream_t s);
/// Sets slot[0] to the first position j whose index is outside
/// [-dim, dim) (atomicMin; slot[0] must start at ~0ull), then slot[1] to that
/// index's value.
cudaError_t launchGatherCheck(DType indexType, const void *indices,
                              int64_t numIndices, int64_t dim,
                              unsigned long long *slot, cudaStream_t s);
/// out[o, j, k] = data[o, idx[j] (wrapped), k]; out-of-range indices give 0.
cudaError_t launchGather(size_t elemSize, const void *data, DType indexType,
                         const void *indices, int64_t numIndices,
                         int64_t outer, int64_t dim, int64_t inner, void *out,
                         cudaStream_t s);

/// out[i] = data[offset0(ix, i) + wrap(idx[i]) * axisStride] (ONNX
/// GatherElements; `ix` iterates the indices with data's strides, 0 along
/// the axis); out-of-range indices give 0 (launchGatherCheck reports them).
cudaError_t launchGatherElements(size_t elemSize, const void *data,
                                 DType indexType, const void *indices,
                                 const Indexer &ix, int64_t dim,
                                 int64_t axisStride, void *out,
                                 cudaStream_t s);

// Reductions and cumsum (Reduce.cu) --------------------------------------
/// ONNX CumSum over [outer, len, inner] along len, in the CPU's order.
cudaError_t launchCumSum(DType dtype, const void *x, void *y, int64_t outer,
                         int64_t len, int64_t inner, bool exclusive,
                         bool reverse, cudaStream_t s);
/// `kept` iterates the outputs (operand 0: input strides of the kept dims),
/// `reduced` the reduced elements of one output (operand 0: input strides of
/// the reduced dims; total 0 for an empty reduction). reduce_mean multiplies
/// by `meanScale`.
cudaError_t launchReduce(OpKind kind, DType dtype, const void *x, void *y,
                         const StridedIndex &kept, const StridedIndex &reduced,
                         float meanScale, cudaStream_t s);
// Normalization (Normalization.cu) ---------------------------------------
cudaError_t launchSoftmax(bool logSoftmax, const float *x, float *y,
                          int64_t outer, int64_t len, int64_t inner,
                          cudaStream_t s);
/// One block per row of d elements; bias may be null; scale/bias hold d.
cudaError_t launchLayerNorm(bool rms, const float *x, int64_t rows, int64_t d,
                            float epsilon, const float *scale,
                            const float *bias, float *y, cudaStream_t s);
cudaError_t launchBatchNorm(const float *x, int64_t n, int64_t c,
                            int64_t spatial, const float *scale,
                            const float *bias, const float *mean,
                            const float *var, float epsilon, float *y,
                            cudaStream_t s);

// Convolution (Conv.cu) and pooling (Pool.cu), NCHW ----------------------
/// The sliding window of conv2d and the pools: input h x w, result oh x ow,
/// kernel kh x kw, strides, and the top and left pads.
struct WindowGeom {
  int64_t h = 0, w = 0, kh = 1, kw = 1, oh = 0, ow = 0;
  int64_t sh = 1, sw = 1, pt = 0, pl = 0;
};
/// `g` of an instruction `op` (its strides and pads) over x [.., .., h, w]
/// into y [.., .., oh, ow] with a kh x kw kernel.
template <typename OpT>
void setWindow(WindowGeom &g, const OpT &op, const Shape &xs, const Shape &ys,
               int64_t kh, int64_t kw) {
  g.h = xs[2];
  g.w = xs[3];
  g.oh = ys[2];
  g.ow = ys[3];
  g.kh = kh;
  g.kw = kw;
  g.sh = op.strides[0];
  g.sw = op.strides[1];
  g.pt = op.pads[0];
  g.pl = op.pads[1];
}

struct Conv2DGeom : WindowGeom {
  int64_t channels = 0; // input channels of one group
  int64_t dh = 1, dw = 1;
};
/// The im2col geometry of one image and group of conv2d instruction `op`
/// (or its gradients) from x `xs` to y `ys` with weight `ws`.
template <typename OpT>
Conv2DGeom conv2DGeom(const OpT &op, const Shape &xs, const Shape &ws,
                      const Shape &ys) {
  Conv2DGeom g;
  setWindow(g, op, xs, ys, ws[2], ws[3]);
  g.channels = xs[1] / op.group;
  g.dh = op.dilations[0];
  g.dw = op.dilations[1];
  return g;
}
/// col[(ci, i, j), (r, s)] = x[ci, r*sh - pt + i*dh, s*sw - pl + j*dw] (0
/// outside), for one image and group starting at `x`.
cudaError_t launchIm2Col(const float *x, const Conv2DGeom &g, float *col,
                         cudaStream_t s);
/// launchIm2Col over bf16 values (their bits), for the bf16 convolutions.
cudaError_t launchIm2ColBf16(const uint16_t *x, const Conv2DGeom &g,
                             uint16_t *col, cudaStream_t s);
/// dst[i] = src[i] rounded to bf16 (scalar::roundBf16Bits: nearest, ties to
/// even, a NaN stays a quiet NaN), as the CPU's round_float and bf16 copies:
/// the operands of the bf16 GEMMs (Bf16Gemm.h).
cudaError_t launchToBf16(const float *src, uint16_t *dst, int64_t n,
                         cudaStream_t s);
/// y[b, oc, :] += bias[oc].
cudaError_t launchAddBias(float *y, const float *bias, int64_t n, int64_t o,
                          int64_t spatial, cudaStream_t s);
/// The adjoint of launchIm2Col: x[ci, ih, iw] = the sum of the columns'
/// entries that read it, in kernel order (every element written), for one
/// image and group.
cudaError_t launchCol2Im(const float *col, const Conv2DGeom &g, float *x,
                         cudaStream_t s);

struct PoolGeom : WindowGeom {
  int64_t planes = 0;
  int64_t pb = 0, pr = 0; // bottom and right pads
  bool countIncludePad = false;
};
/// The window of pool instruction `op` (or its gradient) from x [N, C, H, W]
/// to y.
template <typename OpT>
PoolGeom poolGeom(const OpT &op, const Shape &xs, const Shape &ys) {
  PoolGeom g;
  setWindow(g, op, xs, ys, op.kernel[0], op.kernel[1]);
  g.planes = xs[0] * xs[1];
  g.pb = op.pads[2];
  g.pr = op.pads[3];
  g.countIncludePad = op.countIncludePad;
  return g;
}
cudaError_t launchMaxPool(const float *x, float *y, const PoolGeom &g,
                          cudaStream_t s);
cudaError_t launchAvgPool(const float *x, float *y, const PoolGeom &g,
                          cudaStream_t s);
cudaError_t launchGlobalAvgPool(const float *x, float *y, int64_t planes,
                                int64_t spatial, cudaStream_t s);
/// max_pool_backward: each dy goes to the first maximum of its window
/// (row-major order, as oneDNN's workspace records it); dx written whole.
cudaError_t launchMaxPoolBackward(const float *x, const float *dy, float *dx,
                                  const PoolGeom &g, cudaStream_t s);
/// avg_pool_backward: each dy divided by its window's count (as
/// launchAvgPool counts it) and spread over the window's input elements.
cudaError_t launchAvgPoolBackward(const float *dy, float *dx,
                                  const PoolGeom &g, cudaStream_t s);

// Fused elementwise (Fused.cu) ----------------------------------------------
/// A fused_elementwise program for the device, by value (tessel/runtime/
/// FusedProgram.h): input i read at element e (period 0), 0 (period -1) or
/// e % period; instruction k applies op `kind[k]` (an OpKind) to values a[k]
/// and b[k] (-1: none); flag[k] bit 0 gelu's tanh form, bit 1 b[k] is an
/// input of one element (pow's fast paths).
struct FusedLaunch {
  static constexpr int kMaxInputs = 64, kMaxCode = 32;
  /// Input i: f32 (type 0), bf16 (1) or f16 (2) elements.
  const void *in[kMaxInputs];
  int64_t period[kMaxInputs];
  /// Per input with a period, the period's magic number and shift
  /// (FastDivide.h): below 2^31 elements the kernel takes e % period as a
  /// multiply-high, a shift and a multiply, not a 64-bit division.
  uint32_t magic[kMaxInputs], shift[kMaxInputs];
  signed char inType[kMaxInputs];
  int kind[kMaxCode];
  /// flag: bit 0 gelu's tanh form, bit 1 a one-element right operand,
  /// bits 2-3 a cast's target type (as inType).
  signed char a[kMaxCode], b[kMaxCode], flag[kMaxCode];
  int inputs, code;
  /// The result's type (as inType).
  signed char outType;
};
/// out[e] for e < n: the program's last value, stored in p.outType; in
/// 32-bit index math when n < 2^31.
cudaError_t launchFused(const FusedLaunch &p, void *out, int64_t n,
                        cudaStream_t s);

// Attention (Attention.cu) -------------------------------------------------
/// A block of rows' mask: element (i, j) at m + i rowStride + j colStride
/// (none when m is null), added to the scores; with `replace`
/// (has_masked_score), a score whose mask is -inf is `masked` instead; with
/// `keep` (bool bytes, element (i, j) at keep + i keepRowStride + j
/// keepColStride) too, a score whose keep is 0 is `masked` plus its mask.
struct AttentionMask {
  const float *m = nullptr;
  int64_t rowStride = 0, colStride = 0;
  bool replace = false;
  float masked = 0.0f;
  const uint8_t *keep = nullptr;
  int64_t keepRowStride = 0, keepColStride = 0;
};
/// Scores [rows, t] in place: with the mask, softmax per row, lse [rows]; a
/// row whose max is not finite (every score -inf, a NaN or +inf one) gets
/// zeros and lse NaN.
cudaError_t launchAttentionSoftmax(float *s, int64_t rows, int64_t t,
                                   const AttentionMask &mask, float *lse,
                                   cudaStream_t st);
/// The rows of out [rows, dv] whose lse is NaN: *fill times the sum of v's
/// [t, dv] rows, or NaN when fill is null.
cudaError_t launchAttentionNanRows(const float *lse, int64_t rows,
                                   const float *v, int64_t t, int64_t dv,
                                   const float *fill, float *out,
                                   cudaStream_t st);
/// Scores [rows, t] in place -> exp(masked scores - lse) (0 where lse is not
/// finite); delta[i] = sum_k grad[i, k] out[i, k].
cudaError_t launchAttentionProbabilities(float *p, int64_t rows, int64_t t,
                                         const AttentionMask &mask,
                                         const float *lse, const float *grad,
                                         const float *out, int64_t dv,
                                         float *delta, cudaStream_t st);
/// p = p (dp - delta[i]) in place, 0 where lse is not finite and where the
/// mask's replace made the score a constant.
cudaError_t launchAttentionDs(float *p, const float *dp, const float *delta,
                              const float *lse, int64_t rows, int64_t t,
                              const AttentionMask &mask, cudaStream_t st);
/// dv [t, dv] += *fill times the sum of grad's rows whose lse is not finite
/// (nothing when fill is null).
cudaError_t launchAttentionNanRowsGrad(const float *lse, const float *grad,
                                       int64_t rows, int64_t t, int64_t dv,
                                       const float *fill, float *dvOut,
                                       cudaStream_t st);

// FlashAttention (FlashAttention.cu) ---------------------------------------
namespace flash {
template <class E> struct TileArgs;     // FlashAttention.h
template <class E> struct TileGradArgs; // FlashAttention.h
using Args = TileArgs<uint16_t>;
using GradArgs = TileGradArgs<uint16_t>;
using ArgsF32 = TileArgs<float>;
using GradArgsF32 = TileGradArgs<float>;
} // namespace flash
/// A half attention's forward in tiles on tensor cores (FlashAttention.h):
/// q, kt, v and out of `half` (BF16 or F16), head dim 32, 64, 80, 96 or 128 and
/// v's the same (flash::supportedHeadDim); args.kNorm, when set, is [batch]
/// floats of scratch for the dead tiles' bound. A row whose max is not finite
/// gets lse NaN and, with `fill`, *fill times the sum of v's rows (else NaN).
/// Needs sm_80 or later.
cudaError_t launchFlashAttention(DType half, const flash::Args &args,
                                 const float *fill, cudaStream_t st);
/// Its gradient (FlashAttention.h, dkvBlock and dqBlock) into args.dq,
/// args.dkt and args.dv, each element written once; `out` is the forward's
/// result, `delta` [batch s] floats of scratch, `norms` [2 batch] floats of
/// scratch for the dead tiles' bound (null: no skips).
cudaError_t launchFlashAttentionGrad(DType half, const flash::GradArgs &args,
                                     const uint16_t *out, float *delta,
                                     float *norms, cudaStream_t st);
/// An f32 attention's forward and gradient in the SIMT tiles of
/// FlashAttentionSimt.h, the same head dims, the same arguments (`type` is
/// F32).
cudaError_t launchFlashAttention(DType type, const flash::ArgsF32 &args,
                                 const float *fill, cudaStream_t st);
cudaError_t launchFlashAttentionGrad(DType type, const flash::GradArgsF32 &args,
                                     const float *out, float *delta,
                                     float *norms, cudaStream_t st);

// Gradients (Training.cu) ------------------------------------------------
/// gelu_grad: y = g * gelu'(x) over n floats (scalar::GeluGrad).
cudaError_t launchGeluGrad(const float *x, const float *g, float *y, int64_t n,
                           bool tanhForm, cudaStream_t s);
/// log_softmax_grad over [outer, len, inner] along len:
/// y = g - exp(out) * sum_len(g).
cudaError_t launchLogSoftmaxGrad(const float *out, const float *g, float *y,
                                 int64_t outer, int64_t len, int64_t inner,
                                 cudaStream_t s);
/// The scratch launchGatherGrad needs for `numIndices` indices into an axis
/// of `dim` (at most INT_MAX each).
cudaError_t gatherGradScratchBytes(int64_t numIndices, int64_t dim,
                                   size_t &bytes);
/// gather_grad: out [outer, dim, inner] = zeros, then
/// out[o, idx[j] (wrapped), :] += grad[o, j, :], the rows of each index
/// summed in position order as the CPU kernel does (a stable radix sort of
/// the indices, then one thread per run and column): the same bits.
/// Out-of-range indices are skipped (launchGatherCheck reports them).
cudaError_t launchGatherGrad(const float *grad, DType indexType,
                             const void *indices, int64_t numIndices,
                             int64_t outer, int64_t dim, int64_t inner,
                             void *scratch, size_t scratchBytes, float *out,
                             cudaStream_t s);
/// BatchNorm's training pieces over x, g [n, c, spatial] (one block per
/// channel, sums in double as the CPU's batch order per channel):
/// var[ch] = mean((x - mean)^2) (each square rounded to f32; NaN for an
/// empty channel);
cudaError_t launchBatchNormVariance(const float *x, const float *mean,
                                    int64_t n, int64_t c, int64_t spatial,
                                    float *var, cudaStream_t s);
/// sumG[ch] = sum(g), sumGC[ch] = sum(g (x - mean));
cudaError_t launchBatchNormGradSums(const float *g, const float *x,
                                    const float *mean, int64_t n, int64_t c,
                                    int64_t spatial, float *sumG, float *sumGC,
                                    cudaStream_t s);
/// dx = (g - gradMean - (x - mean) proj) coef, per channel.
cudaError_t launchBatchNormGradInput(const float *g, const float *x,
                                     const float *mean, const float *gradMean,
                                     const float *proj, const float *coef,
                                     int64_t n, int64_t c, int64_t spatial,
                                     float *dx, cudaStream_t s);

// Optimizer updates (Training.cu) ----------------------------------------
/// PyTorch's Adam(W) step on b.n floats (Optimizer.h: the CPU kernel's
/// attributes and buffers); the step size, sqrt of the second bias
/// correction and the decoupled decay factor are scalars in device memory
/// (computed by the step's program).
cudaError_t launchAdamUpdate(const AdamBuffers &b, const AdamParams &k,
                             cudaStream_t s);
/// PyTorch's SGD step with momentum on b.n floats; `lr` a scalar in device
/// memory.
cudaError_t launchSgdUpdate(const SgdBuffers &b, const SgdParams &k,
                            cudaStream_t s);

} // namespace tessel::runtime::cuda

#endif // TESSEL_RUNTIME_CUDA_CUDAKERNELS_H
