//===- AttentionTest.cpp - attention and attention_grad on the CPU --------===//
//
// The fused kernels against the unfused math in double: the scores whole,
// an exact softmax, and the gradient by the chain rule over the [S, T]
// matrices. Blocks of query rows (S above a block), masks of every
// broadcast, fully masked rows with and without the NaN guard's fill,
// masked_score's replace of the -inf mask entries, keep's select between
// the scores and masked_score, each plus the mask (left-padded rows whose
// every score rounds to finfo.min), and one and two threads.
//
//===----------------------------------------------------------------------===//
#include "TestUtil.h"

#include <limits>

using namespace tessel::runtime;
using namespace tessel::runtime::test;

namespace {

struct Case {
  Shape lead;
  int64_t s, t, d, dv;
  Shape mask; // empty: none
  float scale;
  bool fill;
  bool maskRows; // make some rows of the mask all -inf
  float causal = 0; // nonzero: a causal mask of this value above the diagonal
  float masked = NAN; // has_masked_score: the score where the mask is -inf
  /// has_keep, its shape (empty: none): causal where `causal` is nonzero
  /// (and then the mask [2, 1, 1, T] left-pads entry 1's first 3 keys with
  /// finfo.min), else random.
  Shape keep = {};
};

struct Reference {
  std::vector<double> out, lse, dq, dkt, dv;
};

/// The unfused math, in double: per batch entry, scores = scale q kt +
/// mask, p = softmax (NaN rows: fill, or NaN), out = p v; with grad, dp =
/// grad v^T, ds = p (dp - rowsum(p dp)), dq = scale ds kt^T, dkt = scale
/// q^T ds, dv = p^T grad.
Reference reference(const Case &c, const Tensor &q, const Tensor &kt,
                    const Tensor &v, const Tensor *mask, float fill,
                    const Tensor &grad, const Tensor *keep = nullptr) {
  int64_t batch = 1;
  for (int64_t l : c.lead)
    batch *= l;
  Shape scores = c.lead;
  scores.push_back(c.s);
  scores.push_back(c.t);
  Reference r;
  r.out.assign(batch * c.s * c.dv, 0);
  r.lse.assign(batch * c.s, 0);
  r.dq.assign(batch * c.s * c.d, 0);
  r.dkt.assign(batch * c.d * c.t, 0);
  r.dv.assign(batch * c.t * c.dv, 0);
  const float *Q = q.data<float>(), *K = kt.data<float>(), *V = v.data<float>(),
              *G = grad.data<float>();
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t i = 0; i < c.s; ++i) {
      std::vector<double> x(c.t), p(c.t), dp(c.t);
      std::vector<bool> constant(c.t, false);
      double m = -INFINITY;
      for (int64_t j = 0; j < c.t; ++j) {
        double acc = 0;
        for (int64_t k = 0; k < c.d; ++k)
          acc += double(Q[(b * c.s + i) * c.d + k]) *
                 K[(b * c.d + k) * c.t + j];
        x[j] = c.scale * acc;
        if (mask) {
          const float mv = mask->data<float>()[broadcastIndex(
              unravel((b * c.s + i) * c.t + j, scores), mask->shape())];
          if (keep) { // (keep ? x : c) + mask, in f32 as the kernels add
            constant[j] = !keep->data<uint8_t>()[broadcastIndex(
                unravel((b * c.s + i) * c.t + j, scores), keep->shape())];
            x[j] = static_cast<float>(constant[j] ? c.masked : x[j]) + mv;
          } else {
            constant[j] = !std::isnan(c.masked) && mv == -INFINITY;
            x[j] = constant[j] ? c.masked : x[j] + mv;
          }
        }
        m = std::max(m, x[j]);
      }
      const bool nanRow = !std::isfinite(m);
      double sum = 0;
      for (int64_t j = 0; j < c.t && !nanRow; ++j)
        sum += std::exp(x[j] - m);
      for (int64_t j = 0; j < c.t; ++j)
        p[j] = nanRow ? (c.fill ? fill : NAN) : std::exp(x[j] - m) / sum;
      r.lse[b * c.s + i] = nanRow ? NAN : m + std::log(sum);
      for (int64_t k = 0; k < c.dv; ++k) {
        double acc = 0;
        for (int64_t j = 0; j < c.t; ++j)
          acc += p[j] * V[(b * c.t + j) * c.dv + k];
        r.out[(b * c.s + i) * c.dv + k] = acc;
      }
      // Backward.
      double rowsum = 0;
      for (int64_t j = 0; j < c.t; ++j) {
        double acc = 0;
        for (int64_t k = 0; k < c.dv; ++k)
          acc += double(G[(b * c.s + i) * c.dv + k]) * V[(b * c.t + j) * c.dv + k];
        dp[j] = acc;
        rowsum += p[j] * acc;
      }
      for (int64_t j = 0; j < c.t; ++j) {
        for (int64_t k = 0; k < c.dv; ++k)
          r.dv[(b * c.t + j) * c.dv + k] += p[j] * G[(b * c.s + i) * c.dv + k];
        const double ds = nanRow || constant[j] ? 0.0 : p[j] * (dp[j] - rowsum);
        for (int64_t k = 0; k < c.d; ++k) {
          r.dq[(b * c.s + i) * c.d + k] +=
              c.scale * ds * K[(b * c.d + k) * c.t + j];
          r.dkt[(b * c.d + k) * c.t + j] +=
              c.scale * Q[(b * c.s + i) * c.d + k] * ds;
        }
      }
    }
  return r;
}

void expectNear(const Tensor &got, const std::vector<double> &want,
                const char *what) {
  ASSERT_EQ(got.numElements(), static_cast<int64_t>(want.size())) << what;
  double scale = 1e-30;
  for (double w : want)
    if (std::isfinite(w))
      scale = std::max(scale, std::fabs(w));
  for (size_t i = 0; i < want.size(); ++i) {
    const float g = got.data<float>()[i];
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(g)) << what << "[" << i << "] = " << g
                                 << ", want NaN";
      continue;
    }
    EXPECT_NEAR(g, want[i], 2e-5 * scale + 1e-6 * std::fabs(want[i]))
        << what << "[" << i << "]";
  }
}

TEST(Attention, ForwardAndBackwardMatchTheUnfusedMath) {
  std::mt19937 rng(7);
  const std::vector<Case> cases = {
      {{2, 3}, 16, 16, 8, 8, {}, 0.35f, false, false},
      {{2, 3}, 16, 16, 8, 8, {16, 16}, 1.0f, false, false},
      {{2, 4}, 9, 13, 8, 5, {2, 1, 9, 13}, 0.5f, true, false},
      {{3}, 300, 20, 4, 6, {1, 300, 20}, 0.25f, true, false}, // 3 row blocks
      {{}, 7, 5, 3, 2, {7, 1}, 1.0f, false, false},           // no batch dims
      {{2, 2}, 6, 6, 4, 4, {2, 1, 6, 6}, 0.5f, true, true}, // masked rows, fill
      {{2, 2}, 6, 6, 4, 4, {2, 1, 6, 6}, 0.5f, false, true}, // masked rows: NaN
      // Causal masks, as the exporters fold them (finfo.min) and as -inf:
      // the blocks skip the keys after their last row.
      {{1, 2},
       300,
       300,
       8,
       8,
       {1, 1, 300, 300},
       0.35f,
       true,
       false,
       -3.4028235e38f},
      {{2}, 260, 260, 4, 6, {260, 260}, 0.5f, false, false, -INFINITY},
      // masked_score (where(keep, s, c), GPT-2's -1e4 before transformers
      // 4.26): -1e4 leaves the skipped keys exact; -1 does not (the blocks
      // compute every key); rows the mask hides whole are uniform.
      {{1, 2},
       300,
       300,
       8,
       8,
       {1, 1, 300, 300},
       0.35f,
       false,
       false,
       -INFINITY,
       -1e4f},
      {{2}, 260, 260, 4, 6, {260, 260}, 2.0f, true, false, -INFINITY, -1.0f},
      {{2, 2}, 6, 6, 4, 4, {2, 1, 6, 6}, 0.5f, false, true, 0, -1e4f},
      {{2}, 7, 5, 3, 2, {7, 1}, 1.0f, false, true, 0, -2.0f}, // keys broadcast
      // keep (where(keep, s, c) + mask, transformers 4.26 to 4.4x's GPT-2):
      // causal with left padding and finfo.min, 3 row blocks whose dead
      // keys are skipped; random keep, masks and masked_score.
      {{2, 2},
       300,
       300,
       8,
       8,
       {2, 1, 1, 300},
       0.35f,
       false,
       false,
       -3.4028235e38f,
       -3.4028235e38f,
       {1, 1, 300, 300}},
      {{2, 2}, 6, 7, 4, 4, {2, 1, 6, 7}, 0.5f, false, false, 0, -1.5f, {6, 7}},
      {{3}, 5, 9, 3, 2, {9}, 1.0f, true, false, 0, -1e4f, {3, 5, 1}},
  };
  for (const Case &c : cases)
    for (int threads : {1, 2}) {
      SCOPED_TRACE(
          "lead " + shapeToString(c.lead) + " s " + std::to_string(c.s) +
          " t " + std::to_string(c.t) + " mask " + shapeToString(c.mask) +
          " fill " + std::to_string(c.fill) + " masked_score " +
          std::to_string(c.masked) + " threads " + std::to_string(threads));
      auto with = [&](std::initializer_list<int64_t> tail) {
        Shape s = c.lead;
        s.insert(s.end(), tail);
        return s;
      };
      Tensor q = randomF32(with({c.s, c.d}), rng),
             kt = randomF32(with({c.d, c.t}), rng),
             v = randomF32(with({c.t, c.dv}), rng),
             g = randomF32(with({c.s, c.dv}), rng);
      std::vector<Tensor> in = {q, kt, v};
      Tensor mask, keep;
      if (!c.keep.empty()) {
        keep = Tensor(DType::Bool, c.keep);
        const int64_t cols = c.keep.back(),
                      rows = c.keep.size() > 1 ? c.keep[c.keep.size() - 2] : 1;
        for (int64_t e = 0; e < keep.numElements(); ++e)
          keep.data<uint8_t>()[e] =
              c.causal != 0 ? e % cols <= (e / cols) % rows : rng() % 3 != 0;
      }
      if (!c.mask.empty()) {
        mask = randomF32(c.mask, rng, -3.0f, 0.0f);
        if (c.causal != 0 && !c.keep.empty()) // left padding of entry 1
          for (int64_t e = 0; e < mask.numElements(); ++e)
            mask.data<float>()[e] =
                e / c.mask.back() == 1 && e % c.mask.back() < 3 ? c.causal
                                                                : 0.0f;
        else if (c.causal != 0)
          for (int64_t e = 0; e < mask.numElements(); ++e) {
            const int64_t col = e % c.mask.back(),
                          row = (e / c.mask.back()) % c.mask[c.mask.size() - 2];
            mask.data<float>()[e] = col > row ? c.causal : 0.0f;
          }
        if (c.maskRows) // rows 1 and 4 of every mask plane: all -inf
          for (int64_t e = 0; e < mask.numElements(); ++e) {
            const int64_t row = (e / c.mask.back()) % c.mask[c.mask.size() - 2];
            if (row == 1 || row == 4)
              mask.data<float>()[e] = -std::numeric_limits<float>::infinity();
          }
        in.push_back(mask);
      }
      Tensor fill(DType::F32, {});
      fill.data<float>()[0] = 0.5f; // a NaN row's every probability
      if (c.fill)
        in.push_back(fill);
      if (!c.keep.empty())
        in.push_back(keep);
      const Reference want =
          reference(c, q, kt, v, c.mask.empty() ? nullptr : &mask,
                    fill.data<float>()[0], g, c.keep.empty() ? nullptr : &keep);
      Attrs attrs = Attrs()
                        .f("scale", c.scale)
                        .i("has_mask", !c.mask.empty())
                        .i("has_nan_fill", c.fill)
                        .i("has_keep", !c.keep.empty());
      if (!std::isnan(c.masked))
        attrs.i("has_masked_score", 1).f("masked_score", c.masked);
      auto fwd = runOp("attention", in,
                       {{DType::F32, with({c.s, c.dv})},
                        {DType::F32, with({c.s})}},
                       attrs, threads);
      expectNear(fwd[0], want.out, "out");
      expectNear(fwd[1], want.lse, "lse");
      if (!c.fill && c.maskRows && std::isnan(c.masked))
        continue; // NaN rows without the guard: the gradient is NaN too
      std::vector<Tensor> bin = {q, kt, v, fwd[0], fwd[1], g};
      bin.insert(bin.end(), in.begin() + 3, in.end());
      auto bwd = runOp("attention_grad", bin,
                       {{DType::F32, q.shape()},
                        {DType::F32, kt.shape()},
                        {DType::F32, v.shape()}},
                       attrs, threads);
      expectNear(bwd[0], want.dq, "dq");
      expectNear(bwd[1], want.dkt, "dkt");
      expectNear(bwd[2], want.dv, "dv");
    }
}

/// A half result against the double reference on the same (half) values:
/// within one unit in the half's last place of the largest value (the
/// gradient reads the rounded forward result), NaN where it is NaN.
void expectHalfNear(const Tensor &got, const std::vector<double> &want,
                    DType half, const char *what) {
  ASSERT_EQ(got.dtype(), half) << what;
  ASSERT_EQ(got.numElements(), static_cast<int64_t>(want.size())) << what;
  double scale = 1e-30;
  for (double w : want)
    if (std::isfinite(w))
      scale = std::max(scale, std::fabs(w));
  const double ulp = half == DType::BF16 ? 0x1p-7 : 0x1p-10;
  for (size_t i = 0; i < want.size(); ++i) {
    const float g = halfToF32(half, got.data<uint16_t>()[i]);
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(g)) << what << "[" << i << "] = " << g;
      continue;
    }
    EXPECT_NEAR(g, want[i], ulp * scale) << what << "[" << i << "]";
  }
}

// A half attention (bf16 or f16 q, kt, v and results; f32 mask, fill and
// lse), as -tessel-float-normalization keeps it: f32 sums, each result
// rounded once.
TEST(Attention, HalfOperandsAndResults) {
  std::mt19937 rng(9);
  const Case c{{2, 2},         40,    40,   8,     8,
               {2, 1, 40, 40}, 0.35f, true, false, -3.4028235e38f};
  for (DType half : {DType::BF16, DType::F16}) {
    SCOPED_TRACE(dtypeName(half));
    auto [qf, q] = halfPair(half, {2, 2, c.s, c.d}, rng);
    auto [ktf, kt] = halfPair(half, {2, 2, c.d, c.t}, rng);
    auto [vf, v] = halfPair(half, {2, 2, c.t, c.dv}, rng);
    auto [gf, g] = halfPair(half, {2, 2, c.s, c.dv}, rng);
    Tensor mask(DType::F32, c.mask);
    for (int64_t e = 0; e < mask.numElements(); ++e)
      mask.data<float>()[e] = e % c.t > (e / c.t) % c.s ? c.causal : 0.0f;
    Tensor fill(DType::F32, {});
    fill.data<float>()[0] = 0.5f;
    const Reference want = reference(c, qf, ktf, vf, &mask, 0.5f, gf);
    Attrs attrs =
        Attrs().f("scale", c.scale).i("has_mask", 1).i("has_nan_fill", 1);
    auto fwd =
        runOp("attention", {q, kt, v, mask, fill},
              {{half, {2, 2, c.s, c.dv}}, {DType::F32, {2, 2, c.s}}}, attrs, 2);
    expectHalfNear(fwd[0], want.out, half, "out");
    expectNear(fwd[1], want.lse, "lse");
    auto bwd = runOp(
        "attention_grad", {q, kt, v, fwd[0], fwd[1], g, mask, fill},
        {{half, q.shape()}, {half, kt.shape()}, {half, v.shape()}}, attrs, 2);
    expectHalfNear(bwd[0], want.dq, half, "dq");
    expectHalfNear(bwd[1], want.dkt, half, "dkt");
    expectHalfNear(bwd[2], want.dv, half, "dv");
  }
}

TEST(Attention, LoadTimeChecksNameTheMismatch) {
  std::mt19937 rng(8);
  Tensor q = randomF32({2, 4, 8}, rng), kt = randomF32({2, 6, 5}, rng),
         v = randomF32({2, 5, 8}, rng);
  std::shared_ptr<const Program> prog;
  Status s = buildOneOp("attention", {q, kt, v},
                        {{DType::F32, {2, 4, 8}}, {DType::F32, {2, 4}}},
                        Attrs(), prog);
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("kt's dim 1 must be q's head dim 8"),
            std::string::npos)
      << s.message();
  Tensor kt2 = randomF32({2, 8, 5}, rng), mask = randomF32({3, 4, 5}, rng);
  s = buildOneOp("attention", {q, kt2, v, mask},
                 {{DType::F32, {2, 4, 8}}, {DType::F32, {2, 4}}},
                 Attrs().i("has_mask", 1), prog);
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("the mask does not broadcast to the scores"),
            std::string::npos)
      << s.message();
  // masked_score replaces what a mask hides: it needs a mask, and a finite
  // value.
  s = buildOneOp(
      "attention", {q, kt2, v}, {{DType::F32, {2, 4, 8}}, {DType::F32, {2, 4}}},
      Attrs().i("has_masked_score", 1).f("masked_score", -1e4f), prog);
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("'has_masked_score' needs a mask"),
            std::string::npos)
      << s.message();
  Tensor mask2 = randomF32({4, 5}, rng);
  s = buildOneOp(
      "attention", {q, kt2, v, mask2},
      {{DType::F32, {2, 4, 8}}, {DType::F32, {2, 4}}},
      Attrs()
          .i("has_mask", 1)
          .i("has_masked_score", 1)
          .f("masked_score", -std::numeric_limits<float>::infinity()),
      prog);
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("'masked_score' must be finite"),
            std::string::npos)
      << s.message();
  // keep selects between the scores and masked_score: it needs one, and
  // must be bool and broadcast to the scores.
  Tensor keep(DType::Bool, {4, 5}), keepWide(DType::Bool, {4, 6});
  const Attrs withKeep = Attrs().i("has_mask", 1).i("has_keep", 1);
  s = buildOneOp("attention", {q, kt2, v, mask2, keep},
                 {{DType::F32, {2, 4, 8}}, {DType::F32, {2, 4}}}, withKeep,
                 prog);
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("'has_keep' needs a masked_score"),
            std::string::npos)
      << s.message();
  Attrs keepScore = withKeep;
  keepScore.i("has_masked_score", 1).f("masked_score", -1e4f);
  s = buildOneOp("attention", {q, kt2, v, mask2, mask2},
                 {{DType::F32, {2, 4, 8}}, {DType::F32, {2, 4}}}, keepScore,
                 prog);
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("keep"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("bool"), std::string::npos) << s.message();
  s = buildOneOp("attention", {q, kt2, v, mask2, keepWide},
                 {{DType::F32, {2, 4, 8}}, {DType::F32, {2, 4}}}, keepScore,
                 prog);
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("keep does not broadcast to the scores"),
            std::string::npos)
      << s.message();
  // A half attention reads q, kt and v of one type, its mask in f32.
  auto [qf, qh] = halfPair(DType::BF16, {2, 4, 8}, rng);
  s = buildOneOp("attention", {qh, kt2, v},
                 {{DType::BF16, {2, 4, 8}}, {DType::F32, {2, 4}}}, Attrs(),
                 prog);
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("kt"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("bf16"), std::string::npos) << s.message();
}

} // namespace
