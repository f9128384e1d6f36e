//===- Training.cpp - kernels of the training step's fused ops ------------===//
//
// The ops only training programs hold (dialects/tessel/TrainingOps.td):
// gather_grad (the embedding's backward, a scatter-add), gelu_grad,
// log_softmax_grad, relu_grad, BatchNorm's training backward
// (batch_norm_grad_sums, batch_norm_grad_input) and its forward variance
// (batch_norm_variance), and the optimizer updates
// adam_update and sgd_update,
// each one pass over memory where their compositions made several. The
// updates run in place when the exporter binds their results to the state
// buffers they read (every element is read before it is written).
//
//===----------------------------------------------------------------------===//
#include "tessel/ops/Broadcast.h"
#include "KernelRegistry.h"
#include "Kernels.h"
#include "tessel/ops/Optimizer.h"
#include "tessel/runtime/BinaryOps.h"
#include "ThreadPool.h"
#include "VecMath.h"
#include "tessel/runtime/ScalarOps.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

namespace tessel::runtime::cpu {

namespace {

constexpr int64_t kGrain = 16384;

/// The step that runs range(b, e) over [0, n) on c's pool, in chunks of at
/// least `grain` elements.
template <typename Range>
Step parallelStep(const KernelContext &c, int64_t n, int64_t grain,
                  Range range) {
  ThreadPool *pool = &c.pool;
  return [=] {
    pool->parallelFor(n, grain, range);
    return Status::ok();
  };
}

/// The chunk of a step over the channels of `k`: about kGrain elements.
int64_t channelGrain(const ChannelGeometry &k) {
  return std::max<int64_t>(1, kGrain / std::max<int64_t>(1, k.batch * k.spatial));
}

/// result = zeros; result[o, idx[j], :] += grad[o, j, :] (negative indices
/// from the end). Indices are checked before anything is written.
template <typename Index>
Status gatherGrad(const float *grad, const Index *indices, int64_t numIndices,
                  int64_t outer, int64_t dim, int64_t inner, float *out,
                  ThreadPool &pool) {
  for (int64_t j = 0; j < numIndices; ++j) {
    int64_t i = indices[j];
    if (i < -dim || i >= dim)
      return Status::error("gather_grad: index " + std::to_string(i) +
                           " at position " + std::to_string(j) +
                           " is out of range for an axis of size " +
                           std::to_string(dim));
  }
  pool.parallelFor(outer * dim * inner, 1 << 20, [&](int64_t b, int64_t e) {
    std::memset(out + b, 0, (e - b) * sizeof(float));
  });
  // Columns split among threads: rows that repeat add up in index order on
  // every thread count.
  pool.parallelFor(inner, 256, [&](int64_t cb, int64_t ce) {
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t j = 0; j < numIndices; ++j) {
        int64_t i = indices[j];
        if (i < 0)
          i += dim;
        const float *__restrict src = grad + (o * numIndices + j) * inner;
        float *__restrict dst = out + (o * dim + i) * inner;
        for (int64_t c = cb; c < ce; ++c)
          dst[c] += src[c];
      }
  });
  return Status::ok();
}

Step gatherGradStep(const KernelContext &c) {
  const float *g = static_cast<const float *>(c.operand(0));
  const void *idx = c.operand(1);
  float *y = static_cast<float *>(c.result(0));
  const AxisView v = aroundAxis(c.out(0).shape, c.op.axis);
  const int64_t outer = v.outer, dim = v.len, inner = v.inner,
                n = c.in(1).numel;
  const bool i64 = c.in(1).dtype == DType::I64;
  ThreadPool *pool = &c.pool;
  return [=] {
    return i64 ? gatherGrad(g, static_cast<const int64_t *>(idx), n, outer,
                            dim, inner, y, *pool)
               : gatherGrad(g, static_cast<const int32_t *>(idx), n, outer,
                            dim, inner, y, *pool);
  };
}

/// dy * gelu'(x) on [b, e): scalar::GeluGrad, one loop per form (the
/// form a constant in it, so that it vectorises).
void geluGradRange(const float *x, const float *g, float *y, int64_t b,
                   int64_t e, bool tanhForm) {
  if (tanhForm) {
    const scalar::GeluGrad<CpuMath> f{true};
    for (int64_t i = b; i < e; ++i)
      y[i] = f(x[i], g[i]);
    return;
  }
  const scalar::GeluGrad<CpuMath> f{false};
  for (int64_t i = b; i < e; ++i)
    y[i] = f(x[i], g[i]);
}

Step geluGradStep(const KernelContext &c) {
  const float *x = static_cast<const float *>(c.operand(0));
  const float *g = static_cast<const float *>(c.operand(1));
  float *y = static_cast<float *>(c.result(0));
  const int64_t n = c.in(0).numel;
  const bool tanhForm = c.op.tanhApproximation;
  return parallelStep(c, n, kGrain, [=](int64_t b, int64_t e) {
    geluGradRange(x, g, y, b, e, tanhForm);
  });
}

/// dx = dy - exp(y) sum_axis(dy) for the lines [b, e) of (outer, inner).
void logSoftmaxGradLines(const float *out, const float *g, float *y,
                         int64_t len, int64_t inner, int64_t b, int64_t e) {
  for (int64_t line = b; line < e; ++line) {
    const int64_t o = line / inner, in = line % inner;
    const int64_t base = o * len * inner + in;
    float sum = 0.0f;
    for (int64_t a = 0; a < len; ++a)
      sum += g[base + a * inner];
    if (inner == 1) {
      const float *ol = out + base, *gl = g + base;
      float *yl = y + base;
      for (int64_t a = 0; a < len; ++a)
        yl[a] = gl[a] - vexp(ol[a]) * sum;
      continue;
    }
    for (int64_t a = 0; a < len; ++a) {
      const int64_t k = base + a * inner;
      y[k] = g[k] - vexp(out[k]) * sum;
    }
  }
}

Step logSoftmaxGradStep(const KernelContext &c) {
  const float *out = static_cast<const float *>(c.operand(0));
  const float *g = static_cast<const float *>(c.operand(1));
  float *y = static_cast<float *>(c.result(0));
  const AxisView v = aroundAxis(c.in(0).shape, c.op.axis);
  const int64_t len = v.len, inner = v.inner;
  const int64_t grain = std::max<int64_t>(1, kGrain / std::max<int64_t>(1, len));
  return parallelStep(c, v.outer * inner, grain, [=](int64_t b, int64_t e) {
    logSoftmaxGradLines(out, g, y, len, inner, b, e);
  });
}

/// grad where output > 0, else 0 (relu_grad), on [b, e). The result may
/// be grad's own buffer (in place, as the elementwise kernels allow): each
/// element is read before it is written, so `omp simd` vectorises without
/// the aliasing check that would otherwise fall back to scalar code.
void reluGradRange(const float *out, const float *g, float *y, int64_t b,
                   int64_t e) {
#pragma omp simd
  for (int64_t i = b; i < e; ++i) {
    // Both loaded unconditionally: a conditional g[i] becomes a masked
    // load (vmaskmovps), which halves the kernel's speed on AMD's cores.
    const float gi = g[i], yi = out[i];
    y[i] = scalar::ReluGrad<CpuMath>()(yi, gi); // BinaryOps.h, as on CUDA
  }
}

Step reluGradStep(const KernelContext &c) {
  const float *out = static_cast<const float *>(c.operand(0));
  const float *g = static_cast<const float *>(c.operand(1));
  float *y = static_cast<float *>(c.result(0));
  return parallelStep(c, c.in(0).numel, kGrain, [=](int64_t b, int64_t e) {
    reluGradRange(out, g, y, b, e);
  });
}

/// sum(g) and sum(g (x - mean)) of each channel in [cb, ce): each plane of
/// `spatial` elements in kLanes f32 partial sums (several vector
/// accumulators, so the adds do not wait on each other), the planes of a
/// channel summed in double in batch order (the same sums on any thread
/// count). The planes are visited in memory order, sample by sample, so
/// the reads stream (a channel's planes alone are a sample's size apart).
void channelSums(const float *g, const float *x, const float *mean,
                 const ChannelGeometry k, float *sumG, float *sumGC,
                 int64_t cb, int64_t ce) {
  constexpr int64_t kLanes = 32;
  std::vector<double> sg(ce - cb, 0.0), sgc(ce - cb, 0.0);
  for (int64_t n = 0; n < k.batch; ++n)
    for (int64_t ch = cb; ch < ce; ++ch) {
      const float m = mean[ch];
      const int64_t base = (n * k.channels + ch) * k.spatial;
      const float *__restrict gp = g + base;
      const float *__restrict xp = x + base;
      float a[kLanes] = {}, b[kLanes] = {};
      int64_t i = 0;
      for (; i + kLanes <= k.spatial; i += kLanes)
        for (int64_t j = 0; j < kLanes; ++j) {
          const float gj = gp[i + j];
          a[j] += gj;
          b[j] += gj * (xp[i + j] - m);
        }
      for (int64_t j = 0; i < k.spatial; ++i, ++j) {
        a[j] += gp[i];
        b[j] += gp[i] * (xp[i] - m);
      }
      float ta = 0.0f, tb = 0.0f;
      for (int64_t j = 0; j < kLanes; ++j) {
        ta += a[j];
        tb += b[j];
      }
      sg[ch - cb] += ta;
      sgc[ch - cb] += tb;
    }
  for (int64_t ch = cb; ch < ce; ++ch) {
    sumG[ch] = static_cast<float>(sg[ch - cb]);
    sumGC[ch] = static_cast<float>(sgc[ch - cb]);
  }
}

Step batchNormGradSumsStep(const KernelContext &c) {
  const float *g = static_cast<const float *>(c.operand(0));
  const float *x = static_cast<const float *>(c.operand(1));
  const float *mean = static_cast<const float *>(c.operand(2));
  float *sumG = static_cast<float *>(c.result(0));
  float *sumGC = static_cast<float *>(c.result(1));
  const ChannelGeometry k(c.in(0).shape);
  return parallelStep(c, k.channels, channelGrain(k),
                      [=](int64_t b, int64_t e) {
                        channelSums(g, x, mean, k, sumG, sumGC, b, e);
                      });
}

/// mean((x - mean)^2) of each channel in [cb, ce) (batch_norm_variance) as
/// PyTorch's CPU kernel sums it: each square rounded to f32, the sum in
/// double (here in kLanes double partial sums per plane, the planes in batch
/// order: the same on any thread count), divided by n in double. Planes in
/// memory order, as channelSums.
void channelVariance(const float *x, const float *mean,
                     const ChannelGeometry k, float *var, int64_t cb,
                     int64_t ce) {
  constexpr int64_t kLanes = 16;
  std::vector<double> ss(ce - cb, 0.0);
  for (int64_t n = 0; n < k.batch; ++n)
    for (int64_t ch = cb; ch < ce; ++ch) {
      const float m = mean[ch];
      const float *__restrict xp = x + (n * k.channels + ch) * k.spatial;
      double a[kLanes] = {};
      int64_t i = 0;
      for (; i + kLanes <= k.spatial; i += kLanes)
        for (int64_t j = 0; j < kLanes; ++j) {
          const float c = xp[i + j] - m;
          const float sq = c * c; // rounded: no fused multiply-add
          a[j] += static_cast<double>(sq);
        }
      for (int64_t j = 0; i < k.spatial; ++i, ++j) {
        const float c = xp[i] - m;
        const float sq = c * c;
        a[j] += static_cast<double>(sq);
      }
      double t = 0.0;
      for (int64_t j = 0; j < kLanes; ++j)
        t += a[j];
      ss[ch - cb] += t;
    }
  const double count = static_cast<double>(k.batch * k.spatial);
  for (int64_t ch = cb; ch < ce; ++ch)
    var[ch] = count ? static_cast<float>(ss[ch - cb] / count)
                    : std::numeric_limits<float>::quiet_NaN();
}

Step batchNormVarianceStep(const KernelContext &c) {
  const float *x = static_cast<const float *>(c.operand(0));
  const float *mean = static_cast<const float *>(c.operand(1));
  float *var = static_cast<float *>(c.result(0));
  const ChannelGeometry k(c.in(0).shape);
  return parallelStep(c, k.channels, channelGrain(k),
                      [=](int64_t b, int64_t e) {
                        channelVariance(x, mean, k, var, b, e);
                      });
}

/// dx = (g - gradMean - (x - mean) proj) coef per channel, for the planes
/// [pb, pe) of [N * C] (PyTorch's batch_norm_backward_elemt, its order);
/// dx may be g's or x's buffer, as in reluGradRange.
void batchNormGradInputPlanes(const float *g, const float *x,
                              const float *mean, const float *gradMean,
                              const float *proj, const float *coef,
                              const ChannelGeometry k, float *dx, int64_t pb,
                              int64_t pe) {
  for (int64_t p = pb; p < pe; ++p) {
    const int64_t ch = p % k.channels, base = p * k.spatial;
    const float m = mean[ch], gm = gradMean[ch], pj = proj[ch], s = coef[ch];
    const float *gp = g + base, *xp = x + base;
    float *yp = dx + base;
#pragma omp simd
    for (int64_t i = 0; i < k.spatial; ++i)
      yp[i] = (gp[i] - gm - (xp[i] - m) * pj) * s;
  }
}

Step batchNormGradInputStep(const KernelContext &c) {
  const float *g = static_cast<const float *>(c.operand(0));
  const float *x = static_cast<const float *>(c.operand(1));
  const float *mean = static_cast<const float *>(c.operand(2));
  const float *gradMean = static_cast<const float *>(c.operand(3));
  const float *proj = static_cast<const float *>(c.operand(4));
  const float *coef = static_cast<const float *>(c.operand(5));
  float *dx = static_cast<float *>(c.result(0));
  const ChannelGeometry k(c.in(0).shape);
  return parallelStep(
      c, k.batch * k.channels,
      std::max<int64_t>(1, kGrain / std::max<int64_t>(1, k.spatial)),
      [=](int64_t b, int64_t e) {
        batchNormGradInputPlanes(g, x, mean, gradMean, proj, coef, k, dx, b,
                                 e);
      });
}

// The updates run in blocks: each block's operands are loaded into local
// arrays, updated there and stored, so the loops vectorise although results
// alias operands (in place) and GCC would not version 7 pointers for aliasing.
constexpr int64_t kBlock = 64;

/// Runs `update(l, n)` on [b, e) in blocks of kBlock elements: l[j] holds
/// the block of in[j] (in[0] the parameter, in[1] its gradient, then the
/// optimizer's states), the gradient plus weight decay times the parameter
/// where weightDecay is non-zero (PyTorch's L2 penalty); `update` changes
/// them in place and l[j] is stored to out[j] where that is set.
template <size_t N, typename Update>
void inBlocks(const std::array<const float *, N> &in,
              const std::array<float *, N> &out, int64_t b, int64_t e,
              float weightDecay, Update update) {
  float l[N][kBlock];
  for (int64_t i0 = b; i0 < e; i0 += kBlock) {
    const int64_t n = std::min(kBlock, e - i0);
    for (size_t j = 0; j < N; ++j)
      std::memcpy(l[j], in[j] + i0, n * sizeof(float));
    if (weightDecay != 0.0f)
      for (int64_t i = 0; i < n; ++i)
        l[1][i] = coupledDecay<CpuMath>(l[1][i], l[0][i], weightDecay);
    update(l, n);
    for (size_t j = 0; j < N; ++j)
      if (out[j])
        std::memcpy(out[j] + i0, l[j], n * sizeof(float));
  }
}

/// PyTorch's single-tensor Adam(W) step (the op's description) on [b, e),
/// with the step's scalars read when it runs.
void adamRange(const AdamBuffers &x, int64_t b, int64_t e, const AdamParams k,
               const float stepSize, const float sqrtBc2, const float decay) {
  const AdamStep<CpuMath> f{k, stepSize, sqrtBc2, decay};
  inBlocks<4>({x.p, x.g, x.m, x.v}, {x.p1, nullptr, x.m1, x.v1}, b, e,
              k.weightDecay, [&](float (*l)[kBlock], int64_t n) {
                float *pl = l[0], *gl = l[1], *ml = l[2], *vl = l[3];
                for (int64_t i = 0; i < n; ++i)
                  f(pl[i], gl[i], ml[i], vl[i]);
              });
}

Step adamUpdateStep(const KernelContext &c) {
  const AdamBuffers x = adamBuffers(c);
  const AdamParams k = adamParams(c.op);
  return parallelStep(c, x.n, kGrain, [=](int64_t b, int64_t e) {
    adamRange(x, b, e, k, *x.stepSize, *x.sqrtBc2, *x.decay);
  });
}

/// PyTorch's single-tensor SGD step with momentum on [b, e).
void sgdRange(const SgdBuffers &x, int64_t b, int64_t e, const SgdParams k,
              const float lr) {
  const SgdStep<CpuMath> f{k, lr};
  inBlocks<3>({x.p, x.g, x.buf}, {x.p1, nullptr, x.buf1}, b, e,
              k.weightDecay, [&](float (*l)[kBlock], int64_t n) {
                float *pl = l[0], *dl = l[1], *bl = l[2];
                for (int64_t i = 0; i < n; ++i)
                  f(pl[i], dl[i], bl[i]);
              });
}

Step sgdUpdateStep(const KernelContext &c) {
  const SgdBuffers x = sgdBuffers(c);
  const SgdParams k = sgdParams(c.op);
  return parallelStep(c, x.n, kGrain, [=](int64_t b, int64_t e) {
    sgdRange(x, b, e, k, *x.lr);
  });
}

} // namespace

void registerTrainingKernels(KernelRegistry &r) {
  addKernels(r, {{OpKind::GatherGrad, gatherGradStep},
                 {OpKind::GeluGrad, geluGradStep},
                 {OpKind::LogSoftmaxGrad, logSoftmaxGradStep},
                 {OpKind::ReluGrad, reluGradStep},
                 {OpKind::BatchNormGradSums, batchNormGradSumsStep},
                 {OpKind::BatchNormGradInput, batchNormGradInputStep},
                 {OpKind::BatchNormVariance, batchNormVarianceStep},
                 {OpKind::AdamUpdate, adamUpdateStep},
                 {OpKind::SgdUpdate, sgdUpdateStep}});
}

} // namespace tessel::runtime::cpu
