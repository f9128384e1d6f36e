//===- EmulatedTilesMain.cpp - tessel-run over the emulated CUDA tiles ----===//
//
// tessel-run-emulated-tiles: tessel-run (tools/tessel-run, linked in with
// its main renamed) whose CPU kernels of attention and attention_grad are
// the CUDA backend's tile algorithms, run by the host emulator of
// FlashEmulator.h: FlashAttention.h's for a bf16 or f16 attention,
// FlashAttentionSimt.h's for an f32 one, with the device's first and last
// kernels (the key and query norms, delta, the NaN rows' fill) done here in
// their order. A whole model then trains through the tiles on any machine
// (test/Runtime/emulated-tiles.test), with the masks, scales and shapes
// the compiler gives them, masked_score and keep too (the backward's stats
// pass first). An attention the tiles do not take (head dims other than
// 32, 64, 80, 96 and 128, or v's unlike q's) keeps the CPU kernel, as the
// CUDA backend keeps its blocked path.
//
//===----------------------------------------------------------------------===//
#include "FlashEmulator.h"

#include "../../../runtime/cpu/KernelRegistry.h"
#include "tessel/runtime/Attention.h"

#include <cstdio>
#include <string>
#include <utility>

/// tessel-run's main (tools/tessel-run/tessel-run.cpp, compiled into this
/// binary with main renamed).
int tesselRunMain(int argc, char **argv);

namespace {

using namespace tessel::runtime;
using namespace tessel::runtime::flashemu;

cpu::KernelFactory cpuAttention = nullptr, cpuAttentionGrad = nullptr;

/// An attention's geometry and the operands the tiles read besides q, kt
/// and v.
struct Geometry {
  AttentionDims d;
  const float *mask = nullptr, *fill = nullptr;
  bool replace = false; // masked_score
  float masked = 0.0f;
  const uint8_t *keep = nullptr;

  template <class Args> void set(Args &a) const {
    a.mask = mask;
    a.replace = replace;
    a.masked = masked;
    a.keep = keep;
    a.dims = d;
  }
};

/// The attention's geometry; false when the tiles do not take it (as
/// cuda/Attention.cpp's useFlash: a head dim they have, v's the same, a
/// mask where masked_score replaces).
bool tileGeometry(const cpu::KernelContext &ctx, Geometry &g) {
  const AttentionOperands at = attentionOperands(ctx.op);
  const Shape *maskShape = at.mask >= 0 ? &ctx.in(at.mask).shape : nullptr;
  const Shape *keepShape = at.keep >= 0 ? &ctx.in(at.keep).shape : nullptr;
  AttentionDims &d = g.d;
  if (!makeAttentionDims(ctx.in(0).shape, ctx.in(1).shape, ctx.in(2).shape,
                         maskShape, d, keepShape)
           .empty())
    return false;
  d.scale = ctx.op.floatAttr("scale", 1.0f);
  auto operand = [&](int i) { return i >= 0 ? ctx.operand(i) : nullptr; };
  g.mask = static_cast<const float *>(operand(at.mask));
  g.fill = static_cast<const float *>(operand(at.fill));
  g.keep = static_cast<const uint8_t *>(operand(at.keep));
  g.replace = at.replaceMasked;
  g.masked = at.maskedScore;
  return (!g.replace || g.mask) && flash::supportedHeadDim(d.d) && d.dv == d.d;
}

/// f32 into an element: a half's bits (bf16 by kBf16, else f16) or a float.
template <bool kBf16> void store(float x, uint16_t &h) {
  h = kBf16 ? f32ToBf16(x) : f32ToF16(x);
}
template <bool kBf16> void store(float x, float &y) { y = x; }

/// fn(E, kBf16, D) as types and constants for the attention's element
/// type and head dim (one the tiles take).
template <class Fn> Status withTiles(DType t, int64_t d, Fn fn) {
  auto dims = [&](auto e, auto bf16) {
    switch (d) {
    case 32:
      return fn(e, bf16, std::integral_constant<int, 32>());
    case 64:
      return fn(e, bf16, std::integral_constant<int, 64>());
    case 80:
      return fn(e, bf16, std::integral_constant<int, 80>());
    case 96:
      return fn(e, bf16, std::integral_constant<int, 96>());
    default:
      return fn(e, bf16, std::integral_constant<int, 128>());
    }
  };
  if (t == DType::BF16)
    return dims(uint16_t(), std::true_type());
  if (t == DType::F16)
    return dims(uint16_t(), std::false_type());
  return dims(float(), std::false_type());
}

/// The forward's blocks (or, with a.rowMax, the stats pass's); false where
/// one deadlocked.
template <class E, bool kBf16, int D>
bool forwardBlocks(const flash::TileArgs<E> &a) {
  constexpr bool kF32 = std::is_same_v<E, float>;
  const int bytes = kF32 ? flash::simt::sharedBytes(D) : flash::sharedBytes(D);
  int64_t work = 0;
  return emulate<E>(a.dims.batch, a.dims.s, flash::kRows, bytes, work,
                    [&](EmuCtx &ctx, int64_t b, int64_t row0, E *smem) {
                      if constexpr (kF32)
                        flash::simt::forwardBlock<D>(ctx, a, b, row0, smem);
                      else
                        flash::forwardBlock<kBf16, D>(ctx, a, b, row0, smem);
                    });
}

template <class E, bool kBf16, int D>
Status forward(DType t, flash::TileArgs<E> a, const float *fill) {
  const AttentionDims &d = a.dims;
  std::vector<float> kNorm;
  if (a.mask && !a.replace) {
    kNorm = keyNorms(t, a.kt, d);
    a.kNorm = kNorm.data();
  }
  if (!forwardBlocks<E, kBf16, D>(a))
    return Status::error("attention: an emulated block deadlocked");
  // fillNanRowsKernel: the rows whose lse is NaN get fill times the sum of
  // v's rows, in row order, rounded once.
  for (int64_t row = 0; fill && row < d.batch * d.s; ++row) {
    if (!std::isnan(a.lse[row]))
      continue;
    const E *vb = a.v + (row / d.s) * d.t * D;
    for (int k = 0; k < D; ++k) {
      float sum = 0.0f;
      for (int64_t j = 0; j < d.t; ++j)
        sum += toF32(t, vb[j * D + k]);
      store<kBf16>(*fill * sum, a.out[row * D + k]);
    }
  }
  return Status::ok();
}

template <class E, bool kBf16, int D>
Status backward(DType t, flash::TileGradArgs<E> a, const E *out) {
  const AttentionDims &d = a.dims;
  if (d.s == 0) { // no query: dkt and dv are 0
    std::fill(a.dkt, a.dkt + d.batch * D * d.t, E(0));
    std::fill(a.dv, a.dv + d.batch * d.t * D, E(0));
    return Status::ok();
  }
  // deltaKernel, and maxNormKernel over the queries and the keys.
  const std::vector<float> delta = deltaOf(t, a.grad, out, d);
  std::vector<float> qNorm, kNorm, stats;
  a.delta = delta.data();
  if (a.replace) { // the stats pass: each row's max and log-sum
    stats.assign(2 * d.batch * d.s, 0.0f);
    const flash::TileArgs<E> f =
        flash::statsArgs(a, stats.data(), stats.data() + d.batch * d.s);
    if (!forwardBlocks<E, kBf16, D>(f))
      return Status::error("attention_grad: an emulated block deadlocked");
    a.rowMax = f.rowMax;
    a.rowLogSum = f.rowLogSum;
  } else if (a.mask) {
    qNorm = queryNorms(t, a.q, d);
    kNorm = keyNorms(t, a.kt, d);
    a.qNorm = qNorm.data();
    a.kNorm = kNorm.data();
  }
  constexpr bool kF32 = std::is_same_v<E, float>;
  int64_t work = 0;
  bool ok = d.t == 0 ||
            emulate<E>(d.batch, d.t, flash::kKeys,
                       kF32 ? flash::simt::dkvSharedBytes(D)
                            : flash::dkvSharedBytes(D),
                       work, [&](EmuCtx &ctx, int64_t b, int64_t k0, E *smem) {
                         if constexpr (kF32)
                           flash::simt::dkvBlock<D>(ctx, a, b, k0, smem);
                         else
                           flash::dkvBlock<kBf16, D>(ctx, a, b, k0, smem);
                       });
  ok = ok && emulate<E>(
                 d.batch, d.s, flash::kRows,
                 kF32 ? flash::simt::dqSharedBytes(D) : flash::dqSharedBytes(D),
                 work, [&](EmuCtx &ctx, int64_t b, int64_t row0, E *smem) {
                   if constexpr (kF32)
                     flash::simt::dqBlock<D>(ctx, a, b, row0, smem);
                   else
                     flash::dqBlock<kBf16, D>(ctx, a, b, row0, smem);
                 });
  return ok ? Status::ok()
            : Status::error("attention_grad: an emulated block deadlocked");
}

cpu::Step emulatedAttention(const cpu::KernelContext &ctx) {
  Geometry g;
  if (!tileGeometry(ctx, g))
    return cpuAttention(ctx);
  const AttentionDims &d = g.d;
  const DType t = ctx.in(0).dtype;
  void *q = ctx.operand(0), *kt = ctx.operand(1), *v = ctx.operand(2),
       *out = ctx.result(0), *lse = ctx.result(1);
  return [=]() -> Status {
    if (d.batch == 0 || d.s == 0)
      return Status::ok();
    return withTiles(t, d.d, [&](auto e, auto bf16, auto dim) {
      using E = decltype(e);
      flash::TileArgs<E> a;
      a.q = static_cast<const E *>(q);
      a.kt = static_cast<const E *>(kt);
      a.v = static_cast<const E *>(v);
      a.out = static_cast<E *>(out);
      a.lse = static_cast<float *>(lse);
      g.set(a);
      return forward<E, decltype(bf16)::value, decltype(dim)::value>(t, a,
                                                                     g.fill);
    });
  };
}

cpu::Step emulatedAttentionGrad(const cpu::KernelContext &ctx) {
  Geometry g;
  if (!tileGeometry(ctx, g))
    return cpuAttentionGrad(ctx);
  const AttentionDims &d = g.d;
  const DType t = ctx.in(0).dtype;
  std::vector<void *> p;
  for (int i = 0; i < 6; ++i)
    p.push_back(ctx.operand(i));
  for (int i = 0; i < 3; ++i)
    p.push_back(ctx.result(i));
  return [=]() -> Status {
    if (d.batch == 0)
      return Status::ok();
    return withTiles(t, d.d, [&](auto e, auto bf16, auto dim) {
      using E = decltype(e);
      flash::TileGradArgs<E> a;
      a.q = static_cast<const E *>(p[0]);
      a.kt = static_cast<const E *>(p[1]);
      a.v = static_cast<const E *>(p[2]);
      a.lse = static_cast<const float *>(p[4]);
      a.grad = static_cast<const E *>(p[5]);
      g.set(a);
      a.fill = g.fill;
      a.dq = static_cast<E *>(p[6]);
      a.dkt = static_cast<E *>(p[7]);
      a.dv = static_cast<E *>(p[8]);
      return backward<E, decltype(bf16)::value, decltype(dim)::value>(
          t, a, static_cast<const E *>(p[3]));
    });
  };
}

} // namespace

int main(int argc, char **argv) {
  cpu::KernelRegistry &r = cpu::cpuKernels();
  cpuAttention = r.remove(OpKind::Attention);
  cpuAttentionGrad = r.remove(OpKind::AttentionGrad);
  if (!cpuAttention || !cpuAttentionGrad) {
    std::fprintf(stderr, "tessel-run-emulated-tiles: the CPU backend has no "
                         "attention kernels to replace\n");
    return 1;
  }
  r.add(OpKind::Attention, emulatedAttention);
  r.add(OpKind::AttentionGrad, emulatedAttentionGrad);
  return tesselRunMain(argc, argv);
}
