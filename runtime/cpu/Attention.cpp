//===- Attention.cpp - fused attention and its gradient on the CPU --------===//
//
// attention and attention_grad (tessel/runtime/Attention.h). The scores are
// never held whole: each task takes a block of query rows of one batch
// entry, computes their [rows, T] scores with one GEMM into a per-thread
// scratch of at most kScratchFloats, normalises them in place (an exact
// softmax per row, as the unfused kernels compute it: the max, exp(x -
// max) with vexp, the sum, a product with 1 / sum) and multiplies by v.
// Memory is O(rows x T) per thread, linear in the sequence.
//
// The backward takes one batch entry per task (dkt and dv sum over its
// query rows, in row order: the same sums on any thread count) and, per
// block of rows, recomputes p = exp(scale q kt + mask - lse), then
// dv += p^T grad, dp = grad v^T, ds = p (dp - rowsum(grad * out)),
// dq = scale ds kt^T, dkt += scale q^T ds: five GEMMs per block
// (FlashAttention-2's backward, with whole rows of keys per block).
//
// With masked_score c (the exporters' where(keep, s, c) with a finite c),
// a score whose mask is -inf is c; the keys a block skips (every row's mask
// dead there) are exact only where exp(c - the row's max) is 0, which each
// block checks, computing every key where it is not. Such a score is a
// constant: its ds is 0. With keep as well (where(keep, s, c) + mask), a
// score whose keep is false is c + mask, and its ds 0; a block skips the
// keys where that sum, or a kept key's mask, is dead.
//
// A half attention (bf16 or f16 q, kt, v and results; f32 mask, fill and
// lse) widens its half operands into the shared scratch, runs the f32
// kernel and rounds each result once: PyTorch's CPU half SDPA computes in
// f32 too.
//
//===----------------------------------------------------------------------===//

#include "Gemm.h"
#include "HalfConvert.h"
#include "KernelRegistry.h"
#include "KernelResources.h"
#include "ThreadPool.h"
#include "VecMath.h"
#include "tessel/runtime/Attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace tessel::runtime::cpu {
namespace {

/// The scores a task holds at once, in floats (1 MiB).
constexpr int64_t kScratchFloats = int64_t(1) << 18;

/// Query rows per block for T keys: what kScratchFloats holds, at most 128.
int64_t rowsPerBlock(int64_t t, int64_t s) {
  return std::max<int64_t>(1, std::min({int64_t(128), s,
                                        kScratchFloats / std::max<int64_t>(t, 1)}));
}

struct AttentionArgs {
  AttentionDims dims;
  const float *q = nullptr, *kt = nullptr, *v = nullptr, *mask = nullptr,
              *fill = nullptr;
  /// The scores whose mask is -inf are `masked` (has_masked_score); with
  /// `keep` (bool, 0 or 1), those whose keep is 0 are `masked` plus mask.
  bool replace = false;
  float masked = 0.0f;
  const uint8_t *keep = nullptr;
};

AttentionArgs attentionArgs(const KernelContext &c) {
  AttentionArgs a;
  const AttentionOperands at = attentionOperands(c.op);
  // The load-time checks accepted these shapes.
  makeAttentionDims(c.in(0).shape, c.in(1).shape, c.in(2).shape,
                    at.mask >= 0 ? &c.in(at.mask).shape : nullptr, a.dims,
                    at.keep >= 0 ? &c.in(at.keep).shape : nullptr);
  a.dims.scale = c.op.floatAttr("scale", 1.0f);
  a.q = static_cast<const float *>(c.operand(0));
  a.kt = static_cast<const float *>(c.operand(1));
  a.v = static_cast<const float *>(c.operand(2));
  if (at.mask >= 0)
    a.mask = static_cast<const float *>(c.operand(at.mask));
  if (at.fill >= 0)
    a.fill = static_cast<const float *>(c.operand(at.fill));
  a.replace = at.replaceMasked;
  a.masked = at.maskedScore;
  if (at.keep >= 0)
    a.keep = static_cast<const uint8_t *>(c.operand(at.keep));
  return a;
}

/// The mask value that stands for score (b, i, j) when deciding which keys
/// are dead: the mask, or with keep, c + mask where keep is false.
struct EffectiveMask {
  const float *m;
  const uint8_t *k; // null without keep
  int64_t mCol, kCol;
  float c;
  float operator()(int64_t j) const {
    const float v = m[j * mCol];
    return !k || k[j * kCol] ? v : c + v;
  }
};

/// The keys a block of rows computes: [begin, end), w = end - begin.
struct KeyRange {
  int64_t begin = 0, end = 0;
  int64_t width() const { return end - begin; }
};

/// Masks at or below kDeadMask (-inf, the exporters' finfo(f32).min) make
/// a score's probability exactly 0 in f32 when its row has a live key (a
/// mask at or above kLiveMask) and every |score| is below kScoreBound: the
/// dead score is at most 1e29 - 1e30, the row's max at least -1e29 - 1e20,
/// so their difference is below -8e29, far under vexp's underflow (-87.3).
constexpr float kDeadMask = -1e30f, kLiveMask = -1e20f;
constexpr double kScoreBound = 1e29;
/// The mask value whose score masked_score replaces.
constexpr float kHiddenMask = -std::numeric_limits<float>::infinity();

/// The largest Euclidean norm of the `n` rows of `x` [n, d] with row stride
/// `ld` and column stride `cs` (NaN and inf propagate).
double maxNorm(const float *x, int64_t n, int64_t d, int64_t ld, int64_t cs) {
  double best = 0;
  for (int64_t i = 0; i < n; ++i) {
    double sq = 0;
    for (int64_t k = 0; k < d; ++k) {
      const double v = x[i * ld + k * cs];
      sq += v * v;
    }
    best = std::isnan(sq) ? sq : std::max(best, sq);
  }
  return std::sqrt(best);
}

/// The largest norm of a batch entry's keys (the columns of its kt),
/// computed when first asked for that entry: only a block that can skip
/// keys needs it.
class KeyNorms {
public:
  explicit KeyNorms(const AttentionArgs &a) : a(a) {}
  double operator()(int64_t b) {
    if (b != of) {
      const AttentionDims &d = a.dims;
      norm = maxNorm(a.kt + b * d.d * d.t, d.t, d.d, 1, d.t);
      of = b;
    }
    return norm;
  }

private:
  const AttentionArgs &a;
  int64_t of = -1;
  double norm = 0;
};

/// The keys that rows [i0, i0 + n) of batch entry b must compute: all of
/// them, or, where every row has a live key and the scores are bounded
/// (|scale| |q_i| |k_j|, Cauchy-Schwarz), the span outside of which every
/// row's mask is dead: a causal mask's block skips the keys after its last
/// row (half the products of a causal attention), exactly.
KeyRange liveKeys(const AttentionArgs &a, int64_t b, int64_t i0, int64_t n,
                  KeyNorms &kNorms) {
  const AttentionDims &d = a.dims;
  const KeyRange all{0, d.t};
  if (!a.mask || d.t == 0)
    return all;
  const float *m0 = a.mask + d.maskOffset(b);
  const uint8_t *k0 = a.keep ? a.keep + d.keepOffset(b) : nullptr;
  KeyRange r{d.t, 0};
  // Rows from the last, each scanned from both ends to its outermost keys
  // that are not dead: a causal mask's last row spans every key, and once
  // the span does, no other row can change the answer (a fully masked row
  // answers every key too).
  for (int64_t i = n - 1; i >= 0; --i) {
    const EffectiveMask m{m0 + (i0 + i) * d.maskRowStride,
                          k0 ? k0 + (i0 + i) * d.keepRowStride : nullptr,
                          d.maskColStride, d.keepColStride, a.masked};
    int64_t first = 0, last = d.t - 1;
    while (first < d.t && m(first) <= kDeadMask) // NaN is not dead
      ++first;
    if (first == d.t)
      return all; // a fully masked row: its softmax reads every key
    while (m(last) <= kDeadMask)
      --last;
    bool live = false; // a live key is not dead: within [first, last]
    for (int64_t j = first; j <= last && !live; ++j)
      live = m(j) >= kLiveMask;
    if (!live)
      return all;
    r.begin = std::min(r.begin, first);
    r.end = std::max(r.end, last + 1);
    if (r.begin == 0 && r.end == d.t)
      return all;
  }
  const double qNorm = maxNorm(a.q + (b * d.s + i0) * d.d, n, d.d, d.d, 1);
  if (!(std::fabs(d.scale) * qNorm * kNorms(b) < kScoreBound))
    return all;
  return r;
}

/// The max of a row, NaN when one element is NaN.
float rowMax(const float *x, int64_t n) {
  float m = -std::numeric_limits<float>::infinity();
  bool nan = false;
  for (int64_t j = 0; j < n; ++j) {
    nan |= std::isnan(x[j]);
    m = std::max(m, x[j]);
  }
  return nan ? std::numeric_limits<float>::quiet_NaN() : m;
}

/// The row's softmax in place, exp(x - m) with vexp over its sum (as the
/// unfused kernel computes it), given its finite max m; returns the sum.
float softmaxInPlace(float *row, int64_t w, float m) {
  float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
  for (int64_t j = 0; j < w; ++j) {
    const float e = vexp(row[j] - m);
    row[j] = e;
    sum += e;
  }
  const float inv = 1.0f / sum;
  for (int64_t j = 0; j < w; ++j)
    row[j] *= inv;
  return sum;
}

/// Row i of batch entry b's mask from key r.begin (column stride
/// maskColStride).
const float *maskRow(const AttentionArgs &a, int64_t b, int64_t i, KeyRange r) {
  const AttentionDims &d = a.dims;
  return a.mask + d.maskOffset(b) + i * d.maskRowStride +
         r.begin * d.maskColStride;
}

/// Row i of batch entry b's keep from key r.begin (column stride
/// keepColStride); null without keep.
const uint8_t *keepRow(const AttentionArgs &a, int64_t b, int64_t i,
                       KeyRange r) {
  const AttentionDims &d = a.dims;
  return a.keep ? a.keep + d.keepOffset(b) + i * d.keepRowStride +
                      r.begin * d.keepColStride
                : nullptr;
}

/// Adds the mask's keys r of rows [i0, i0 + rows) of batch entry b to the
/// [rows, r.width()] scores (or, with `a.replace`, sets the scores whose
/// mask is -inf to `a.masked`; with keep too, those whose keep is false to
/// `a.masked` plus the mask).
void addMask(const AttentionArgs &a, int64_t b, int64_t i0, int64_t rows,
             KeyRange r, float *s) {
  const int64_t w = r.width(), cs = a.dims.maskColStride;
  const float *m0 = maskRow(a, b, i0, r);
  if (a.keep) {
    const uint8_t *k0 = keepRow(a, b, i0, r);
    const int64_t ks = a.dims.keepColStride;
    const float c = a.masked;
    for (int64_t i = 0; i < rows; ++i) {
      const float *m = m0 + i * a.dims.maskRowStride;
      const uint8_t *k = k0 + i * a.dims.keepRowStride;
      float *row = s + i * w;
      for (int64_t j = 0; j < w; ++j)
        row[j] = (k[j * ks] ? row[j] : c) + m[j * cs];
    }
    return;
  }
  auto each = [&](auto f) {
    for (int64_t i = 0; i < rows; ++i) {
      const float *m = m0 + i * a.dims.maskRowStride;
      float *row = s + i * w;
      if (cs == 1) {
#pragma omp simd
        for (int64_t j = 0; j < w; ++j)
          row[j] = f(row[j], m[j]);
      } else {
        for (int64_t j = 0; j < w; ++j)
          row[j] = f(row[j], m[j * cs]);
      }
    }
  };
  if (a.replace)
    each([c = a.masked](float x, float m) {
      return m == kHiddenMask ? c : x + m;
    });
  else
    each([](float x, float m) { return x + m; });
}

/// The scores of rows [i0, i0 + n) of batch entry b over their live keys
/// (liveKeys; every key when `allKeys`): scale q kt + mask into s [n,
/// width]; the keys' range.
KeyRange blockScores(const AttentionArgs &a, int64_t b, int64_t i0, int64_t n,
                     KeyNorms &kNorms, float *s, bool allKeys = false) {
  const AttentionDims &d = a.dims;
  const KeyRange r = allKeys ? KeyRange{0, d.t} : liveKeys(a, b, i0, n, kNorms);
  sgemm(false, false, n, r.width(), d.d, d.scale, a.q + (b * d.s + i0) * d.d,
        d.d, a.kt + b * d.d * d.t + r.begin, d.t, 0.0f, s, r.width());
  if (a.mask)
    addMask(a, b, i0, n, r, s);
  return r;
}

/// Whether the keys blockScores skipped are exact for a row whose largest
/// score (or lse) is `m`: a skipped key's mask is dead, so its probability
/// is 0, unless masked_score replaces it (a -inf mask) by a constant c
/// whose exp(c - m) the kernels' exp does not round to 0.
bool skippedKeysExact(const AttentionArgs &a, float m) {
  // With keep, a skipped key's c + mask is dead as well.
  return !a.replace || a.keep || vexp(a.masked - m) == 0.0f;
}

/// blockScores, over every key when masked_score makes a skipped key's
/// probability nonzero in one of the block's rows (then its row's largest
/// score is within about 87 of the constant: a row the mask hides all but
/// the small scores of).
KeyRange exactBlockScores(const AttentionArgs &a, int64_t b, int64_t i0,
                          int64_t n, KeyNorms &kNorms, float *s) {
  const KeyRange r = blockScores(a, b, i0, n, kNorms, s);
  const int64_t w = r.width();
  if (!a.replace || a.keep || w == a.dims.t)
    return r;
  for (int64_t i = 0; i < n; ++i)
    if (!skippedKeysExact(a, rowMax(s + i * w, w)))
      return blockScores(a, b, i0, n, kNorms, s, /*allKeys=*/true);
  return r;
}

/// fill times the sum of v's rows (a NaN row's result), into out [Dv].
void fillRow(const AttentionDims &d, const float *vb, float fill, float *out) {
  std::fill(out, out + d.dv, 0.0f);
  for (int64_t j = 0; j < d.t; ++j)
    for (int64_t k = 0; k < d.dv; ++k)
      out[k] += vb[j * d.dv + k];
  for (int64_t k = 0; k < d.dv; ++k)
    out[k] *= fill;
}

void attentionForward(const AttentionArgs &a, float *out, float *lse,
                      ThreadPool &pool) {
  const AttentionDims &d = a.dims;
  if (d.batch * d.s == 0)
    return;
  const int64_t rows = rowsPerBlock(d.t, d.s);
  const int64_t blocks = (d.s + rows - 1) / rows;
  pool.parallelFor(d.batch * blocks, 1, [&](int64_t begin, int64_t end) {
    std::vector<float> scratch(static_cast<size_t>(rows * std::max<int64_t>(d.t, 1)));
    float *s = scratch.data();
    KeyNorms kNorms(a);
    for (int64_t task = begin; task < end; ++task) {
      const int64_t b = task / blocks, i0 = (task % blocks) * rows;
      const int64_t n = std::min(rows, d.s - i0);
      const float *vb = a.v + b * d.t * d.dv;
      float *ob = out + (b * d.s + i0) * d.dv;
      float *lb = lse + b * d.s + i0;
      const KeyRange r = exactBlockScores(a, b, i0, n, kNorms, s);
      const int64_t w = r.width();
      for (int64_t i = 0; i < n; ++i) {
        float *row = s + i * w;
        const float m = rowMax(row, w);
        if (!std::isfinite(m)) { // every score -inf, or a NaN or +inf one
          lb[i] = std::numeric_limits<float>::quiet_NaN();
          std::fill(row, row + w, 0.0f);
          continue;
        }
        lb[i] = m + std::log(softmaxInPlace(row, w, m));
      }
      sgemm(false, false, n, d.dv, w, 1.0f, s, w, vb + r.begin * d.dv, d.dv,
            0.0f, ob, d.dv);
      for (int64_t i = 0; i < n; ++i) {
        if (!std::isnan(lb[i]))
          continue;
        float *o = ob + i * d.dv;
        if (a.fill)
          fillRow(d, vb, *a.fill, o);
        else
          std::fill(o, o + d.dv, std::numeric_limits<float>::quiet_NaN());
      }
    }
  });
}

Step attentionStep(const KernelContext &c) {
  const AttentionArgs a = attentionArgs(c);
  float *out = static_cast<float *>(c.result(0));
  float *lse = static_cast<float *>(c.result(1));
  ThreadPool *pool = &c.pool;
  return [=] {
    attentionForward(a, out, lse, *pool);
    return Status::ok();
  };
}

struct GradBuffers {
  const float *out, *lse, *grad;
  float *dq, *dkt, *dv;
};

void attentionBackward(const AttentionArgs &a, const GradBuffers &g,
                       ThreadPool &pool) {
  const AttentionDims &d = a.dims;
  const int64_t rows = rowsPerBlock(d.t, d.s);
  std::fill(g.dq, g.dq + d.batch * d.s * d.d, 0.0f);
  std::fill(g.dkt, g.dkt + d.batch * d.d * d.t, 0.0f);
  std::fill(g.dv, g.dv + d.batch * d.t * d.dv, 0.0f);
  if (d.batch * d.s * d.t == 0)
    return;
  pool.parallelFor(d.batch, 1, [&](int64_t begin, int64_t end) {
    const size_t block = static_cast<size_t>(rows * d.t);
    std::vector<float> pBuf(block), dpBuf(block), delta(rows);
    float *p = pBuf.data(), *dp = dpBuf.data();
    for (int64_t b = begin; b < end; ++b) {
      const float *ktb = a.kt + b * d.d * d.t;
      const float *vb = a.v + b * d.t * d.dv;
      float *dktb = g.dkt + b * d.d * d.t;
      float *dvb = g.dv + b * d.t * d.dv;
      KeyNorms kNorms(a);
      for (int64_t i0 = 0; i0 < d.s; i0 += rows) {
        const int64_t n = std::min(rows, d.s - i0);
        const int64_t r0 = b * d.s + i0;
        const float *qb = a.q + r0 * d.d;
        const float *ob = g.out + r0 * d.dv, *gb = g.grad + r0 * d.dv;
        const float *lb = g.lse + r0;
        // The forward's keys: the others' probabilities are exactly 0 (a
        // replaced score's exp(c - lse) too, or every key's is computed).
        KeyRange r = blockScores(a, b, i0, n, kNorms, p);
        if (a.replace && !a.keep && r.width() < d.t)
          for (int64_t i = 0; i < n; ++i)
            if (std::isfinite(lb[i]) && !skippedKeysExact(a, lb[i])) {
              r = blockScores(a, b, i0, n, kNorms, p, /*allKeys=*/true);
              break;
            }
        const int64_t w = r.width();
        // The mask (or keep) of the block's first row, where masked_score
        // replaces.
        const float *hidden0 = a.replace ? maskRow(a, b, i0, r) : nullptr;
        const uint8_t *keep0 = keepRow(a, b, i0, r);
        for (int64_t i = 0; i < n; ++i) {
          float *row = p + i * w;
          const float l = lb[i];
          if (!std::isfinite(l)) { // a NaN row: its probabilities are the fill
            std::fill(row, row + w, 0.0f);
            continue;
          }
          if (a.replace) {
            // The softmax again, not exp(s - lse): a row the constant
            // leads (a row the mask hides whole) has |lse| near |c|, whose
            // f32 rounding (6e-4 at 1e4) exp(s - lse) would carry.
            softmaxInPlace(row, w, rowMax(row, w));
          } else {
#pragma omp simd
            for (int64_t j = 0; j < w; ++j)
              row[j] = vexp(row[j] - l);
          }
          float dot = 0.0f;
          for (int64_t k = 0; k < d.dv; ++k)
            dot += gb[i * d.dv + k] * ob[i * d.dv + k];
          delta[i] = dot;
        }
        // dv += p^T grad; dp = grad v^T.
        sgemm(true, false, w, d.dv, n, 1.0f, p, w, gb, d.dv, 1.0f,
              dvb + r.begin * d.dv, d.dv);
        sgemm(false, true, n, w, d.dv, 1.0f, gb, d.dv, vb + r.begin * d.dv,
              d.dv, 0.0f, dp, w);
        for (int64_t i = 0; i < n; ++i) {
          float *row = p + i * w;
          const float *dpr = dp + i * w;
          if (!std::isfinite(lb[i])) {
            if (a.fill) // every key's probability was the fill
              for (int64_t j = 0; j < d.t; ++j)
                for (int64_t k = 0; k < d.dv; ++k)
                  dvb[j * d.dv + k] += *a.fill * gb[i * d.dv + k];
            continue; // ds = 0: the fill does not depend on the scores
          }
          const float di = delta[i];
#pragma omp simd
          for (int64_t j = 0; j < w; ++j)
            row[j] *= dpr[j] - di;
          if (keep0) { // c + mask: ds = 0
            const uint8_t *k = keep0 + i * d.keepRowStride;
            for (int64_t j = 0; j < w; ++j)
              if (!k[j * d.keepColStride])
                row[j] = 0.0f;
          } else if (a.replace) { // a replaced score is a constant: ds = 0
            const float *m = hidden0 + i * d.maskRowStride;
            for (int64_t j = 0; j < w; ++j)
              if (m[j * d.maskColStride] == kHiddenMask)
                row[j] = 0.0f;
          }
        }
        // dq = scale ds kt^T; dkt += scale q^T ds.
        sgemm(false, true, n, d.d, w, d.scale, p, w, ktb + r.begin, d.t, 0.0f,
              g.dq + r0 * d.d, d.d);
        sgemm(true, false, d.d, w, n, d.scale, qb, d.d, p, w, 1.0f,
              dktb + r.begin, d.t);
      }
    }
  });
}

Step attentionGradStep(const KernelContext &c) {
  const AttentionArgs a = attentionArgs(c);
  const GradBuffers g{static_cast<const float *>(c.operand(3)),
                      static_cast<const float *>(c.operand(4)),
                      static_cast<const float *>(c.operand(5)),
                      static_cast<float *>(c.result(0)),
                      static_cast<float *>(c.result(1)),
                      static_cast<float *>(c.result(2))};
  ThreadPool *pool = &c.pool;
  return [=] {
    attentionBackward(a, g, *pool);
    return Status::ok();
  };
}

/// A half attention or attention_grad: its half operands (q, kt, v, and
/// the gradient's result and grad) widened into res.halfAttention, the f32
/// kernel into f32 results there, each half result rounded once.
Step halfStep(const KernelContext &c) {
  const bool grad = c.op.kind == OpKind::AttentionGrad;
  const DType half = c.in(0).dtype;
  // Slots: the half operands, then the half results.
  const std::vector<int> ins = attentionTypedOperands(c.op.kind);
  std::vector<int> outs =
      grad ? std::vector<int>{0, 1, 2} : std::vector<int>{0};
  KernelResources::Scratch *s = c.resources.halfAttention;
  const size_t slots = ins.size() + outs.size();
  for (size_t k = 0; k < slots; ++k) {
    const BufferInfo &b =
        k < ins.size() ? c.in(ins[k]) : c.out(outs[k - ins.size()]);
    if (!s[k].reserve(std::max<int64_t>(b.numel, 1) * sizeof(float))) {
      const Status st = Status::error(
          "cannot allocate " + std::to_string(b.numel * sizeof(float)) +
          " bytes to widen half attention instruction " +
          std::to_string(c.index));
      if (c.resources.stepError.isOk())
        c.resources.stepError = st;
      return [st] { return st; };
    }
  }
  std::vector<const uint16_t *> src;
  std::vector<int64_t> inCount, outCount;
  for (int i : ins) {
    src.push_back(static_cast<const uint16_t *>(c.operand(i)));
    inCount.push_back(c.in(i).numel);
  }
  std::vector<uint16_t *> dst;
  for (int i : outs) {
    dst.push_back(static_cast<uint16_t *>(c.result(i)));
    outCount.push_back(c.out(i).numel);
  }
  const AttentionArgs base = attentionArgs(c);
  const float *lseIn =
      grad ? static_cast<const float *>(c.operand(4)) : nullptr;
  float *lseOut = grad ? nullptr : static_cast<float *>(c.result(1));
  ThreadPool *pool = &c.pool;
  return [=] {
    float *f[8];
    for (size_t k = 0; k < slots; ++k)
      f[k] = reinterpret_cast<float *>(s[k].data.get());
    for (size_t k = 0; k < src.size(); ++k) {
      const uint16_t *h = src[k];
      float *w = f[k];
      pool->parallelFor(inCount[k], 1 << 14, [&](int64_t b, int64_t e) {
        widenHalfArray(half, h + b, w + b, e - b);
      });
    }
    AttentionArgs a = base;
    a.q = f[0];
    a.kt = f[1];
    a.v = f[2];
    float *const *r = f + src.size();
    if (grad)
      attentionBackward(a, GradBuffers{f[3], lseIn, f[4], r[0], r[1], r[2]},
                        *pool);
    else
      attentionForward(a, r[0], lseOut, *pool);
    for (size_t k = 0; k < dst.size(); ++k) {
      const float *w = r[k];
      uint16_t *h = dst[k];
      pool->parallelFor(outCount[k], 1 << 14, [&](int64_t b, int64_t e) {
        narrowHalfArray(half, w + b, h + b, e - b);
      });
    }
    return Status::ok();
  };
}

Step attentionKernel(const KernelContext &c) {
  return isHalf(c.in(0).dtype) ? halfStep(c) : attentionStep(c);
}

Step attentionGradKernel(const KernelContext &c) {
  return isHalf(c.in(0).dtype) ? halfStep(c) : attentionGradStep(c);
}

} // namespace

void registerAttentionKernels(KernelRegistry &r) {
  addKernels(r, {{OpKind::Attention, attentionKernel},
                 {OpKind::AttentionGrad, attentionGradKernel}});
}

} // namespace tessel::runtime::cpu
