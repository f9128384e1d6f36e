//===- FlashEmulator.h - CUDA thread blocks emulated on the host -*- C++
//-*-===//
//
// The context runtime/cuda/FlashAttention.h's and FlashAttentionSimt.h's
// tile algorithms run over, emulated on the host: each CUDA thread of a
// block a cooperative fiber (ucontext) that runs until it waits at a
// barrier (__syncthreads, or a warp's for its shuffles and mmas), and
// mma.m16n8k16 computed from the fragments every lane of the warp holds,
// assembled by the layouts the PTX ISA documents. Used by
// FlashAttentionEmulatorTest.cpp (the tiles against the CPU's attention)
// and by tessel-run-emulated-tiles (whole models trained through them).
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_TEST_UNIT_RUNTIME_FLASHEMULATOR_H
#define TESSEL_TEST_UNIT_RUNTIME_FLASHEMULATOR_H

#include "../../../runtime/cuda/FlashAttentionSimt.h"
#include "tessel/runtime/Attention.h"
#include "tessel/runtime/DType.h"
#include "tessel/runtime/HalfFloat.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <type_traits>
#include <ucontext.h>
#include <vector>

namespace tessel::runtime::flashemu {

namespace flash = tessel::runtime::cuda::flash;

/// The kThreads CUDA threads of one block as cooperative fibers on this
/// thread (ucontext): each runs until it waits at a barrier, then the next
/// runnable one runs; the last to arrive at a barrier releases the others
/// and goes on. Barrier 0 is the block's, 1 + w warp w's.
class Fibers {
public:
  static constexpr size_t kStack = 64 * 1024;
  explicit Fibers(std::function<void(int)> body) : body_(std::move(body)) {
    for (Fiber &f : fibers_)
      f.stack.resize(kStack);
  }

  /// Runs every fiber to its end; false on a deadlock (a barrier that not
  /// all of its threads reach).
  bool run() {
    for (int i = 0; i < flash::kThreads; ++i) {
      Fiber &f = fibers_[i];
      f.done = false;
      f.waitingOn = -1;
      getcontext(&f.uc);
      f.uc.uc_stack.ss_sp = f.stack.data();
      f.uc.uc_stack.ss_size = f.stack.size();
      f.uc.uc_link = &main_;
      makecontext(&f.uc, reinterpret_cast<void (*)()>(&Fibers::entry), 0);
    }
    for (int &a : arrived_)
      a = 0;
    int done = 0;
    while (done < flash::kThreads) {
      bool progress = false;
      for (int i = 0; i < flash::kThreads; ++i) {
        Fiber &f = fibers_[i];
        if (f.done || f.waitingOn >= 0)
          continue;
        current_ = i;
        running_ = this;
        swapcontext(&main_, &f.uc);
        progress = true;
        if (f.done)
          ++done;
      }
      if (!progress)
        return false;
    }
    return true;
  }

  /// The calling fiber waits at `barrier`.
  void wait(int barrier) {
    const int need = barrier == 0 ? flash::kThreads : 32;
    if (++arrived_[barrier] == need) {
      arrived_[barrier] = 0;
      for (Fiber &f : fibers_)
        if (f.waitingOn == barrier)
          f.waitingOn = -1;
      return;
    }
    Fiber &f = fibers_[current_];
    f.waitingOn = barrier;
    swapcontext(&f.uc, &main_);
  }

private:
  struct Fiber {
    ucontext_t uc;
    std::vector<char> stack;
    int waitingOn = -1;
    bool done = false;
  };
  static void entry() {
    Fibers *self = running_;
    const int id = self->current_;
    self->body_(id);
    self->fibers_[id].done = true; // uc_link returns to main_
  }
  static inline thread_local Fibers *running_ = nullptr;
  std::function<void(int)> body_;
  Fiber fibers_[flash::kThreads];
  ucontext_t main_;
  int current_ = 0;
  int arrived_[1 + flash::kWarps] = {};
};

/// What the threads of one emulated block share.
struct Block {
  Fibers *fibers = nullptr;
  int votes[flash::kThreads] = {};
  float lanes[flash::kWarps][32] = {};
  uint32_t a[flash::kWarps][32][4] = {}, b[flash::kWarps][32][2] = {};
  int64_t *mmas = nullptr; // warp-level mmas, or tiles a warp computed
};

struct EmuCtx {
  Block *blk;
  int id;
  int w() const { return id / 32; }
  int l() const { return id % 32; }

  int tid() const { return id; }
  void sync() { blk->fibers->wait(0); }
  void warpSync() { blk->fibers->wait(1 + w()); }
  int syncAnd(int v) {
    blk->votes[id] = v;
    sync();
    int all = 1;
    for (int i = 0; i < flash::kThreads; ++i)
      all &= blk->votes[i] != 0;
    sync();
    return all;
  }
  float shflXor(float v, int laneMask) {
    blk->lanes[w()][l()] = v;
    warpSync();
    const float r = blk->lanes[w()][l() ^ laneMask];
    warpSync();
    return r;
  }
  /// The SIMT tiles' hook: a thread computed a tile (counted per warp).
  void tileComputed() {
    if (l() == 0 && blk->mmas)
      ++*blk->mmas;
  }
  template <bool kBf16> float widen(uint16_t h) const {
    return kBf16 ? bf16ToF32(h) : f16ToF32(h);
  }
  template <bool kBf16> uint16_t narrow(float x) const {
    return kBf16 ? f32ToBf16(x) : f32ToF16(x);
  }
  template <bool kBf16> uint32_t pack(float lo, float hi) const {
    return uint32_t(narrow<kBf16>(lo)) | uint32_t(narrow<kBf16>(hi)) << 16;
  }
  /// mma.m16n8k16.row.col.f32: every lane deposits its fragments, each
  /// lane then rebuilds A [16, 16] and B [16, 8] from all 32 and computes
  /// its own four elements of C.
  template <bool kBf16>
  void mma(float c[4], const uint32_t a[4], const uint32_t b[2]) {
    const int w = this->w(), lane = l();
    for (int i = 0; i < 4; ++i)
      blk->a[w][lane][i] = a[i];
    blk->b[w][lane][0] = b[0];
    blk->b[w][lane][1] = b[1];
    warpSync();
    float A[16][16], B[16][8];
    auto half = [&](uint32_t r, int hi) {
      return widen<kBf16>(static_cast<uint16_t>(hi ? r >> 16 : r & 0xffffu));
    };
    for (int L = 0; L < 32; ++L) {
      const int g = L >> 2, t = L & 3;
      const uint32_t *ra = blk->a[w][L], *rb = blk->b[w][L];
      for (int e = 0; e < 2; ++e) {
        A[g][2 * t + e] = half(ra[0], e);
        A[g + 8][2 * t + e] = half(ra[1], e);
        A[g][2 * t + 8 + e] = half(ra[2], e);
        A[g + 8][2 * t + 8 + e] = half(ra[3], e);
        B[2 * t + e][g] = half(rb[0], e);
        B[2 * t + 8 + e][g] = half(rb[1], e);
      }
    }
    const int g = lane >> 2, t = lane & 3;
    for (int i = 0; i < 4; ++i) {
      const int row = g + (i >= 2 ? 8 : 0), col = 2 * t + (i & 1);
      float acc = c[i];
      for (int k = 0; k < 16; ++k)
        acc += A[row][k] * B[k][col];
      c[i] = acc;
    }
    if (lane == 0 && blk->mmas)
      ++*blk->mmas;
    warpSync();
  }
};

/// Shared memory's contents before a block runs: a half's 0xdead, or NaN.
template <class E> E poison() {
  if constexpr (std::is_same_v<E, float>)
    return NAN;
  else
    return 0xdead;
}

/// A grid over (batch entry, first row or key), one block at a time, each
/// running fn(ctx, b, first, smem) on kThreads fibers with `smemBytes` of
/// shared memory (of E); the number of warp-level mmas (or tiles) added to
/// `mmas`.
template <class E, class Fn>
[[nodiscard]] bool emulate(int64_t batch, int64_t extent, int step,
                           int smemBytes, int64_t &mmas, Fn fn) {
  std::vector<E> smem(smemBytes / sizeof(E));
  int64_t b = 0, first = 0;
  Block blk;
  blk.mmas = &mmas;
  Fibers fibers([&](int id) {
    EmuCtx ctx{&blk, id};
    fn(ctx, b, first, smem.data());
  });
  blk.fibers = &fibers;
  for (b = 0; b < batch; ++b)
    for (first = 0; first < extent; first += step) {
      std::fill(smem.begin(), smem.end(), poison<E>());
      if (!fibers.run())
        return false; // a barrier that not every thread reaches
    }
  return true;
}

/// An element as f32: a half's bits of type dt, or a float.
inline float toF32(DType dt, uint16_t h) { return halfToF32(dt, h); }
inline float toF32(DType, float x) { return x; }

/// The largest Euclidean norm of n rows of batch entry b (row i's element c
/// at x[i rowStride + c colStride]), as maxNormKernel computes it.
template <class E>
float maxNorm(DType dt, const E *x, int64_t n, int64_t cols, int64_t rowStride,
              int64_t colStride) {
  float best = 0;
  for (int64_t i = 0; i < n; ++i) {
    float sq = 0;
    for (int64_t c = 0; c < cols; ++c) {
      const float e = toF32(dt, x[i * rowStride + c * colStride]);
      sq += e * e;
    }
    best = flash::maxNan(best, sq);
  }
  return std::sqrt(best);
}

/// Each batch entry's largest key norm (kt [batch, D, T]'s columns), as
/// the device's maxNormKernel computes it.
template <class E>
std::vector<float> keyNorms(DType dt, const E *kt, const AttentionDims &d) {
  std::vector<float> norm(d.batch);
  for (int64_t b = 0; b < d.batch; ++b)
    norm[b] = maxNorm(dt, kt + b * d.d * d.t, d.t, d.d, 1, d.t);
  return norm;
}

/// Each batch entry's largest query norm (q [batch, S, D]'s rows).
template <class E>
std::vector<float> queryNorms(DType dt, const E *q, const AttentionDims &d) {
  std::vector<float> norm(d.batch);
  for (int64_t b = 0; b < d.batch; ++b)
    norm[b] = maxNorm(dt, q + b * d.s * d.d, d.s, d.d, d.d, 1);
  return norm;
}

/// delta = rowsum(grad * out) over [batch S, dv], as the device's
/// deltaKernel sums it.
template <class E>
std::vector<float> deltaOf(DType dt, const E *grad, const E *out,
                           const AttentionDims &d) {
  std::vector<float> delta(d.batch * d.s);
  for (int64_t row = 0; row < d.batch * d.s; ++row) {
    float dot = 0.0f;
    for (int64_t k = 0; k < d.dv; ++k)
      dot += toF32(dt, grad[row * d.dv + k]) * toF32(dt, out[row * d.dv + k]);
    delta[row] = dot;
  }
  return delta;
}

} // namespace tessel::runtime::flashemu

#endif // TESSEL_TEST_UNIT_RUNTIME_FLASHEMULATOR_H
