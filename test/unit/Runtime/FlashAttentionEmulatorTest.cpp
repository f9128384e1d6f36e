//===- FlashAttentionEmulatorTest.cpp - the CUDA tiles on the host -------===//
//
// runtime/cuda/FlashAttention.h's and FlashAttentionSimt.h's forward and
// backward, run on the host by an emulation of their context
// (FlashEmulator.h: each CUDA thread of a block a cooperative fiber, the
// mma computed from the fragments every lane of the warp holds). What the
// device adds is only the instructions themselves (CudaTrainingTest's Attention
// and HalfAttention check those on a GPU); the tiling, the online softmax, the
// masks, the skipped dead tiles, the NaN rows and the fragment packing are
// checked here on every machine, against the CPU's attention (f32 math, which
// AttentionTest checks against double).
//
//===----------------------------------------------------------------------===//
#include "TestUtil.h"

#include "FlashEmulator.h"

#include <cstring>

using namespace tessel::runtime;
using namespace tessel::runtime::test;
using namespace tessel::runtime::flashemu;

namespace {

struct Case {
  Shape lead;
  int64_t s, t, d;
  Shape mask; // empty: none
  float scale;
  // DeadRows: rows 0-15 (warp 0's) at the dead value everywhere: finite,
  // so their softmax is uniform over every key, and no tile may be skipped.
  enum { Random, Causal, Padding, DeadRows } kind = Random;
  float dead = -3.4028235e38f; // the exporters' causal fill, or -inf
  bool deadRow = false;        // row 3 of every mask plane all -inf
  // has_masked_score: the scores whose mask is -inf are `masked` (with
  // keep, those whose keep is false: a random bool [.., S, T] with row 5
  // all false).
  bool replace = false;
  float masked = 0.0f;
  bool keep = false;
};

/// The attention's geometry from the tensors' shapes, with the case's
/// scale; false (and a test failure) when they do not fit.
bool dimsOf(const Case &c, const Tensor &q, const Tensor &kt, const Tensor &v,
            const Tensor *mask, const Tensor *keep, AttentionDims &dims) {
  const Shape ms = mask ? mask->shape() : Shape{};
  const Shape ks = keep ? keep->shape() : Shape{};
  const std::string bad =
      makeAttentionDims(q.shape(), kt.shape(), v.shape(), mask ? &ms : nullptr,
                        dims, keep ? &ks : nullptr);
  if (!bad.empty()) {
    ADD_FAILURE() << bad;
    return false;
  }
  dims.scale = c.scale;
  return true;
}

template <class E> struct Result {
  std::vector<E> out;
  std::vector<float> lse;
  int64_t mmas = 0;
};

/// The forward over E (uint16_t: the half tiles, float: the SIMT ones):
/// block(ctx, args, b, row0, smem) with `smemBytes` of shared memory.
template <class E, int D, class Block>
Result<E> runFlash(const Case &c, const Tensor &q, const Tensor &kt,
                   const Tensor &v, const Tensor *mask, const Tensor *keep,
                   bool skips, int smemBytes, Block block) {
  AttentionDims dims;
  Result<E> r;
  if (!dimsOf(c, q, kt, v, mask, keep, dims))
    return r;
  r.out.assign(dims.batch * dims.s * D, 0);
  r.lse.assign(dims.batch * dims.s, 0);
  const std::vector<float> kNorm = keyNorms(kt.dtype(), kt.data<E>(), dims);
  flash::TileArgs<E> a;
  a.q = q.data<E>();
  a.kt = kt.data<E>();
  a.v = v.data<E>();
  a.out = r.out.data();
  a.lse = r.lse.data();
  a.mask = mask ? mask->data<float>() : nullptr;
  a.kNorm = skips ? kNorm.data() : nullptr;
  a.replace = c.replace;
  a.masked = c.masked;
  a.keep = keep ? keep->data<uint8_t>() : nullptr;
  a.dims = dims;
  int64_t mmas = 0;
  if (!emulate<E>(dims.batch, dims.s, flash::kRows, smemBytes, mmas,
                  [&](EmuCtx &ctx, int64_t b, int64_t row0, E *smem) {
                    block(ctx, a, b, row0, smem);
                  }))
    ADD_FAILURE() << "a barrier that not every thread reaches";
  r.mmas = mmas;
  return r;
}

template <bool kBf16, int D>
Result<uint16_t> runFlash(const Case &c, const Tensor &q, const Tensor &kt,
                          const Tensor &v, const Tensor *mask,
                          const Tensor *keep, bool skips) {
  return runFlash<uint16_t, D>(c, q, kt, v, mask, keep, skips,
                               flash::sharedBytes(D),
                               [](EmuCtx &ctx, const flash::Args &a, int64_t b,
                                  int64_t row0, uint16_t *smem) {
                                 flash::forwardBlock<kBf16, D>(ctx, a, b, row0,
                                                               smem);
                               });
}

template <class E> struct GradResult {
  std::vector<E> dq, dkt, dv;
  int64_t mmas = 0;
};

/// The backward's two passes over E, dkv(ctx, args, b, k0, smem) and
/// dq(ctx, args, b, row0, smem) with `dkvBytes` and `dqBytes` of shared
/// memory; delta and the norms as the device's first kernels compute them,
/// and with masked_score the stats pass, fwd(ctx, args, b, row0, smem)
/// with `fwdBytes`; the forward's results `out` and `lse`, the NaN guard's
/// fill where set.
template <class E, int D, class Fwd, class Dkv, class Dq>
GradResult<E> runFlashGrad(const Case &c, const Tensor &q, const Tensor &kt,
                           const Tensor &v, const Tensor *mask,
                           const Tensor *keep, const Tensor &out,
                           const Tensor &lse, const Tensor &grad,
                           const float *fill, bool skips, int fwdBytes, Fwd fwd,
                           int dkvBytes, Dkv dkv, int dqBytes, Dq dq) {
  const DType dt = q.dtype();
  AttentionDims dims;
  GradResult<E> r;
  if (!dimsOf(c, q, kt, v, mask, keep, dims))
    return r;
  int64_t mmas = 0;
  const int64_t rows = dims.batch * dims.s;
  std::vector<float> stats(2 * rows, NAN);
  const std::vector<float> delta =
      deltaOf(dt, grad.data<E>(), out.data<E>(), dims);
  const std::vector<float> qNorm = queryNorms(dt, q.data<E>(), dims),
                           kNorm = keyNorms(dt, kt.data<E>(), dims);
  r.dq.assign(q.numElements(), poison<E>());
  r.dkt.assign(kt.numElements(), poison<E>());
  r.dv.assign(v.numElements(), poison<E>());
  flash::TileGradArgs<E> a;
  a.q = q.data<E>();
  a.kt = kt.data<E>();
  a.v = v.data<E>();
  a.grad = grad.data<E>();
  a.lse = lse.data<float>();
  a.delta = delta.data();
  a.mask = mask ? mask->data<float>() : nullptr;
  a.fill = fill;
  if (skips && mask) {
    a.qNorm = qNorm.data();
    a.kNorm = kNorm.data();
  }
  a.replace = c.replace;
  a.masked = c.masked;
  a.keep = keep ? keep->data<uint8_t>() : nullptr;
  a.dq = r.dq.data();
  a.dkt = r.dkt.data();
  a.dv = r.dv.data();
  a.dims = dims;
  if (c.replace) { // the stats pass first
    const flash::TileArgs<E> f =
        flash::statsArgs(a, stats.data(), stats.data() + rows);
    if (!emulate<E>(dims.batch, dims.s, flash::kRows, fwdBytes, mmas,
                    [&](EmuCtx &ctx, int64_t b, int64_t row0, E *smem) {
                      fwd(ctx, f, b, row0, smem);
                    }))
      ADD_FAILURE() << "a barrier that not every thread reaches";
    a.rowMax = f.rowMax;
    a.rowLogSum = f.rowLogSum;
  }
  if (!emulate<E>(dims.batch, dims.t, flash::kKeys, dkvBytes, mmas,
                  [&](EmuCtx &ctx, int64_t b, int64_t k0, E *smem) {
                    dkv(ctx, a, b, k0, smem);
                  }) ||
      !emulate<E>(dims.batch, dims.s, flash::kRows, dqBytes, mmas,
                  [&](EmuCtx &ctx, int64_t b, int64_t row0, E *smem) {
                    dq(ctx, a, b, row0, smem);
                  }))
    ADD_FAILURE() << "a barrier that not every thread reaches";
  r.mmas = mmas;
  return r;
}

template <bool kBf16, int D>
GradResult<uint16_t>
runFlashGrad(const Case &c, const Tensor &q, const Tensor &kt, const Tensor &v,
             const Tensor *mask, const Tensor *keep, const Tensor &out,
             const Tensor &lse, const Tensor &grad, const float *fill,
             bool skips) {
  return runFlashGrad<uint16_t, D>(
      c, q, kt, v, mask, keep, out, lse, grad, fill, skips,
      flash::sharedBytes(D),
      [](EmuCtx &ctx, const flash::Args &a, int64_t b, int64_t row0,
         uint16_t *smem) {
        flash::forwardBlock<kBf16, D>(ctx, a, b, row0, smem);
      },
      flash::dkvSharedBytes(D),
      [](EmuCtx &ctx, const flash::GradArgs &a, int64_t b, int64_t k0,
         uint16_t *smem) { flash::dkvBlock<kBf16, D>(ctx, a, b, k0, smem); },
      flash::dqSharedBytes(D),
      [](EmuCtx &ctx, const flash::GradArgs &a, int64_t b, int64_t row0,
         uint16_t *smem) { flash::dqBlock<kBf16, D>(ctx, a, b, row0, smem); });
}

/// got against the CPU's result: within `units` of the largest value, where
/// a unit is the half's last place (and 1e-6 for f32); NaN where it is NaN.
template <class E>
void expectNear(DType dt, const E *want, const E *got, int64_t n, double units,
                const char *what) {
  double top = 1e-30;
  for (int64_t i = 0; i < n; ++i)
    if (std::isfinite(toF32(dt, want[i])))
      top = std::max(top, double(std::fabs(toF32(dt, want[i]))));
  const double unit = dt == DType::BF16  ? 0x1p-7
                      : dt == DType::F16 ? 0x1p-10
                                         : 1e-6;
  int bad = 0;
  for (int64_t i = 0; i < n && bad < 5; ++i) {
    const float w = toF32(dt, want[i]), o = toF32(dt, got[i]);
    const bool ok =
        std::isnan(w) ? std::isnan(o) : std::fabs(o - w) <= units * unit * top;
    if (!ok)
      ADD_FAILURE() << what << "[" << i << "] = " << o << ", the CPU's " << w
                    << " (bad " << ++bad << ")";
  }
}

/// The half tiles (FlashAttention.h) of one half and head dim.
template <bool kBf16, int D> struct HalfTiles {
  using E = uint16_t;
  static constexpr DType kType = kBf16 ? DType::BF16 : DType::F16;
  // Against the CPU: the probabilities (ds) rounded to the half before they
  // multiply v (q, k), the sums in another order: within two units in the
  // half's last place of the largest result, and four for the backward's
  // (dkt and dq sum over up to 150 products of p (dp - delta)).
  static constexpr double kForwardUnits = 2, kBackwardUnits = 4;
  static Tensor input(const Shape &shape, std::mt19937 &rng) {
    return halfPair(kType, shape, rng).second;
  }
  static Result<E> forward(const Case &c, const Tensor &q, const Tensor &kt,
                           const Tensor &v, const Tensor *mask,
                           const Tensor *keep, bool skips) {
    return runFlash<kBf16, D>(c, q, kt, v, mask, keep, skips);
  }
  static GradResult<E> backward(const Case &c, const Tensor &q,
                                const Tensor &kt, const Tensor &v,
                                const Tensor *mask, const Tensor *keep,
                                const Tensor &out, const Tensor &lse,
                                const Tensor &grad, const float *fill,
                                bool skips) {
    return runFlashGrad<kBf16, D>(c, q, kt, v, mask, keep, out, lse, grad, fill,
                                  skips);
  }
};

/// The f32 SIMT tiles (FlashAttentionSimt.h) of one head dim.
template <int D> struct SimtTiles {
  using E = float;
  static constexpr DType kType = DType::F32;
  // f32 throughout, the sums in another order than the CPU's: within 2e-6
  // of the largest result (4e-6 for the backward's longer sums).
  static constexpr double kForwardUnits = 2, kBackwardUnits = 4;
  static Tensor input(const Shape &shape, std::mt19937 &rng) {
    return randomF32(shape, rng);
  }
  static Result<E> forward(const Case &c, const Tensor &q, const Tensor &kt,
                           const Tensor &v, const Tensor *mask,
                           const Tensor *keep, bool skips) {
    return runFlash<float, D>(
        c, q, kt, v, mask, keep, skips, flash::simt::sharedBytes(D),
        [](EmuCtx &ctx, const flash::ArgsF32 &a, int64_t b, int64_t row0,
           float *smem) {
          flash::simt::forwardBlock<D>(ctx, a, b, row0, smem);
        });
  }
  static GradResult<E> backward(const Case &c, const Tensor &q,
                                const Tensor &kt, const Tensor &v,
                                const Tensor *mask, const Tensor *keep,
                                const Tensor &out, const Tensor &lse,
                                const Tensor &grad, const float *fill,
                                bool skips) {
    return runFlashGrad<float, D>(
        c, q, kt, v, mask, keep, out, lse, grad, fill, skips,
        flash::simt::sharedBytes(D),
        [](EmuCtx &ctx, const flash::ArgsF32 &a, int64_t b, int64_t row0,
           float *smem) {
          flash::simt::forwardBlock<D>(ctx, a, b, row0, smem);
        },
        flash::simt::dkvSharedBytes(D),
        [](EmuCtx &ctx, const flash::GradArgsF32 &a, int64_t b, int64_t k0,
           float *smem) { flash::simt::dkvBlock<D>(ctx, a, b, k0, smem); },
        flash::simt::dqSharedBytes(D),
        [](EmuCtx &ctx, const flash::GradArgsF32 &a, int64_t b, int64_t row0,
           float *smem) { flash::simt::dqBlock<D>(ctx, a, b, row0, smem); });
  }
};

/// The case's mask: random in [-3, 0], with its kind's dead elements.
Tensor caseMask(const Case &c, std::mt19937 &rng) {
  Tensor mask = randomF32(c.mask, rng, -3.0f, 0.0f);
  const int64_t t = c.mask.back(),
                s = c.mask.size() > 1 ? c.mask[c.mask.size() - 2] : 1;
  for (int64_t e = 0; e < mask.numElements(); ++e) {
    const int64_t col = e % t, row = (e / t) % s;
    float &m = mask.data<float>()[e];
    if (c.kind == Case::Causal && col > row)
      m = c.dead;
    if (c.kind == Case::Padding && col >= t - 9)
      m = c.dead;
    if (c.kind == Case::DeadRows && row < 16)
      m = c.dead;
    if (c.deadRow && row == 3)
      m = -INFINITY;
  }
  return mask;
}

/// The forward and, with `grad`, the backward of Tiles against the CPU;
/// with the skips and without them where the mask can make whole tiles
/// dead.
template <class Tiles, int D>
void check(const Case &c, std::mt19937 &rng, bool grad) {
  using E = typename Tiles::E;
  const DType dt = Tiles::kType;
  auto with = [&](std::initializer_list<int64_t> tail) {
    Shape s = c.lead;
    s.insert(s.end(), tail);
    return s;
  };
  Tensor q = Tiles::input(with({c.s, D}), rng),
         kt = Tiles::input(with({D, c.t}), rng),
         v = Tiles::input(with({c.t, D}), rng);
  std::vector<Tensor> in = {q, kt, v};
  Tensor mask, keep;
  if (!c.mask.empty()) {
    mask = caseMask(c, rng);
    in.push_back(mask);
  }
  if (c.keep) {
    keep = Tensor(DType::Bool, with({c.s, c.t}));
    std::bernoulli_distribution coin(0.7);
    for (int64_t e = 0; e < keep.numElements(); ++e)
      keep.data<uint8_t>()[e] = (e / c.t) % c.s == 5 ? 0 : coin(rng);
    in.push_back(keep);
  }
  Shape rows = with({c.s});
  Attrs attrs = Attrs().f("scale", c.scale).i("has_mask", !c.mask.empty());
  if (c.replace)
    attrs.i("has_masked_score", 1).f("masked_score", c.masked);
  if (c.keep)
    attrs.i("has_keep", 1);
  std::vector<Tensor> cpu = runOp(
      "attention", in, {{dt, with({c.s, D})}, {DType::F32, rows}}, attrs, 2);
  const Tensor *m = c.mask.empty() ? nullptr : &mask;
  const Tensor *k = c.keep ? &keep : nullptr;
  const Result<E> got = Tiles::forward(c, q, kt, v, m, k, true);
  ASSERT_FALSE(got.out.empty());
  expectNear(dt, cpu[0].data<E>(), got.out.data(), cpu[0].numElements(),
             Tiles::kForwardUnits, "out");
  for (size_t i = 0; i < got.lse.size(); ++i) {
    const float w = cpu[1].data<float>()[i];
    if (std::isnan(w))
      EXPECT_TRUE(std::isnan(got.lse[i]))
          << "lse[" << i << "] = " << got.lse[i];
    else
      EXPECT_NEAR(got.lse[i], w, 1e-5 * std::fabs(w) + 1e-5)
          << "lse[" << i << "]";
  }

  // With masked_score no tile is dead: the same products with the skips
  // allowed as without.
  if (c.replace) {
    const Result<E> all = Tiles::forward(c, q, kt, v, m, k, false);
    EXPECT_EQ(got.mmas, all.mmas) << "a masked_score attention skipped tiles";
  }
  // The skips are exact: the same bits without them, and fewer products
  // where a causal mask leaves whole tiles dead.
  const bool compareSkips =
      !c.replace && (c.kind == Case::Causal || c.kind == Case::DeadRows);
  if (compareSkips) {
    const Result<E> all = Tiles::forward(c, q, kt, v, m, nullptr, false);
    EXPECT_EQ(0, std::memcmp(all.out.data(), got.out.data(),
                             got.out.size() * sizeof(E)))
        << "out differs without the skips";
    for (size_t i = 0; i < got.lse.size(); ++i)
      EXPECT_TRUE(all.lse[i] == got.lse[i] ||
                  (std::isnan(all.lse[i]) && std::isnan(got.lse[i])))
          << "lse[" << i << "] " << all.lse[i] << " against " << got.lse[i];
    if (c.kind == Case::Causal && c.s > flash::kRows) {
      EXPECT_LT(got.mmas, all.mmas);
    }
  }

  if (!grad)
    return;
  // The backward against the CPU's, from the CPU's forward results and the
  // NaN guard's fill where the case has dead rows.
  Tensor g = Tiles::input(with({c.s, D}), rng);
  Tensor fill(DType::F32, {});
  fill.data<float>()[0] = 0.5f;
  std::vector<Tensor> bin = {q, kt, v, cpu[0], cpu[1], g};
  if (m)
    bin.push_back(mask);
  if (c.deadRow)
    bin.push_back(fill);
  if (k)
    bin.push_back(keep);
  std::vector<Tensor> want =
      runOp("attention_grad", bin,
            {{dt, q.shape()}, {dt, kt.shape()}, {dt, v.shape()}},
            Attrs(attrs).i("has_nan_fill", c.deadRow), 2);
  const float *f = c.deadRow ? fill.data<float>() : nullptr;
  const GradResult<E> gr =
      Tiles::backward(c, q, kt, v, m, k, cpu[0], cpu[1], g, f, true);
  ASSERT_FALSE(gr.dq.empty());
  expectNear(dt, want[0].data<E>(), gr.dq.data(), q.numElements(),
             Tiles::kBackwardUnits, "dq");
  expectNear(dt, want[1].data<E>(), gr.dkt.data(), kt.numElements(),
             Tiles::kBackwardUnits, "dkt");
  expectNear(dt, want[2].data<E>(), gr.dv.data(), v.numElements(),
             Tiles::kBackwardUnits, "dv");
  if (compareSkips) {
    const GradResult<E> all =
        Tiles::backward(c, q, kt, v, m, k, cpu[0], cpu[1], g, f, false);
    auto same = [](const std::vector<E> &x, const std::vector<E> &y) {
      return std::memcmp(x.data(), y.data(), x.size() * sizeof(E)) == 0;
    };
    EXPECT_TRUE(same(all.dq, gr.dq)) << "dq differs without the skips";
    EXPECT_TRUE(same(all.dkt, gr.dkt)) << "dkt differs without the skips";
    EXPECT_TRUE(same(all.dv, gr.dv)) << "dv differs without the skips";
    if (c.kind == Case::Causal && c.s > flash::kRows) {
      EXPECT_LT(gr.mmas, all.mmas);
    }
  }
}

// The cases every tile kernel runs, against the CPU: a causal mask over several
// row blocks and key tiles (neither a multiple of 64), as the exporters fold it
// and as -inf; a padding mask broadcast over heads; rows all -inf (lse NaN, NaN
// results, which the device's second kernel then fills); rows all at the
// exporters' finite dead value (a uniform softmax: their tiles may not be
// skipped); no mask; masked_score: GPT-2's old causal
// where(causal, s, -1e4), rows whose every score is -1e9 (masked_fill's
// constant leads them: a uniform softmax), and keep with a padding mask.
std::vector<Case> cases() {
  auto replaced = [](Case c, float masked, bool keep = false) {
    c.replace = true;
    c.masked = masked;
    c.keep = keep;
    return c;
  };
  return {
      replaced({{2}, 150, 150, 0, {150, 150}, 0.125f, Case::Causal, -INFINITY},
               -1e4f),
      replaced({{1}, 40, 100, 0, {40, 100}, 0.125f, Case::DeadRows, -INFINITY},
               -1e9f),
      replaced({{2, 2}, 40, 100, 0, {2, 1, 1, 100}, 0.2f, Case::Padding}, -1e9f,
               true),
      {{2}, 150, 150, 0, {150, 150}, 0.125f, Case::Causal},
      {{1, 2}, 70, 70, 0, {1, 1, 70, 70}, 0.125f, Case::Causal, -INFINITY},
      {{2, 2}, 40, 100, 0, {2, 1, 1, 100}, 0.2f, Case::Padding},
      {{1}, 20, 20, 0, {20, 20}, 0.125f, Case::Causal, -3.4028235e38f, true},
      {{2}, 33, 47, 0, {}, 0.3f},
      {{1}, 40, 100, 0, {40, 100}, 0.125f, Case::DeadRows},
  };
}

std::string traceOf(const Case &c) {
  return "lead " + shapeToString(c.lead) + " s " + std::to_string(c.s) + " t " +
         std::to_string(c.t) + " mask " + shapeToString(c.mask);
}

// The half tiles: both halves, each head dim.
TEST(FlashAttentionEmulator, MatchesTheCpuHalfAttention) {
  std::mt19937 rng(61);
  for (const Case &c : cases()) {
    SCOPED_TRACE(traceOf(c));
    {
      SCOPED_TRACE("bf16, head dim 64");
      check<HalfTiles<true, 64>, 64>(c, rng, true);
    }
    {
      SCOPED_TRACE("f16, head dim 64");
      check<HalfTiles<false, 64>, 64>(c, rng, true);
    }
  }
  // The other head dims, both halves, a causal mask over two row blocks.
  const Case two{{1}, 100, 100, 0, {100, 100}, 0.088f, Case::Causal};
  {
    SCOPED_TRACE("bf16, head dim 128");
    check<HalfTiles<true, 128>, 128>(two, rng, true);
  }
  {
    SCOPED_TRACE("f16, head dim 128");
    check<HalfTiles<false, 128>, 128>(two, rng, true);
  }
  {
    SCOPED_TRACE("bf16, head dim 80");
    check<HalfTiles<true, 80>, 80>(two, rng, true);
  }
  {
    SCOPED_TRACE("f16, head dim 32");
    check<HalfTiles<false, 32>, 32>(two, rng, true);
  }
  {
    SCOPED_TRACE("bf16, head dim 96");
    check<HalfTiles<true, 96>, 96>(two, rng, true);
  }
}

// The f32 SIMT tiles: the same cases, every head dim.
TEST(FlashAttentionEmulator, MatchesTheCpuF32Attention) {
  std::mt19937 rng(62);
  for (const Case &c : cases()) {
    SCOPED_TRACE(traceOf(c));
    check<SimtTiles<64>, 64>(c, rng, true);
  }
  const Case two{{1}, 100, 100, 0, {100, 100}, 0.088f, Case::Causal};
  {
    SCOPED_TRACE("head dim 128");
    check<SimtTiles<128>, 128>(two, rng, true);
  }
  {
    SCOPED_TRACE("head dim 80");
    check<SimtTiles<80>, 80>(two, rng, true);
  }
  {
    SCOPED_TRACE("head dim 32");
    check<SimtTiles<32>, 32>(two, rng, true);
  }
  {
    SCOPED_TRACE("head dim 96");
    check<SimtTiles<96>, 96>(two, rng, true);
  }
}

} // namespace
