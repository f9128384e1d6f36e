//===- FlashAttention.h - half attention's forward in tiles on tensor cores ===//
//
// The forward of a half attention (bf16 or f16 q, kt, v and result; f32
// mask, lse and sums) as FlashAttention-2 computes it: one thread block of
// four warps per 64 query rows of a batch entry, each warp 16 rows; per
// tile of 64 keys, the block stages k and v in shared memory, each warp
// computes its scores with mma.sync (m16n8k16, f32 sums), adds the mask,
// updates its rows' running max and sum (an online softmax in f32), rounds
// the probabilities to the half and multiplies them by v's tile with
// mma.sync into f32 accumulators. No [S, T] tensor exists anywhere; each
// result element is rounded once, after the division by the row's sum.
//
// Dead keys are skipped as the CPU kernel skips them (cpu/Attention.cpp,
// liveKeys), and exactly: a warp skips a tile whose mask is at or below
// -1e30 for all of its rows when each of its rows has a live key (a mask at
// or above -1e20) and |scale| |q_i| |k_j| < 1e29 for its rows and every key
// (the exponentials of the dead scores are then exactly 0 in f32); a block
// whose four warps skip does not load the tile. A causal mask's blocks so
// compute half the tiles.
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
// host emulation (a std::thread per CUDA thread, the mma computed from the
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
#else
#define TSL_FLASH_FN inline
#define TSL_FLASH_UNROLL
#endif

namespace tessel::runtime::cuda::flash {

/// Query rows per block (16 per warp), keys per tile, threads per block.
constexpr int kRows = 64, kKeys = 64, kWarps = 4, kThreads = 32 * kWarps;

/// Head dims with a kernel (q's and v's last dims, equal).
constexpr bool supportedHeadDim(int64_t d) { return d == 64 || d == 128; }

/// Shared memory of a block, in bytes: q's tile [kRows, D + 8], k's tile
/// transposed [kKeys, D + 8] and v's [D, kKeys + 8] (the 8 halves of
/// padding spread the rows over the banks).
constexpr int sharedBytes(int d) {
  return (kRows * (d + 8) + kKeys * (d + 8) + d * (kKeys + 8)) * 2;
}

/// The same thresholds as cpu/Attention.cpp's.
constexpr float kDeadMask = -1e30f, kLiveMask = -1e20f;
constexpr float kScoreBound = 1e29f;

struct Args {
  const uint16_t *q = nullptr, *kt = nullptr, *v = nullptr;
  uint16_t *out = nullptr;
  float *lse = nullptr;
  const float *mask = nullptr;  // null: none
  const float *kNorm = nullptr; // [batch]: the largest key norm (null: no skips)
  AttentionDims dims;
};

/// The mask's element offset of batch entry b (AttentionDims::maskOffset).
TSL_FLASH_FN int64_t maskOffsetOf(const AttentionDims &d, int64_t b) {
  int64_t off = 0;
  for (int k = d.lead - 1; k >= 0; --k) {
    off += (b % d.leadSize[k]) * d.maskLeadStride[k];
    b /= d.leadSize[k];
  }
  return off;
}

/// max that keeps NaN (a NaN score makes its row NaN, as softmax does).
TSL_FLASH_FN float maxNan(float a, float b) {
  return (a != a || a > b) ? a : b;
}

TSL_FLASH_FN uint32_t pack2(const uint16_t *p) {
  return static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 16;
}

/// One block: rows [row0, row0 + kRows) of batch entry b. `smem` holds
/// sharedBytes(D) bytes.
template <bool kBf16, int D, class Ctx>
TSL_FLASH_FN void forwardBlock(Ctx &ctx, const Args &a, int64_t b,
                               int64_t row0, uint16_t *smem) {
  constexpr int LQ = D + 8, LV = kKeys + 8;
  uint16_t *sQ = smem, *sK = sQ + kRows * LQ, *sV = sK + kKeys * LQ;
  const AttentionDims &d = a.dims;
  const int64_t S = d.s, T = d.t;
  const int tid = ctx.tid(), warp = tid / 32, lane = tid % 32;
  const int g = lane >> 2, t4 = lane & 3;
  const uint16_t *qb = a.q + b * S * D, *ktb = a.kt + b * D * T,
                 *vb = a.v + b * T * D;
  const float *mb = a.mask ? a.mask + maskOffsetOf(d, b) : nullptr;

  for (int e = tid; e < kRows * D; e += kThreads) {
    const int r = e / D, c = e % D;
    sQ[r * LQ + c] = row0 + r < S ? qb[(row0 + r) * D + c] : uint16_t(0);
  }
  ctx.sync();

  // This thread's two rows (in the block, and in the batch entry).
  const int rl[2] = {warp * 16 + g, warp * 16 + g + 8};
  const int64_t gr[2] = {row0 + rl[0], row0 + rl[1]};
  uint32_t qa[D / 16][4];
  TSL_FLASH_UNROLL
  for (int ks = 0; ks < D / 16; ++ks) {
    const int c = ks * 16 + 2 * t4;
    qa[ks][0] = pack2(sQ + rl[0] * LQ + c);
    qa[ks][1] = pack2(sQ + rl[1] * LQ + c);
    qa[ks][2] = pack2(sQ + rl[0] * LQ + c + 8);
    qa[ks][3] = pack2(sQ + rl[1] * LQ + c + 8);
  }

  // Whether this warp may skip dead tiles: its rows' largest q norm (the
  // four threads of a row each sum a quarter of its columns) and their
  // live keys.
  bool canSkip = mb && a.kNorm;
  if (canSkip) {
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
      float any = gr[r] < S ? 0.0f : 1.0f; // rows past S need no key
      for (int64_t j = t4; j < T && gr[r] < S; j += 4)
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
    canSkip = live == 1.0f && bound < kScoreBound; // NaN: no skips
  }

  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};
  float o[D / 8][4];
  TSL_FLASH_UNROLL
  for (int n = 0; n < D / 8; ++n)
    o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.0f;

  for (int64_t k0 = 0; k0 < T; k0 += kKeys) {
    // A tile whose mask is dead for all of this warp's rows.
    int skip = 0;
    if (canSkip) {
      float dead = 1.0f;
      for (int r = 0; r < 2; ++r)
        for (int j = t4; j < kKeys && gr[r] < S; j += 4)
          if (k0 + j < T &&
              !(mb[gr[r] * d.maskRowStride + (k0 + j) * d.maskColStride] <=
                kDeadMask))
            dead = 0.0f;
      for (int s = 1; s < 32; s <<= 1)
        dead = fminf(dead, ctx.shflXor(dead, s));
      skip = dead == 1.0f;
    }
    if (ctx.syncAnd(skip))
      continue; // dead for the whole block: not even loaded
    // k's tile transposed (key-major), v's transposed (column-major).
    for (int e = tid; e < D * kKeys; e += kThreads) {
      const int c = e / kKeys, j = e % kKeys;
      sK[j * LQ + c] = k0 + j < T ? ktb[c * T + k0 + j] : uint16_t(0);
    }
    for (int e = tid; e < kKeys * D; e += kThreads) {
      const int j = e / D, c = e % D;
      sV[c * LV + j] = k0 + j < T ? vb[(k0 + j) * D + c] : uint16_t(0);
    }
    ctx.sync();
    if (!skip) {
      float s[kKeys / 8][4];
      TSL_FLASH_UNROLL
      for (int n = 0; n < kKeys / 8; ++n) {
        s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.0f;
        const uint16_t *kr = sK + (n * 8 + g) * LQ + 2 * t4;
        TSL_FLASH_UNROLL
        for (int ks = 0; ks < D / 16; ++ks) {
          const uint32_t kb[2] = {pack2(kr + ks * 16), pack2(kr + ks * 16 + 8)};
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
            x += mb[gr[r] * d.maskRowStride + j * d.maskColStride];
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
        const uint32_t pa[4] = {
            ctx.template pack<kBf16>(s[2 * ks][0], s[2 * ks][1]),
            ctx.template pack<kBf16>(s[2 * ks][2], s[2 * ks][3]),
            ctx.template pack<kBf16>(s[2 * ks + 1][0], s[2 * ks + 1][1]),
            ctx.template pack<kBf16>(s[2 * ks + 1][2], s[2 * ks + 1][3])};
        TSL_FLASH_UNROLL
        for (int n = 0; n < D / 8; ++n) {
          const uint16_t *vr = sV + (n * 8 + g) * LV + ks * 16 + 2 * t4;
          const uint32_t vb2[2] = {pack2(vr), pack2(vr + 8)};
          ctx.template mma<kBf16>(o[n], pa, vb2);
        }
      }
    }
    ctx.sync(); // the next tile overwrites sK and sV
  }

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

} // namespace tessel::runtime::cuda::flash

#endif // TESSEL_RUNTIME_CUDA_FLASHATTENTION_H
