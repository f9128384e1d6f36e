//===- FlashAttention.h - half attention on tensor cores --*- C++ -*-===//
//
// A half attention (bf16 or f16 q, kt, v and result; f32 mask, lse and
// sums) and its gradient as FlashAttention-2 computes them (the backward's
// two passes are described where they begin, below). The forward: one
// thread block of four warps per 64 query rows of a batch entry, each warp
// 16 rows; per tile of 64 keys, the block stages k and v in shared memory,
// each warp computes its scores with mma.sync (m16n8k16, f32 sums), adds
// the mask, updates its rows' running max and sum (an online softmax in
// f32), rounds the probabilities to the half and multiplies them by v's
// tile with mma.sync into f32 accumulators. No [S, T] tensor exists anywhere;
// each result element is rounded once, after the division by the row's sum.
//
// Dead keys are skipped as the CPU kernel skips them (cpu/Attention.cpp,
// liveKeys), and exactly: a warp skips a tile whose mask is at or below
// -1e30 for all of its rows when each of its rows has a live key (a mask at
// or above -1e20) and |scale| |q_i| |k_j| < 1e29 for its rows and every key
// (the exponentials of the dead scores are then exactly 0 in f32); a block
// whose four warps skip does not load the tile. A causal mask's blocks so
// compute half the tiles.
//
// With masked_score (the exporters' where(keep, s, c) with a finite c, the
// Annotated Transformer's masked_fill(mask == 0, -1e9)), a score whose
// mask is -inf is c instead (with keep: a score whose keep is false is c
// plus its mask), as cpu/Attention.cpp's addMask; such an attention skips
// no tile (a replaced key is not dead). Its backward cannot recompute
// p = exp(s - lse) from lse in a row that c leads: lse = c + log(sum)
// rounds to c where |c| is large (the f32 unit at 1e9 is 64, more than
// log T), and p would be 1 for every key. So a stats pass first (the
// forward's blocks without v, `rowMax` set) stores each row's max and
// log-sum apart, and the backward's p is exp((s - max) - logsum): the
// row's softmax, as the CPU recomputes it. A replaced score is a constant:
// its ds is 0.
//
// A row whose max is not finite (every score -inf, or a NaN or +inf one)
// gets lse NaN and a NaN result, which launchFlashAttention's second kernel
// replaces by the NaN guard's fill times the sum of v's rows.
//
// The algorithm is written once, over a context `Ctx` that supplies the
// thread's index, block barriers, warp shuffles, the mma and the
// conversions between f32 and the half (widen, narrow, and pack: two
// values rounded into one register, the lower first): FlashAttention.cu
// instantiates it with the device's (threadIdx, __syncthreads, shfl,
// mma.sync PTX); test/unit/Runtime/FlashAttentionEmulatorTest.cpp with a
// host emulation (a fiber per CUDA thread, the mma computed from the
// fragments' documented layouts), so that the tiling, the online softmax,
// the masking, the skips and the fragment packing are tested on every
// machine, and only the instructions themselves need a GPU
// (CudaTrainingTest's HalfAttention compares the device with the CPU).
//
// Fragment layouts of mma.m16n8k16 (PTX ISA, "Matrix Fragments for
// mma.m16n8k16 with floating point type"), lane = 4 g + t:
//   A (16 x 16, row): reg 0 = A[g][2t, 2t+1], 1 = A[g+8][2t, 2t+1],
//                     2 = A[g][2t+8, 2t+9], 3 = A[g+8][2t+8, 2t+9]
//   B (16 x 8, col):  reg 0 = B[2t, 2t+1][g], 1 = B[2t+8, 2t+9][g]
//   C (16 x 8, f32):  c0, c1 = C[g][2t, 2t+1], c2, c3 = C[g+8][2t, 2t+1]
// (two halves per 32-bit register, the lower index in the low bits).
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_RUNTIME_CUDA_FLASHATTENTION_H
#define TESSEL_RUNTIME_CUDA_FLASHATTENTION_H

#include "tessel/runtime/Attention.h"
#include "tessel/runtime/HalfFloat.h"

#include <cmath>
#include <cstdint>

#if defined(__CUDACC__)
#define TSL_FLASH_FN __device__ __forceinline__
#define TSL_FLASH_UNROLL _Pragma("unroll")
#define TSL_FLASH_UNROLL_BY(n) _Pragma(TSL_FLASH_STR(unroll n))
#define TSL_FLASH_STR(x) #x
#else
#define TSL_FLASH_FN inline
#define TSL_FLASH_UNROLL
#define TSL_FLASH_UNROLL_BY(n)
#endif

namespace tessel::runtime::cuda::flash {

/// Query rows per block (16 per warp), keys per tile, threads per block.
constexpr int kRows = 64, kKeys = 64, kWarps = 4, kThreads = 32 * kWarps;

/// Head dims with a kernel (q's and v's last dims, equal): multiples of 16
/// (the mma's k) that models use: 32 (small models), 64 (GPT-2, BERT), 80
/// (Phi), 96, 128 (Llama, Mistral, Qwen).
constexpr bool supportedHeadDim(int64_t d) {
  return d == 32 || d == 64 || d == 80 || d == 96 || d == 128;
}

/// Shared memory of a block, in bytes: q's tile [kRows, D + 8], k's tile
/// transposed [kKeys, D + 8] and v's [D, kKeys + 8] (the 8 halves of
/// padding spread the rows over the banks).
constexpr int sharedBytes(int d) {
  return (kRows * (d + 8) + kKeys * (d + 8) + d * (kKeys + 8)) * 2;
}

/// The same thresholds as cpu/Attention.cpp's.
constexpr float kDeadMask = -1e30f, kLiveMask = -1e20f;
constexpr float kScoreBound = 1e29f;

/// A forward's operands: q, kt, v and out of element type E (a half's bits,
/// or float for the SIMT tiles of FlashAttentionSimt.h).
template <class E> struct TileArgs {
  const E *q = nullptr, *kt = nullptr, *v = nullptr;
  E *out = nullptr;
  float *lse = nullptr;
  const float *mask = nullptr; // null: none
  const float *kNorm =
      nullptr; // [batch]: the largest key norm (null: no skips)
  // has_masked_score: a score whose mask is -inf is `masked`; with keep
  // (bool [L.., S, T] broadcast as dims says; null: none), a score whose
  // keep is false is `masked` plus its mask. Never skips.
  bool replace = false;
  float masked = 0.0f;
  const uint8_t *keep = nullptr;
  // Set: the stats pass, which writes each row's max and log-sum ([batch
  // S] floats each) instead of out and lse, and reads no v.
  float *rowMax = nullptr, *rowLogSum = nullptr;
  AttentionDims dims;
};
using Args = TileArgs<uint16_t>;
using ArgsF32 = TileArgs<float>; // FlashAttentionSimt.h's

/// The mask's element offset of batch entry b (AttentionDims::maskOffset).
TSL_FLASH_FN int64_t maskOffsetOf(const AttentionDims &d, int64_t b) {
  int64_t off = 0;
  for (int k = d.lead - 1; k >= 0; --k) {
    off += (b % d.leadSize[k]) * d.maskLeadStride[k];
    b /= d.leadSize[k];
  }
  return off;
}

/// The mask's elements of batch entry b (null without a mask).
TSL_FLASH_FN const float *maskOf(const float *mask, const AttentionDims &d,
                                 int64_t b) {
  return mask ? mask + maskOffsetOf(d, b) : nullptr;
}

/// keep's elements of batch entry b (null without keep).
TSL_FLASH_FN const uint8_t *keepOf(const uint8_t *keep, const AttentionDims &d,
                                   int64_t b) {
  if (!keep)
    return nullptr;
  int64_t off = 0;
  for (int k = d.lead - 1; k >= 0; --k) {
    off += (b % d.leadSize[k]) * d.keepLeadStride[k];
    b /= d.leadSize[k];
  }
  return keep + off;
}

/// Score x of query q and key `key` of a batch entry with its mask mb (and
/// keep kb): x plus the mask; with `replace`, `masked` where the mask is
/// -inf; with keep, `masked` plus the mask where keep is false
/// (cpu/Attention.cpp's addMask).
TSL_FLASH_FN float maskedScore(float x, const float *mb, const uint8_t *kb,
                               bool replace, float masked,
                               const AttentionDims &d, int64_t q, int64_t key) {
  const float m = mb[q * d.maskRowStride + key * d.maskColStride];
  if (kb)
    return (kb[q * d.keepRowStride + key * d.keepColStride] ? x : masked) + m;
  return replace && m == -INFINITY ? masked : x + m;
}

/// Whether maskedScore made (q, key)'s score a constant (with `replace`:
/// keep false, or without keep the mask -inf): its ds is 0.
TSL_FLASH_FN bool constantScore(const float *mb, const uint8_t *kb,
                                bool replace, const AttentionDims &d, int64_t q,
                                int64_t key) {
  if (!replace)
    return false;
  if (kb)
    return !kb[q * d.keepRowStride + key * d.keepColStride];
  return mb[q * d.maskRowStride + key * d.maskColStride] == -INFINITY;
}

/// A backward's probability of the masked score x of query q (in the batch
/// entry) whose lse is lq: exp(x - lq), or from the stats pass's max and
/// log-sum (mx, ls: the batch entry's; null without) exp((x - max) -
/// logsum).
TSL_FLASH_FN float probability(float x, float lq, const float *mx,
                               const float *ls, int64_t q) {
  return mx ? expf((x - mx[q]) - ls[q]) : expf(x - lq);
}

/// Where a thread sits: its warp, and in the warp its group g and its index
/// t4 in the group (lane = 4 g + t4, the fragments' layouts above).
struct Place {
  int warp, g, t4;
};
TSL_FLASH_FN Place placeOf(int tid) {
  return {tid / 32, (tid % 32) >> 2, tid & 3};
}

/// max that keeps NaN (a NaN score makes its row NaN, as softmax does).
TSL_FLASH_FN float maxNan(float a, float b) {
  return (a != a || a > b) ? a : b;
}

/// Two adjacent halves as one register, the lower index in the low bits:
/// one 32-bit shared-memory load on the device (every caller's offset is
/// even and every row stride even, so p is 4-byte aligned).
TSL_FLASH_FN uint32_t pack2(const uint16_t *p) {
#if defined(__CUDA_ARCH__)
  return *reinterpret_cast<const uint32_t *>(p);
#else
  return static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 16;
#endif
}

/// The A fragment of rows [r0, r0 + 16), columns [k0, k0 + 16) of a
/// row-major matrix with row stride ld.
TSL_FLASH_FN void fragA(uint32_t a[4], const uint16_t *m, int ld, int r0,
                        int k0, int g, int t4) {
  const uint16_t *p = m + (r0 + g) * ld + k0 + 2 * t4;
  a[0] = pack2(p);
  a[1] = pack2(p + 8 * ld);
  a[2] = pack2(p + 8);
  a[3] = pack2(p + 8 * ld + 8);
}

/// The B fragment of k in [k0, k0 + 16), n in [n0, n0 + 8) of a matrix
/// held n-major: element (k, n) at m[n ld + k].
TSL_FLASH_FN void fragB(uint32_t b[2], const uint16_t *m, int ld, int n0,
                        int k0, int g, int t4) {
  const uint16_t *p = m + (n0 + g) * ld + k0 + 2 * t4;
  b[0] = pack2(p);
  b[1] = pack2(p + 8);
}

/// acc[n] = rows [r0, r0 + 16) of the row-major x (row stride ldx) times
/// rows [8 n, 8 n + 8) of the row-major y (row stride ldy) transposed, over
/// K columns: 16 x N accumulator tiles.
template <bool kBf16, int K, int N, class Ctx>
TSL_FLASH_FN void productNT(Ctx &ctx, float (*acc)[4], const uint16_t *x,
                            int ldx, int r0, const uint16_t *y, int ldy, int g,
                            int t4) {
  TSL_FLASH_UNROLL
  for (int n = 0; n < N / 8; ++n) {
    acc[n][0] = acc[n][1] = acc[n][2] = acc[n][3] = 0.0f;
    TSL_FLASH_UNROLL
    for (int ks = 0; ks < K / 16; ++ks) {
      uint32_t fa[4], fb[2];
      fragA(fa, x, ldx, r0, ks * 16, g, t4);
      fragB(fb, y, ldy, n * 8, ks * 16, g, t4);
      ctx.template mma<kBf16>(acc[n], fa, fb);
    }
  }
}

/// The A fragment of k-step ks from the accumulator tiles acc[2 ks] and
/// acc[2 ks + 1] (C layout), rounded to the half: a 16 x 64 result feeds
/// the next product from registers.
template <bool kBf16, class Ctx>
TSL_FLASH_FN void accumulatorAsA(Ctx &ctx, uint32_t a[4], const float (*acc)[4],
                                 int ks) {
  a[0] = ctx.template pack<kBf16>(acc[2 * ks][0], acc[2 * ks][1]);
  a[1] = ctx.template pack<kBf16>(acc[2 * ks][2], acc[2 * ks][3]);
  a[2] = ctx.template pack<kBf16>(acc[2 * ks + 1][0], acc[2 * ks + 1][1]);
  a[3] = ctx.template pack<kBf16>(acc[2 * ks + 1][2], acc[2 * ks + 1][3]);
}

/// Whether a forward warp may skip dead tiles: each of its rows (rl in
/// the block, gr in the batch entry; rows past S need no key) has a live
/// key, and |scale| times its rows' largest q norm (the four threads of a
/// row each sum a quarter of its columns) times the keys' is below
/// kScoreBound (NaN: no).
template <bool kBf16, int D, class Ctx>
TSL_FLASH_FN bool warpMaySkip(Ctx &ctx, const Args &a, int64_t b,
                              const float *mb, const uint16_t *sQ,
                              const int *rl, const int64_t *gr, int t4) {
  constexpr int LQ = D + 8;
  const AttentionDims &d = a.dims;
  float qn = 0.0f, live = 1.0f;
  for (int r = 0; r < 2; ++r) {
    float sq = 0.0f;
    for (int c = t4; c < D; c += 4) {
      const float x = ctx.template widen<kBf16>(sQ[rl[r] * LQ + c]);
      sq += x * x;
    }
    sq += ctx.shflXor(sq, 1);
    sq += ctx.shflXor(sq, 2);
    qn = maxNan(qn, sq);
    float any = gr[r] < d.s ? 0.0f : 1.0f;
    for (int64_t j = t4; j < d.t && gr[r] < d.s; j += 4)
      if (mb[gr[r] * d.maskRowStride + j * d.maskColStride] >= kLiveMask)
        any = 1.0f;
    any = fmaxf(any, ctx.shflXor(any, 1));
    any = fmaxf(any, ctx.shflXor(any, 2));
    live = fminf(live, any);
  }
  for (int m = 4; m < 32; m <<= 1) {
    qn = maxNan(qn, ctx.shflXor(qn, m));
    live = fminf(live, ctx.shflXor(live, m));
  }
  const float bound = fabsf(d.scale) * sqrtf(qn) * a.kNorm[b];
  return live == 1.0f && bound < kScoreBound;
}

/// The stats pass's results of a thread's rows gr[0, n) (one thread of each
/// row writes, t4 == 0): each row's max and log-sum, the forward's m and
/// log(l) before they add into lse.
template <class E>
TSL_FLASH_FN void storeStats(const TileArgs<E> &a, int64_t b, const int64_t *gr,
                             const float *m, const float *l, int t4,
                             int n = 2) {
  if (t4 != 0)
    return;
  for (int r = 0; r < n; ++r)
    if (gr[r] < a.dims.s) {
      a.rowMax[b * a.dims.s + gr[r]] = m[r];
      a.rowLogSum[b * a.dims.s + gr[r]] = logf(l[r]);
    }
}

/// A forward warp's results: each row's o divided by its sum and rounded
/// once, its lse; a row whose max is not finite gets NaN in both.
template <bool kBf16, int D, class Ctx>
TSL_FLASH_FN void storeRows(Ctx &ctx, const Args &a, int64_t b,
                            const int64_t *gr, const float *m, const float *l,
                            const float (*o)[4], int t4) {
  const int64_t S = a.dims.s;
  for (int r = 0; r < 2; ++r) {
    if (gr[r] >= S)
      continue;
    const int64_t row = b * S + gr[r];
    const bool bad = !(fabsf(m[r]) <= 3.4028235e38f); // -inf, +inf or NaN
    if (t4 == 0)
      a.lse[row] = bad ? NAN : m[r] + logf(l[r]);
    const float inv = 1.0f / l[r];
    for (int n = 0; n < D / 8; ++n)
      for (int e = 0; e < 2; ++e) {
        const float x = bad ? NAN : o[n][2 * r + e] * inv;
        a.out[row * D + n * 8 + 2 * t4 + e] = ctx.template narrow<kBf16>(x);
      }
  }
}

/// E itself, where a parameter should not take part in deducing it (so that
/// a null destination may be passed as nullptr).
template <class E> struct SameElem { using type = E; };
template <class E> using Elem = typename SameElem<E>::type;

/// Copies rows [r0, r0 + n) of the row-major [rows, D] matrix x (zeros
/// past `rows`) into dst [n, ld] and transposed into dstT [D, ldT], each
/// where set.
template <int D, class E, class Ctx>
TSL_FLASH_FN void stageRows(Ctx &ctx, const E *x, int64_t rows, int64_t r0,
                            int n, Elem<E> *dst, int ld, Elem<E> *dstT,
                            int ldT) {
  for (int e = ctx.tid(); e < n * D; e += kThreads) {
    const int r = e / D, c = e % D;
    const E h = r0 + r < rows ? x[(r0 + r) * D + c] : E(0);
    if (dst)
      dst[r * ld + c] = h;
    if (dstT)
      dstT[c * ldT + r] = h;
  }
}

/// Copies keys [k0, k0 + kKeys) of kt [D, T] into dst [kKeys, ld] (key-major)
/// and, when dstT is set, as they are into dstT [D, ldT]; zeros past T.
/// A warp's 32 elements are 8 keys of 4 columns: it reads kt in four runs
/// of 8 keys, and its key-major writes, rows ld apart (4 banks' worth
/// modulo 32), fall on distinct banks (32 keys of one column would fall on
/// 8: a 4-way conflict).
template <int D, class E, class Ctx>
TSL_FLASH_FN void stageKeys(Ctx &ctx, const E *kt, int64_t t, int64_t k0,
                            Elem<E> *dst, int ld, Elem<E> *dstT, int ldT) {
  static_assert(D % 4 == 0 && kKeys % 8 == 0, "whole 8 x 4 chunks");
  for (int e = ctx.tid(); e < D * kKeys; e += kThreads) {
    const int lane = e % 32, chunk = e / 32;
    const int j = chunk % (kKeys / 8) * 8 + lane % 8,
              c = chunk / (kKeys / 8) * 4 + lane / 8;
    const E h = k0 + j < t ? kt[c * t + k0 + j] : E(0);
    dst[j * ld + c] = h;
    if (dstT)
      dstT[c * ldT + j] = h;
  }
}

/// Whether a warp's tile of queries qs[] x keys ks[] (its thread's share:
/// `nq` queries and `nk` keys) is dead: every mask element at or below
/// kDeadMask; reduced over the warp.
template <class Ctx>
TSL_FLASH_FN bool deadTile(Ctx &ctx, const float *mb, const AttentionDims &d,
                           const int64_t *qs, int nq, const int64_t *ks,
                           int nk) {
  float dead = 1.0f;
  for (int i = 0; i < nq; ++i)
    for (int j = 0; j < nk; ++j)
      if (qs[i] < d.s && ks[j] < d.t &&
          !(mb[qs[i] * d.maskRowStride + ks[j] * d.maskColStride] <= kDeadMask))
        dead = 0.0f;
  for (int m = 1; m < 32; m <<= 1)
    dead = fminf(dead, ctx.shflXor(dead, m));
  return dead == 1.0f;
}

/// One block: rows [row0, row0 + kRows) of batch entry b. `smem` holds
/// sharedBytes(D) bytes.
template <bool kBf16, int D, class Ctx>
TSL_FLASH_FN void forwardBlock(Ctx &ctx, const Args &a, int64_t b, int64_t row0,
                               uint16_t *smem) {
  constexpr int LQ = D + 8, LV = kKeys + 8;
  uint16_t *sQ = smem, *sK = sQ + kRows * LQ, *sV = sK + kKeys * LQ;
  const AttentionDims &d = a.dims;
  const int64_t S = d.s, T = d.t;
  const auto [warp, g, t4] = placeOf(ctx.tid());
  const uint16_t *ktb = a.kt + b * D * T, *vb = a.v + b * T * D;
  const float *mb = maskOf(a.mask, d, b);
  const uint8_t *kb = keepOf(a.keep, d, b);
  const bool stats = a.rowMax != nullptr;

  stageRows<D>(ctx, a.q + b * S * D, S, row0, kRows, sQ, LQ, nullptr, 0);
  ctx.sync();

  // This thread's two rows (in the block, and in the batch entry).
  const int rl[2] = {warp * 16 + g, warp * 16 + g + 8};
  const int64_t gr[2] = {row0 + rl[0], row0 + rl[1]};
  uint32_t qa[D / 16][4];
  TSL_FLASH_UNROLL
  for (int ks = 0; ks < D / 16; ++ks)
    fragA(qa[ks], sQ, LQ, warp * 16, ks * 16, g, t4);

  const bool canSkip = mb && a.kNorm && !a.replace &&
                       warpMaySkip<kBf16, D>(ctx, a, b, mb, sQ, rl, gr, t4);

  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};
  float o[D / 8][4];
  TSL_FLASH_UNROLL
  for (int n = 0; n < D / 8; ++n)
    o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.0f;

  for (int64_t k0 = 0; k0 < T; k0 += kKeys) {
    // A tile whose mask is dead for all of this warp's rows.
    int skip = 0;
    if (canSkip) {
      int64_t ks[kKeys / 4];
      for (int j = 0; j < kKeys / 4; ++j)
        ks[j] = k0 + t4 + 4 * j;
      skip = deadTile(ctx, mb, d, gr, 2, ks, kKeys / 4);
    }
    if (ctx.syncAnd(skip))
      continue; // dead for the whole block: not even loaded
    // k's tile transposed (key-major), v's transposed (column-major).
    stageKeys<D>(ctx, ktb, T, k0, sK, LQ, nullptr, 0);
    if (!stats)
      stageRows<D>(ctx, vb, T, k0, kKeys, nullptr, 0, sV, LV);
    ctx.sync();
    if (!skip) {
      float s[kKeys / 8][4];
      TSL_FLASH_UNROLL
      for (int n = 0; n < kKeys / 8; ++n) {
        s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.0f;
        TSL_FLASH_UNROLL
        for (int ks = 0; ks < D / 16; ++ks) {
          uint32_t kb[2];
          fragB(kb, sK, LQ, n * 8, ks * 16, g, t4);
          ctx.template mma<kBf16>(s[n], qa[ks], kb);
        }
      }
      // scale q kt + mask; keys past T are -inf.
      float tileMax[2] = {-INFINITY, -INFINITY};
      TSL_FLASH_UNROLL
      for (int n = 0; n < kKeys / 8; ++n)
        for (int i = 0; i < 4; ++i) {
          const int r = i >> 1;
          const int64_t j = k0 + n * 8 + 2 * t4 + (i & 1);
          float x = d.scale * s[n][i];
          if (j >= T)
            x = -INFINITY;
          else if (mb && gr[r] < S)
            x = maskedScore(x, mb, kb, a.replace, a.masked, d, gr[r], j);
          s[n][i] = x;
          tileMax[r] = maxNan(tileMax[r], x);
        }
      for (int r = 0; r < 2; ++r) {
        tileMax[r] = maxNan(tileMax[r], ctx.shflXor(tileMax[r], 1));
        tileMax[r] = maxNan(tileMax[r], ctx.shflXor(tileMax[r], 2));
      }
      float sum[2] = {0.0f, 0.0f}, alpha[2];
      for (int r = 0; r < 2; ++r) {
        const float mNew = maxNan(m[r], tileMax[r]);
        // While every score so far is -inf the sums are 0: nothing to
        // rescale, and exp(-inf - 0) = 0.
        const float base = mNew == -INFINITY ? 0.0f : mNew;
        alpha[r] = expf(m[r] - base);
        m[r] = mNew;
        for (int n = 0; n < kKeys / 8; ++n)
          for (int i = 2 * r; i < 2 * r + 2; ++i) {
            s[n][i] = expf(s[n][i] - base);
            sum[r] += s[n][i];
          }
      }
      for (int r = 0; r < 2; ++r) {
        sum[r] += ctx.shflXor(sum[r], 1);
        sum[r] += ctx.shflXor(sum[r], 2);
        l[r] = l[r] * alpha[r] + sum[r];
      }
      if (!stats) { // the stats pass reads no v
        TSL_FLASH_UNROLL
        for (int n = 0; n < D / 8; ++n) {
          o[n][0] *= alpha[0];
          o[n][1] *= alpha[0];
          o[n][2] *= alpha[1];
          o[n][3] *= alpha[1];
        }
        // p (rounded to the half) times v's tile: the scores' accumulator
        // fragments of key tiles 2 ks and 2 ks + 1 are p's A fragment of
        // k-step ks.
        TSL_FLASH_UNROLL
        for (int ks = 0; ks < kKeys / 16; ++ks) {
          uint32_t pa[4];
          accumulatorAsA<kBf16>(ctx, pa, s, ks);
          TSL_FLASH_UNROLL
          for (int n = 0; n < D / 8; ++n) {
            uint32_t vb[2];
            fragB(vb, sV, LV, n * 8, ks * 16, g, t4);
            ctx.template mma<kBf16>(o[n], pa, vb);
          }
        }
      }
    }
    ctx.sync(); // the next tile overwrites sK and sV
  }

  if (stats)
    storeStats(a, b, gr, m, l, t4);
  else
    storeRows<kBf16, D>(ctx, a, b, gr, m, l, o, t4);
}

// --- The backward ----------------------------------------------------------
//
// FlashAttention-2's backward in two deterministic passes (no atomics: the
// same bits on every run, as the CPU's backward): dkvBlock, one block per
// 64 keys, loops over the query tiles and accumulates dv += p^T grad and
// dkt += scale (p (dp - delta))^T q in registers; dqBlock, one block per 64
// query rows, loops over the key tiles and accumulates dq += scale (p (dp -
// delta)) k. Each recomputes p = exp(scale q kt + mask - lse) from the
// forward's lse, dp = grad v^T, and reads delta = rowsum(grad * out)
// (deltaKernel). A row whose lse is not finite (the forward's NaN rows)
// has ds = 0 and, with the NaN guard's fill, every key's probability the
// fill (dv += fill grad), as the CPU's backward. A warp skips a tile whose
// mask is dead throughout when each of its queries has lse >= -2e29 and
// |scale| |q_i| |k_j| < 1e29 for the batch entry (then every p of the tile
// is exactly 0 in f32: the dead score is below -9e29).

/// Shared memory of dkvBlock: k's tile and v's [kKeys, D + 8], q's and
/// grad's tiles [kRows, D + 8] and transposed [D, kRows + 8].
constexpr int dkvSharedBytes(int d) {
  return (2 * kKeys * (d + 8) + 2 * kRows * (d + 8) + 2 * d * (kRows + 8)) * 2;
}
/// Shared memory of dqBlock: q's and grad's tiles, k's (key-major and as
/// kt is) and v's.
constexpr int dqSharedBytes(int d) {
  return (2 * kRows * (d + 8) + 2 * kKeys * (d + 8) + d * (kKeys + 8)) * 2;
}

/// A backward's operands, of element type E as TileArgs's.
template <class E> struct TileGradArgs {
  const E *q = nullptr, *kt = nullptr, *v = nullptr, *grad = nullptr;
  const float *lse = nullptr, *delta = nullptr;
  const float *mask = nullptr, *fill = nullptr;
  const float *qNorm = nullptr, *kNorm = nullptr; // [batch]; null: no skips
  // masked_score as TileArgs's, and the stats pass's row max and log-sum
  // ([batch S] each; set where `replace` is).
  bool replace = false;
  float masked = 0.0f;
  const uint8_t *keep = nullptr;
  const float *rowMax = nullptr, *rowLogSum = nullptr;
  E *dq = nullptr, *dkt = nullptr, *dv = nullptr;
  AttentionDims dims;
};
using GradArgs = TileGradArgs<uint16_t>;
using GradArgsF32 = TileGradArgs<float>;

/// The stats pass's arguments for a masked_score backward `a`: the forward's
/// blocks over its q, kt, mask and keep, writing each row's max and log-sum
/// into rowMax and rowLogSum ([batch S] floats each).
template <class E>
TileArgs<E> statsArgs(const TileGradArgs<E> &a, float *rowMax,
                      float *rowLogSum) {
  TileArgs<E> f;
  f.q = a.q;
  f.kt = a.kt;
  f.v = a.v;
  f.mask = a.mask;
  f.replace = a.replace;
  f.masked = a.masked;
  f.keep = a.keep;
  f.rowMax = rowMax;
  f.rowLogSum = rowLogSum;
  f.dims = a.dims;
  return f;
}

/// Whether a backward may skip dead tiles of batch entry b at all: a mask
/// that adds (no masked_score), the norms, and |scale| |q| |k| <
/// kScoreBound (a dead score is then below -9e29).
template <class E>
TSL_FLASH_FN bool gradMaySkip(const TileGradArgs<E> &a, const float *mb,
                              int64_t b) {
  return mb && !a.replace && a.qNorm && a.kNorm &&
         fabsf(a.dims.scale) * a.qNorm[b] * a.kNorm[b] < kScoreBound;
}

/// Whether the queries qs[0, n) (a thread's share; those past S aside) all
/// have lse >= -2e29 (NaN fails), over the warp: then every p of a dead
/// tile is exactly 0 in f32.
template <class Ctx>
TSL_FLASH_FN bool lseBounded(Ctx &ctx, const float *lb, int64_t S,
                             const int64_t *qs, int n) {
  float lo = 1.0f;
  for (int i = 0; i < n; ++i)
    if (qs[i] < S && !(lb[qs[i]] >= -2e29f))
      lo = 0.0f;
  for (int m = 1; m < 32; m <<= 1)
    lo = fminf(lo, ctx.shflXor(lo, m));
  return lo == 1.0f;
}

/// dk and dv of keys [k0, k0 + kKeys) of batch entry b; each warp 16 keys.
template <bool kBf16, int D, class Ctx>
TSL_FLASH_FN void dkvBlock(Ctx &ctx, const GradArgs &a, int64_t b, int64_t k0,
                           uint16_t *smem) {
  constexpr int L = D + 8, LT = kRows + 8;
  uint16_t *sK = smem, *sV = sK + kKeys * L, *sQ = sV + kKeys * L,
           *sG = sQ + kRows * L, *sQt = sG + kRows * L, *sGt = sQt + D * LT;
  const AttentionDims &d = a.dims;
  const int64_t S = d.s, T = d.t;
  const auto [warp, g, t4] = placeOf(ctx.tid());
  const float *mb = maskOf(a.mask, d, b);
  const uint8_t *kb = keepOf(a.keep, d, b);
  const float fill = a.fill ? *a.fill : 0.0f;
  const float *lb = a.lse + b * S, *db = a.delta + b * S;
  const float *mx = a.rowMax ? a.rowMax + b * S : nullptr,
              *ls = a.rowLogSum ? a.rowLogSum + b * S : nullptr;
  stageKeys<D>(ctx, a.kt + b * D * T, T, k0, sK, L, nullptr, 0);
  stageRows<D>(ctx, a.v + b * T * D, T, k0, kKeys, sV, L, nullptr, 0);
  // This thread's keys (the rows of its accumulators).
  const int64_t keys[2] = {k0 + warp * 16 + g, k0 + warp * 16 + g + 8};
  const bool canSkip = gradMaySkip(a, mb, b);
  float dK[D / 8][4], dV[D / 8][4];
  TSL_FLASH_UNROLL
  for (int n = 0; n < D / 8; ++n)
    for (int i = 0; i < 4; ++i)
      dK[n][i] = dV[n][i] = 0.0f;

  for (int64_t q0 = 0; q0 < S; q0 += kRows) {
    int skip = 0;
    if (canSkip) {
      int64_t qs[16];
      for (int i = 0; i < 16; ++i)
        qs[i] = q0 + t4 + 4 * i;
      skip = lseBounded(ctx, lb, S, qs, 16) &&
             deadTile(ctx, mb, d, qs, 16, keys, 2);
    }
    if (ctx.syncAnd(skip))
      continue;
    stageRows<D>(ctx, a.q + b * S * D, S, q0, kRows, sQ, L, sQt, LT);
    stageRows<D>(ctx, a.grad + b * S * D, S, q0, kRows, sG, L, sGt, LT);
    ctx.sync();
    if (!skip) {
      // s^T and dp^T: 16 keys x 64 queries.
      float st[kRows / 8][4], dpt[kRows / 8][4];
      productNT<kBf16, D, kRows>(ctx, st, sK, L, warp * 16, sQ, L, g, t4);
      productNT<kBf16, D, kRows>(ctx, dpt, sV, L, warp * 16, sG, L, g, t4);
      // p^T into st, ds^T into dpt.
      TSL_FLASH_UNROLL
      for (int n = 0; n < kRows / 8; ++n)
        for (int i = 0; i < 4; ++i) {
          const int64_t key = keys[i >> 1], q = q0 + n * 8 + 2 * t4 + (i & 1);
          float p = 0.0f, ds = 0.0f;
          if (q < S && key < T) {
            const float l = lb[q];
            if (fabsf(l) <= 3.4028235e38f) {
              float x = d.scale * st[n][i];
              if (mb)
                x = maskedScore(x, mb, kb, a.replace, a.masked, d, q, key);
              p = probability(x, l, mx, ls, q);
              if (!(mb && constantScore(mb, kb, a.replace, d, q, key)))
                ds = p * (dpt[n][i] - db[q]);
            } else {
              p = fill; // every key's probability was the fill; ds = 0
            }
          }
          st[n][i] = p;
          dpt[n][i] = ds;
        }
      // dv += p^T grad, dk += ds^T q (k = the queries).
      TSL_FLASH_UNROLL
      for (int ks = 0; ks < kRows / 16; ++ks) {
        uint32_t pa[4], da[4];
        accumulatorAsA<kBf16>(ctx, pa, st, ks);
        accumulatorAsA<kBf16>(ctx, da, dpt, ks);
        TSL_FLASH_UNROLL
        for (int n = 0; n < D / 8; ++n) {
          uint32_t fb[2];
          fragB(fb, sGt, LT, n * 8, ks * 16, g, t4);
          ctx.template mma<kBf16>(dV[n], pa, fb);
          fragB(fb, sQt, LT, n * 8, ks * 16, g, t4);
          ctx.template mma<kBf16>(dK[n], da, fb);
        }
      }
    }
    ctx.sync(); // the next query tile overwrites sQ, sG and their transposes
  }

  for (int r = 0; r < 2; ++r) {
    const int64_t key = keys[r];
    if (key >= T)
      continue;
    for (int n = 0; n < D / 8; ++n)
      for (int e = 0; e < 2; ++e) {
        const int c = n * 8 + 2 * t4 + e;
        a.dkt[(b * D + c) * T + key] =
            ctx.template narrow<kBf16>(d.scale * dK[n][2 * r + e]);
        a.dv[(b * T + key) * D + c] =
            ctx.template narrow<kBf16>(dV[n][2 * r + e]);
      }
  }
}

/// dq of rows [row0, row0 + kRows) of batch entry b; each warp 16 rows.
template <bool kBf16, int D, class Ctx>
TSL_FLASH_FN void dqBlock(Ctx &ctx, const GradArgs &a, int64_t b, int64_t row0,
                          uint16_t *smem) {
  constexpr int L = D + 8, LT = kKeys + 8;
  uint16_t *sQ = smem, *sG = sQ + kRows * L, *sK = sG + kRows * L,
           *sV = sK + kKeys * L, *sKt = sV + kKeys * L;
  const AttentionDims &d = a.dims;
  const int64_t S = d.s, T = d.t;
  const auto [warp, g, t4] = placeOf(ctx.tid());
  const float *mb = maskOf(a.mask, d, b);
  const uint8_t *kb = keepOf(a.keep, d, b);
  const float *lb = a.lse + b * S, *db = a.delta + b * S;
  const float *mx = a.rowMax ? a.rowMax + b * S : nullptr,
              *ls = a.rowLogSum ? a.rowLogSum + b * S : nullptr;
  stageRows<D>(ctx, a.q + b * S * D, S, row0, kRows, sQ, L, nullptr, 0);
  stageRows<D>(ctx, a.grad + b * S * D, S, row0, kRows, sG, L, nullptr, 0);
  const int64_t rows[2] = {row0 + warp * 16 + g, row0 + warp * 16 + g + 8};
  float l[2], dl[2];
  bool ok[2];
  for (int r = 0; r < 2; ++r) {
    l[r] = rows[r] < S ? lb[rows[r]] : 0.0f;
    dl[r] = rows[r] < S ? db[rows[r]] : 0.0f;
    ok[r] = rows[r] < S && fabsf(l[r]) <= 3.4028235e38f;
  }
  const bool canSkip = gradMaySkip(a, mb, b) && lseBounded(ctx, lb, S, rows, 2);
  float dQ[D / 8][4];
  TSL_FLASH_UNROLL
  for (int n = 0; n < D / 8; ++n)
    for (int i = 0; i < 4; ++i)
      dQ[n][i] = 0.0f;

  for (int64_t k0 = 0; k0 < T; k0 += kKeys) {
    int skip = 0;
    if (canSkip) {
      int64_t ks[16];
      for (int j = 0; j < 16; ++j)
        ks[j] = k0 + t4 + 4 * j;
      skip = deadTile(ctx, mb, d, rows, 2, ks, 16);
    }
    if (ctx.syncAnd(skip))
      continue;
    stageKeys<D>(ctx, a.kt + b * D * T, T, k0, sK, L, sKt, LT);
    stageRows<D>(ctx, a.v + b * T * D, T, k0, kKeys, sV, L, nullptr, 0);
    ctx.sync();
    if (!skip) {
      float s[kKeys / 8][4], dp[kKeys / 8][4];
      productNT<kBf16, D, kKeys>(ctx, s, sQ, L, warp * 16, sK, L, g, t4);
      productNT<kBf16, D, kKeys>(ctx, dp, sG, L, warp * 16, sV, L, g, t4);
      TSL_FLASH_UNROLL
      for (int n = 0; n < kKeys / 8; ++n)
        for (int i = 0; i < 4; ++i) {
          const int r = i >> 1;
          const int64_t key = k0 + n * 8 + 2 * t4 + (i & 1);
          float ds = 0.0f;
          if (ok[r] && key < T &&
              !(mb && constantScore(mb, kb, a.replace, d, rows[r], key))) {
            float x = d.scale * s[n][i];
            if (mb)
              x = maskedScore(x, mb, kb, a.replace, a.masked, d, rows[r], key);
            ds = probability(x, l[r], mx, ls, rows[r]) * (dp[n][i] - dl[r]);
          }
          s[n][i] = ds;
        }
      // dq += ds k (k = the keys; k's element (key, c) at sKt[c][key]).
      TSL_FLASH_UNROLL
      for (int ks = 0; ks < kKeys / 16; ++ks) {
        uint32_t da[4];
        accumulatorAsA<kBf16>(ctx, da, s, ks);
        TSL_FLASH_UNROLL
        for (int n = 0; n < D / 8; ++n) {
          uint32_t fb[2];
          fragB(fb, sKt, LT, n * 8, ks * 16, g, t4);
          ctx.template mma<kBf16>(dQ[n], da, fb);
        }
      }
    }
    ctx.sync(); // the next key tile overwrites sK, sKt and sV
  }

  for (int r = 0; r < 2; ++r) {
    if (rows[r] >= S)
      continue;
    for (int n = 0; n < D / 8; ++n)
      for (int e = 0; e < 2; ++e)
        a.dq[(b * S + rows[r]) * D + n * 8 + 2 * t4 + e] =
            ctx.template narrow<kBf16>(d.scale * dQ[n][2 * r + e]);
  }
}

} // namespace tessel::runtime::cuda::flash

#endif // TESSEL_RUNTIME_CUDA_FLASHATTENTION_H
