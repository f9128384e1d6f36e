//===- FlashAttentionSimt.h - f32 attention on CUDA cores -*- C++ -*-===//
//
// An f32 attention and its gradient in FlashAttention-2's tiles, on the
// CUDA cores (f32 has no tensor-core mma that keeps f32's precision: TF32
// would round the operands to 10 bits, which Tessel's f32 does not do
// anywhere). The same blocks as the half tiles of FlashAttention.h: 128
// threads per 64 query rows (forward, dq) or 64 keys (dk and dv), 64-key or
// 64-row tiles staged in shared memory, an online f32 softmax, the same
// exact skips of dead tiles and NaN rows, masked_score and its stats pass;
// only the products differ.
//
// Each thread holds a 4 x 8 tile of the block's 64 x 64 scores: the
// 16 groups of 8 consecutive threads (grp = tid / 8, c = tid % 8) each own
// 4 rows, 4 grp to 4 grp + 3 (so warp w owns rows 16 w to 16 w + 15, as a
// warp of the half tiles does), and a thread of a group the 8 columns c,
// c + 8, ..., c + 56. A row's max and sum are reduced over its group's 8
// lanes by shuffles. The scores are 4-wide dot products out of shared
// memory, float4 loads with rows padded to D + 4 floats (the 8 rows a
// quarter warp reads then fall on distinct banks); the probabilities go
// through shared memory ([64, 68]) to the products with v, where a thread
// owns 4 rows and the columns c, c + 8, ... of the result.
//
// Written over the same context as FlashAttention.h (without its mma, with
// a hook, tileComputed, by which the emulator counts the tiles), so that
// test/unit/Runtime/FlashAttentionEmulatorTest.cpp runs it on the host;
// FlashAttention.cu runs it on the device.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_RUNTIME_CUDA_FLASHATTENTIONSIMT_H
#define TESSEL_RUNTIME_CUDA_FLASHATTENTIONSIMT_H

#include "FlashAttention.h"

namespace tessel::runtime::cuda::flash {

namespace simt {

/// Row stride of a [64, D] tile and of the [64, 64] probabilities, in floats:
/// multiples of 4 (float4 loads).
#if defined(__CUDACC__)
__host__ __device__
#endif
    constexpr int
    rowStride(int d) {
  return d + 4;
}
constexpr int kProbStride = kKeys + 4;

/// Shared memory of the forward: q's tile, k's (key-major) and v's, the
/// probabilities.
constexpr int sharedBytes(int d) {
  return (kRows * rowStride(d) + 2 * kKeys * rowStride(d) +
          kRows * kProbStride) *
         4;
}
/// Of dkvBlock: k's and v's tiles, q's and grad's, p^T and ds^T.
constexpr int dkvSharedBytes(int d) {
  return (2 * kKeys * rowStride(d) + 2 * kRows * rowStride(d) +
          2 * kKeys * kProbStride) *
         4;
}
/// Of dqBlock: q's and grad's tiles, k's (key-major) and v's, ds.
constexpr int dqSharedBytes(int d) {
  return (2 * kRows * rowStride(d) + 2 * kKeys * rowStride(d) +
          kRows * kProbStride) *
         4;
}

/// Four floats from 16-byte aligned shared memory (one float4 load on the
/// device).
TSL_FLASH_FN void load4(const float *p, float v[4]) {
#if defined(__CUDA_ARCH__)
  const float4 x = *reinterpret_cast<const float4 *>(p);
  v[0] = x.x;
  v[1] = x.y;
  v[2] = x.z;
  v[3] = x.w;
#else
  v[0] = p[0];
  v[1] = p[1];
  v[2] = p[2];
  v[3] = p[3];
#endif
}

/// A thread's place: its group's first row (or key) in the block, and its
/// column in the group.
struct Place {
  int r0, c;
};
TSL_FLASH_FN Place placeOf(int tid) { return {(tid >> 3) * 4, tid & 7}; }

/// acc[i][j] = row r0 + i of x times row c + 8 j of y, both [64, D] tiles
/// with rowStride(D).
template <int D>
TSL_FLASH_FN void dotTile(float (*acc)[8], const float *x, int r0,
                          const float *y, int c) {
  constexpr int L = rowStride(D);
  TSL_FLASH_UNROLL
  for (int i = 0; i < 4; ++i)
    TSL_FLASH_UNROLL
  for (int j = 0; j < 8; ++j)
    acc[i][j] = 0.0f;
  // Unrolled four steps deep: a full unroll hoists loads past the
  // registers (255 and spills in the backward).
  TSL_FLASH_UNROLL_BY(4)
  for (int k = 0; k < D; k += 4) {
    float xv[4][4];
    TSL_FLASH_UNROLL
    for (int i = 0; i < 4; ++i)
      load4(x + (r0 + i) * L + k, xv[i]);
    TSL_FLASH_UNROLL
    for (int j = 0; j < 8; ++j) {
      float yv[4];
      load4(y + (c + 8 * j) * L + k, yv);
      TSL_FLASH_UNROLL
      for (int i = 0; i < 4; ++i)
        acc[i][j] += xv[i][0] * yv[0] + xv[i][1] * yv[1] + xv[i][2] * yv[2] +
                     xv[i][3] * yv[3];
    }
  }
}

/// acc[i][n] += sum over the 64 columns j of p[r0 + i][j] y[j][c + 8 n]:
/// p [64, kProbStride], y a [64, D] tile.
template <int D>
TSL_FLASH_FN void accumulateTile(float (*acc)[D / 8], const float *p, int r0,
                                 const float *y, int c) {
  constexpr int L = rowStride(D);
  TSL_FLASH_UNROLL
  for (int j = 0; j < kKeys; j += 4) {
    float pv[4][4];
    TSL_FLASH_UNROLL
    for (int i = 0; i < 4; ++i)
      load4(p + (r0 + i) * kProbStride + j, pv[i]);
    TSL_FLASH_UNROLL
    for (int jj = 0; jj < 4; ++jj)
      TSL_FLASH_UNROLL
    for (int n = 0; n < D / 8; ++n) {
      const float yv = y[(j + jj) * L + c + 8 * n];
      TSL_FLASH_UNROLL
      for (int i = 0; i < 4; ++i)
        acc[i][n] += pv[i][jj] * yv;
    }
  }
}

/// x reduced over the 8 lanes of a group with f.
template <class Ctx, class F>
TSL_FLASH_FN float groupReduce(Ctx &ctx, float x, F f) {
  x = f(x, ctx.shflXor(x, 1));
  x = f(x, ctx.shflXor(x, 2));
  return f(x, ctx.shflXor(x, 4));
}

struct MaxNan {
  TSL_FLASH_FN float operator()(float a, float b) const { return maxNan(a, b); }
};
struct Sum {
  TSL_FLASH_FN float operator()(float a, float b) const { return a + b; }
};
struct Max {
  TSL_FLASH_FN float operator()(float a, float b) const { return fmaxf(a, b); }
};

/// Whether a forward warp may skip dead tiles (FlashAttention.h's
/// warpMaySkip, for this layout): each of its 16 rows past none has a live
/// key, and |scale| times their largest q norm times the keys' is below
/// kScoreBound.
template <int D, class Ctx>
TSL_FLASH_FN bool warpMaySkip(Ctx &ctx, const ArgsF32 &a, int64_t b,
                              const float *mb, const float *sQ, int r0,
                              const int64_t *gr, int c) {
  constexpr int L = rowStride(D);
  const AttentionDims &d = a.dims;
  float qn = 0.0f, live = 1.0f;
  for (int i = 0; i < 4; ++i) {
    float sq = 0.0f;
    for (int k = c; k < D; k += 8)
      sq += sQ[(r0 + i) * L + k] * sQ[(r0 + i) * L + k];
    qn = maxNan(qn, groupReduce(ctx, sq, Sum()));
    float any = gr[i] < d.s ? 0.0f : 1.0f;
    for (int64_t j = c; j < d.t && gr[i] < d.s; j += 8)
      if (mb[gr[i] * d.maskRowStride + j * d.maskColStride] >= kLiveMask)
        any = 1.0f;
    live = fminf(live, groupReduce(ctx, any, Max()));
  }
  for (int m = 8; m < 32; m <<= 1) {
    qn = maxNan(qn, ctx.shflXor(qn, m));
    live = fminf(live, ctx.shflXor(live, m));
  }
  const float bound = fabsf(d.scale) * sqrtf(qn) * a.kNorm[b];
  return live == 1.0f && bound < kScoreBound;
}

/// Whether the key tile at k0 is dead for this warp's rows (each thread's 4
/// rows and its 8 keys c + 8 j) where skips are allowed at all (canSkip,
/// the same for the whole block).
template <class Ctx>
TSL_FLASH_FN int keyTileDead(Ctx &ctx, bool canSkip, const float *mb,
                             const AttentionDims &d, const int64_t *rows,
                             int64_t k0, int c) {
  if (!canSkip)
    return 0;
  int64_t ks[8];
  for (int j = 0; j < 8; ++j)
    ks[j] = k0 + c + 8 * j;
  return deadTile(ctx, mb, d, rows, 4, ks, 8);
}

/// Stages the key tile at k0 of a batch entry's kt [D, T] (key-major) into
/// sK and of its v [T, D] into sV.
template <int D, class Ctx>
TSL_FLASH_FN void stageKeyTile(Ctx &ctx, const float *kt, const float *v,
                               int64_t T, int64_t k0, float *sK, float *sV) {
  stageKeys<D>(ctx, kt, T, k0, sK, rowStride(D), nullptr, 0);
  stageRows<D>(ctx, v, T, k0, kKeys, sV, rowStride(D), nullptr, 0);
}

/// One forward block: rows [row0, row0 + kRows) of batch entry b; `smem`
/// holds sharedBytes(D) bytes, 16-byte aligned.
template <int D, class Ctx>
TSL_FLASH_FN void forwardBlock(Ctx &ctx, const ArgsF32 &a, int64_t b,
                               int64_t row0, float *smem) {
  constexpr int L = rowStride(D);
  float *sQ = smem, *sK = sQ + kRows * L, *sV = sK + kKeys * L,
        *sP = sV + kKeys * L;
  const AttentionDims &d = a.dims;
  const int64_t S = d.s, T = d.t;
  const auto [r0, c] = placeOf(ctx.tid());
  const float *ktb = a.kt + b * D * T, *vb = a.v + b * T * D;
  const float *mb = maskOf(a.mask, d, b);
  const uint8_t *kb = keepOf(a.keep, d, b);
  const bool stats = a.rowMax != nullptr;

  stageRows<D>(ctx, a.q + b * S * D, S, row0, kRows, sQ, L, nullptr, 0);
  ctx.sync();
  int64_t gr[4];
  for (int i = 0; i < 4; ++i)
    gr[i] = row0 + r0 + i;
  const bool canSkip = mb && a.kNorm && !a.replace &&
                       warpMaySkip<D>(ctx, a, b, mb, sQ, r0, gr, c);

  float m[4], l[4], alpha[4], o[4][D / 8];
  TSL_FLASH_UNROLL
  for (int i = 0; i < 4; ++i) {
    m[i] = -INFINITY;
    l[i] = 0.0f;
    TSL_FLASH_UNROLL
    for (int n = 0; n < D / 8; ++n)
      o[i][n] = 0.0f;
  }

  for (int64_t k0 = 0; k0 < T; k0 += kKeys) {
    const int skip = keyTileDead(ctx, canSkip, mb, d, gr, k0, c);
    if (ctx.syncAnd(skip))
      continue; // dead for the whole block: not even loaded
    if (stats)  // the stats pass reads no v
      stageKeys<D>(ctx, ktb, T, k0, sK, L, nullptr, 0);
    else
      stageKeyTile<D>(ctx, ktb, vb, T, k0, sK, sV);
    ctx.sync();
    if (!skip) {
      ctx.tileComputed();
      float s[4][8];
      dotTile<D>(s, sQ, r0, sK, c);
      // scale q kt + mask; keys past T are -inf; the online softmax.
      TSL_FLASH_UNROLL
      for (int i = 0; i < 4; ++i) {
        float tileMax = -INFINITY;
        TSL_FLASH_UNROLL
        for (int j = 0; j < 8; ++j) {
          const int64_t key = k0 + c + 8 * j;
          float x = d.scale * s[i][j];
          if (key >= T)
            x = -INFINITY;
          else if (mb && gr[i] < S)
            x = maskedScore(x, mb, kb, a.replace, a.masked, d, gr[i], key);
          s[i][j] = x;
          tileMax = maxNan(tileMax, x);
        }
        tileMax = groupReduce(ctx, tileMax, MaxNan());
        const float mNew = maxNan(m[i], tileMax);
        // While every score so far is -inf the sums are 0: nothing to
        // rescale, and exp(-inf - 0) = 0.
        const float base = mNew == -INFINITY ? 0.0f : mNew;
        alpha[i] = expf(m[i] - base);
        m[i] = mNew;
        float sum = 0.0f;
        TSL_FLASH_UNROLL
        for (int j = 0; j < 8; ++j) {
          const float p = expf(s[i][j] - base);
          sum += p;
          sP[(r0 + i) * kProbStride + c + 8 * j] = p;
        }
        l[i] = l[i] * alpha[i] + groupReduce(ctx, sum, Sum());
      }
    }
    ctx.sync(); // every row's probabilities of the tile are in sP
    if (!skip && !stats) {
      TSL_FLASH_UNROLL
      for (int i = 0; i < 4; ++i)
        TSL_FLASH_UNROLL
      for (int n = 0; n < D / 8; ++n)
        o[i][n] *= alpha[i];
      accumulateTile<D>(o, sP, r0, sV, c);
    }
    ctx.sync(); // the next tile overwrites sK, sV and sP
  }

  if (stats) {
    storeStats(a, b, gr, m, l, c, 4);
    return;
  }
  for (int i = 0; i < 4; ++i) {
    if (gr[i] >= S)
      continue;
    const int64_t row = b * S + gr[i];
    const bool bad = !(fabsf(m[i]) <= 3.4028235e38f); // -inf, +inf or NaN
    if (c == 0)
      a.lse[row] = bad ? NAN : m[i] + logf(l[i]);
    const float inv = 1.0f / l[i];
    for (int n = 0; n < D / 8; ++n)
      a.out[row * D + c + 8 * n] = bad ? NAN : o[i][n] * inv;
  }
}

/// dk and dv of keys [k0, k0 + kKeys) of batch entry b (FlashAttention.h's
/// dkvBlock): this thread's 4 keys are the rows of its accumulators.
template <int D, class Ctx>
TSL_FLASH_FN void dkvBlock(Ctx &ctx, const GradArgsF32 &a, int64_t b,
                           int64_t k0, float *smem) {
  constexpr int L = rowStride(D);
  float *sK = smem, *sV = sK + kKeys * L, *sQ = sV + kKeys * L,
        *sG = sQ + kRows * L, *sPt = sG + kRows * L,
        *sDt = sPt + kKeys * kProbStride;
  const AttentionDims &d = a.dims;
  const int64_t S = d.s, T = d.t;
  const auto [r0, c] = placeOf(ctx.tid());
  const float *mb = maskOf(a.mask, d, b);
  const uint8_t *kb = keepOf(a.keep, d, b);
  const float fill = a.fill ? *a.fill : 0.0f;
  const float *lb = a.lse + b * S, *db = a.delta + b * S;
  const float *mx = a.rowMax ? a.rowMax + b * S : nullptr,
              *ls = a.rowLogSum ? a.rowLogSum + b * S : nullptr;
  stageKeyTile<D>(ctx, a.kt + b * D * T, a.v + b * T * D, T, k0, sK, sV);
  int64_t keys[4];
  for (int i = 0; i < 4; ++i)
    keys[i] = k0 + r0 + i;
  const bool canSkip = gradMaySkip(a, mb, b);
  float dK[4][D / 8], dV[4][D / 8];
  TSL_FLASH_UNROLL
  for (int i = 0; i < 4; ++i)
    TSL_FLASH_UNROLL
  for (int n = 0; n < D / 8; ++n)
    dK[i][n] = dV[i][n] = 0.0f;

  for (int64_t q0 = 0; q0 < S; q0 += kRows) {
    int64_t qs[8];
    for (int j = 0; j < 8; ++j)
      qs[j] = q0 + c + 8 * j;
    const int skip = canSkip && lseBounded(ctx, lb, S, qs, 8) &&
                     deadTile(ctx, mb, d, qs, 8, keys, 4);
    if (ctx.syncAnd(skip))
      continue;
    stageRows<D>(ctx, a.q + b * S * D, S, q0, kRows, sQ, L, nullptr, 0);
    stageRows<D>(ctx, a.grad + b * S * D, S, q0, kRows, sG, L, nullptr, 0);
    ctx.sync();
    if (!skip) {
      ctx.tileComputed();
      // p^T (4 keys x 8 queries) into sPt, then dp^T and ds^T into sDt.
      float t[4][8];
      dotTile<D>(t, sK, r0, sQ, c);
      TSL_FLASH_UNROLL
      for (int i = 0; i < 4; ++i)
        TSL_FLASH_UNROLL
      for (int j = 0; j < 8; ++j) {
        const int64_t q = qs[j];
        float p = 0.0f;
        if (q < S && keys[i] < T) {
          const float lq = lb[q];
          if (fabsf(lq) <= 3.4028235e38f) {
            float x = d.scale * t[i][j];
            if (mb)
              x = maskedScore(x, mb, kb, a.replace, a.masked, d, q, keys[i]);
            p = probability(x, lq, mx, ls, q);
          } else {
            p = fill; // every key's probability was the fill; ds = 0
          }
        }
        sPt[(r0 + i) * kProbStride + c + 8 * j] = p;
      }
      dotTile<D>(t, sV, r0, sG, c);
      TSL_FLASH_UNROLL
      for (int i = 0; i < 4; ++i)
        TSL_FLASH_UNROLL
      for (int j = 0; j < 8; ++j) {
        const int64_t q = qs[j];
        float ds = 0.0f;
        if (q < S && keys[i] < T && fabsf(lb[q]) <= 3.4028235e38f &&
            !(mb && constantScore(mb, kb, a.replace, d, q, keys[i])))
          ds = sPt[(r0 + i) * kProbStride + c + 8 * j] * (t[i][j] - db[q]);
        sDt[(r0 + i) * kProbStride + c + 8 * j] = ds;
      }
    }
    ctx.sync(); // p^T and ds^T of every key of the block
    if (!skip) {
      accumulateTile<D>(dV, sPt, r0, sG, c); // dv += p^T grad
      accumulateTile<D>(dK, sDt, r0, sQ, c); // dk += ds^T q
    }
    ctx.sync(); // the next query tile overwrites sQ, sG, sPt and sDt
  }

  for (int i = 0; i < 4; ++i) {
    if (keys[i] >= T)
      continue;
    for (int n = 0; n < D / 8; ++n) {
      const int col = c + 8 * n;
      a.dkt[(b * D + col) * T + keys[i]] = d.scale * dK[i][n];
      a.dv[(b * T + keys[i]) * D + col] = dV[i][n];
    }
  }
}

/// dq of rows [row0, row0 + kRows) of batch entry b (FlashAttention.h's
/// dqBlock).
template <int D, class Ctx>
TSL_FLASH_FN void dqBlock(Ctx &ctx, const GradArgsF32 &a, int64_t b,
                          int64_t row0, float *smem) {
  constexpr int L = rowStride(D);
  float *sQ = smem, *sG = sQ + kRows * L, *sK = sG + kRows * L,
        *sV = sK + kKeys * L, *sDs = sV + kKeys * L;
  const AttentionDims &d = a.dims;
  const int64_t S = d.s, T = d.t;
  const auto [r0, c] = placeOf(ctx.tid());
  const float *mb = maskOf(a.mask, d, b);
  const uint8_t *kb = keepOf(a.keep, d, b);
  const float *lb = a.lse + b * S, *db = a.delta + b * S;
  const float *mx = a.rowMax ? a.rowMax + b * S : nullptr,
              *ls = a.rowLogSum ? a.rowLogSum + b * S : nullptr;
  stageRows<D>(ctx, a.q + b * S * D, S, row0, kRows, sQ, L, nullptr, 0);
  stageRows<D>(ctx, a.grad + b * S * D, S, row0, kRows, sG, L, nullptr, 0);
  int64_t rows[4];
  float lr[4], dl[4];
  bool ok[4];
  for (int i = 0; i < 4; ++i) {
    rows[i] = row0 + r0 + i;
    lr[i] = rows[i] < S ? lb[rows[i]] : 0.0f;
    dl[i] = rows[i] < S ? db[rows[i]] : 0.0f;
    ok[i] = rows[i] < S && fabsf(lr[i]) <= 3.4028235e38f;
  }
  const bool canSkip = gradMaySkip(a, mb, b) && lseBounded(ctx, lb, S, rows, 4);
  float dQ[4][D / 8];
  TSL_FLASH_UNROLL
  for (int i = 0; i < 4; ++i)
    TSL_FLASH_UNROLL
  for (int n = 0; n < D / 8; ++n)
    dQ[i][n] = 0.0f;

  for (int64_t k0 = 0; k0 < T; k0 += kKeys) {
    const int skip = keyTileDead(ctx, canSkip, mb, d, rows, k0, c);
    if (ctx.syncAnd(skip))
      continue;
    stageKeyTile<D>(ctx, a.kt + b * D * T, a.v + b * T * D, T, k0, sK, sV);
    ctx.sync();
    if (!skip) {
      ctx.tileComputed();
      // p into sDs, then ds = p (dp - delta) over it.
      float t[4][8];
      dotTile<D>(t, sQ, r0, sK, c);
      TSL_FLASH_UNROLL
      for (int i = 0; i < 4; ++i)
        TSL_FLASH_UNROLL
      for (int j = 0; j < 8; ++j) {
        const int64_t key = k0 + c + 8 * j;
        float p = 0.0f;
        if (ok[i] && key < T) {
          float x = d.scale * t[i][j];
          if (mb)
            x = maskedScore(x, mb, kb, a.replace, a.masked, d, rows[i], key);
          p = probability(x, lr[i], mx, ls, rows[i]);
        }
        sDs[(r0 + i) * kProbStride + c + 8 * j] = p;
      }
      dotTile<D>(t, sG, r0, sV, c);
      TSL_FLASH_UNROLL
      for (int i = 0; i < 4; ++i)
        TSL_FLASH_UNROLL
      for (int j = 0; j < 8; ++j) {
        const int64_t key = k0 + c + 8 * j;
        float &p = sDs[(r0 + i) * kProbStride + c + 8 * j];
        p = ok[i] && key < T &&
                    !(mb && constantScore(mb, kb, a.replace, d, rows[i], key))
                ? p * (t[i][j] - dl[i])
                : 0.0f;
      }
    }
    ctx.sync(); // ds of every row of the block
    if (!skip)
      accumulateTile<D>(dQ, sDs, r0, sK, c); // dq += ds k
    ctx.sync(); // the next key tile overwrites sK, sV and sDs
  }

  for (int i = 0; i < 4; ++i) {
    if (rows[i] >= S)
      continue;
    for (int n = 0; n < D / 8; ++n)
      a.dq[(b * S + rows[i]) * D + c + 8 * n] = d.scale * dQ[i][n];
  }
}

} // namespace simt
} // namespace tessel::runtime::cuda::flash

#endif // TESSEL_RUNTIME_CUDA_FLASHATTENTIONSIMT_H
