//===- CudaTrainingTest.cpp - The cuda backend's gradient ops vs the cpu --===//
//
// The conformance suite of CudaTest.cpp for the kinds training programs add
// (round_float, gelu_grad, log_softmax_grad, gather_grad, BatchNorm's
// training pieces, conv2d's and the pools' gradients) and custom_call: each
// program run on "cpu" and "cuda" and the results compared. Tolerances:
// 0 where both backends compute the same operations in the same order
// (round_float, gather_grad, the pools' gradients of distinct values, the
// plugin's own kernel); 1e-5 where only the math library differs (the
// CPU's vexp/verf/vtanh against CUDA's expf/erff/tanhf); 1e-4 where sums
// run in another order (GEMMs, per-channel sums). Without a device every
// test is reported skipped.
//
//===----------------------------------------------------------------------===//
#include "CudaTestUtil.h"

#include "tessel/ExtensionHost/Host.h"

#include <limits>

namespace tessel::runtime::test {
namespace {

TEST(CudaTraining, RoundFloat) {
  TSL_REQUIRE_CUDA();
  std::mt19937 rng(41);
  Tensor x = randomF32({4, 300}, rng, -70000.0f, 70000.0f);
  float *v = x.data<float>();
  const float specials[] = {0.0f,
                            -0.0f,
                            std::numeric_limits<float>::quiet_NaN(),
                            std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::max(),
                            std::numeric_limits<float>::denorm_min(),
                            1e-6f,
                            -3e-5f,
                            65520.0f, // fp16's rounding to infinity
                            1.0f + 1.0f / 256.0f, // a bf16 tie
                            3.0e-39f};
  for (size_t i = 0; i < sizeof(specials) / sizeof(float); ++i)
    v[i] = specials[i];
  for (int64_t i = 300; i < 600; ++i) // small values: subnormals of fp8/fp16
    v[i] = v[i] * 1e-9f;
  // bf16 (the CPU's bit path), fp16, fp8 e4m3 and e5m2, and f32 itself.
  for (auto [e, m] : std::vector<std::pair<int, int>>{
           {8, 7}, {5, 10}, {4, 3}, {5, 2}, {8, 23}}) {
    SCOPED_TRACE("e" + std::to_string(e) + "m" + std::to_string(m));
    conformSame("round_float", x,
                Attrs().i("exponent_bits", e).i("mantissa_bits", m), {0, 0});
  }
  // bf16 on 4 x 300 values takes the four-at-a-time bit kernel; on 3 x 7
  // (no multiple of 4) the general one.
  Tensor odd = randomF32({3, 7}, rng, -70000.0f, 70000.0f);
  for (size_t i = 0; i < 12; ++i)
    odd.data<float>()[i] = specials[i];
  conformSame("round_float", odd,
              Attrs().i("exponent_bits", 8).i("mantissa_bits", 7), {0, 0});
}

TEST(CudaTraining, GeluGrad) {
  TSL_REQUIRE_CUDA();
  std::mt19937 rng(42);
  Tensor x = randomF32({3, 517}, rng, -8.0f, 8.0f),
         g = randomF32({3, 517}, rng);
  for (int form : {0, 1})
    conformOp("gelu_grad", {x, g}, {{DType::F32, x.shape()}},
              Attrs().i("tanh_approximation", form));
}

TEST(CudaTraining, LogSoftmaxGrad) {
  TSL_REQUIRE_CUDA();
  std::mt19937 rng(43);
  // Innermost axis (a block per row, short and long rows) and middle axes
  // (a thread per column).
  for (auto [shape, axis] : std::vector<std::pair<Shape, int64_t>>{
           {{6, 50}, 1}, {{3, 2000}, -1}, {{4, 7, 5}, 1}, {{5, 3, 4}, 0}}) {
    SCOPED_TRACE(shapeToString(shape) + " axis " + std::to_string(axis));
    Tensor out = randomF32(shape, rng, -6.0f, 0.0f), g = randomF32(shape, rng);
    conformOp("log_softmax_grad", {out, g}, {{DType::F32, shape}},
              Attrs().i("axis", axis));
  }
}

TEST(CudaTraining, Attention) {
  TSL_REQUIRE_CUDA();
  std::mt19937 rng(47);
  // The blocked path (head dims without tiles): masks of each broadcast,
  // fully masked rows with the NaN guard's fill, several row blocks (T
  // large enough to cap the rows of the scratch). The SIMT tiles (head
  // dims 32 to 128): a causal mask at the exporters' dead value over rows
  // and keys that are no multiple of a tile, the benchmark's attention
  // (seq 1024, head dim 64, causal), head dims 80 and 128, a padding mask
  // broadcast over heads, no mask. masked_score (a finite where fill:
  // the causal mask -inf, its scores replaced; the forward on the tiles at
  // head dims 32 to 128, the backward on the blocked path), with a fill
  // whose hidden keys count (-1) and GPT-2's -1e4.
  struct Case {
    Shape q, kt, v, mask;
    bool fill;
    bool causal = false;
    float masked = NAN;
  };
  for (const Case &c : std::vector<Case>{
           {{2, 3, 16, 8}, {2, 3, 8, 16}, {2, 3, 16, 8}, {}, false},
           {{2, 3, 16, 8}, {2, 3, 8, 16}, {2, 3, 16, 4}, {2, 1, 16, 16}, true},
           {{1, 40, 16}, {1, 16, 300000}, {1, 300000, 8}, {40, 300000}, false},
           {{4, 9, 8}, {4, 8, 13}, {4, 13, 8}, {9, 1}, true},
           {{2, 3, 200, 64},
            {2, 3, 64, 200},
            {2, 3, 200, 64},
            {1, 1, 200, 200},
            true,
            true},
           {{1, 2, 1024, 64},
            {1, 2, 64, 1024},
            {1, 2, 1024, 64},
            {1024, 1024},
            false,
            true},
           {{1, 2, 130, 80}, {1, 2, 80, 130}, {1, 2, 130, 80}, {}, false},
           {{1, 2, 77, 128},
            {1, 2, 128, 77},
            {1, 2, 77, 128},
            {77, 77},
            false,
            true},
           {{2, 2, 33, 32},
            {2, 2, 32, 150},
            {2, 2, 150, 32},
            {2, 1, 1, 150},
            true},
           {{2, 3, 200, 64},
            {2, 3, 64, 200},
            {2, 3, 200, 64},
            {1, 1, 200, 200},
            false,
            true,
            -1e4f},
           {{2, 2, 70, 16},
            {2, 2, 16, 70},
            {2, 2, 70, 16},
            {70, 70},
            true,
            true,
            -1.0f}}) {
    SCOPED_TRACE(shapeToString(c.q) + " " + shapeToString(c.kt));
    std::vector<Tensor> in = {randomF32(c.q, rng), randomF32(c.kt, rng),
                              randomF32(c.v, rng)};
    if (!c.mask.empty()) {
      Tensor m = randomF32(c.mask, rng, -3.0f, 0.0f);
      const int64_t t = c.mask.back();
      for (int64_t e = 0; e < m.numElements(); ++e)
        if (c.causal && e % t > (e / t) % c.mask[c.mask.size() - 2])
          m.data<float>()[e] = std::isnan(c.masked)
                                   ? -3.4028235e38f // the exporters' fill
                                   : -INFINITY;     // masked_score's
      for (int64_t e = 0; e < m.numElements() && e < t; ++e)
        m.data<float>()[e] = -INFINITY; // the first row of the first plane
      in.push_back(m);
    }
    if (c.fill) {
      Tensor f(DType::F32, {});
      f.data<float>()[0] = 0.5f;
      in.push_back(f);
    }
    Shape rows(c.q.begin(), c.q.end() - 1), out = rows;
    out.push_back(c.v.back());
    Attrs attrs = Attrs()
                      .f("scale", 0.3f)
                      .i("has_mask", !c.mask.empty())
                      .i("has_nan_fill", c.fill);
    if (!std::isnan(c.masked))
      attrs.i("has_masked_score", 1).f("masked_score", c.masked);
    conformOp("attention", in, {{DType::F32, out}, {DType::F32, rows}}, attrs,
              {1e-4, 1e-4});
    // The gradient from the CPU's forward results.
    std::vector<Tensor> fwd = runOp("attention", in,
                                    {{DType::F32, out}, {DType::F32, rows}},
                                    attrs);
    std::vector<Tensor> bin = {in[0], in[1], in[2], fwd[0], fwd[1],
                               randomF32(out, rng)};
    bin.insert(bin.end(), in.begin() + 3, in.end());
    conformOp("attention_grad", bin,
              {{DType::F32, c.q}, {DType::F32, c.kt}, {DType::F32, c.v}},
              attrs, {1e-4, 1e-4});
  }
  // keep (where(keep, s, c) + mask, transformers 4.26 to 4.4x's GPT-2):
  // causal keep, entry 1's first 3 keys padded with finfo.min, masked_score
  // finfo.min, so that entry 1's first rows keep only padded keys; head dim
  // 16 (the blocked path) and 64 (the tile forward).
  const float low = -3.4028235e38f;
  Tensor keep(DType::Bool, {1, 1, 70, 70}), pad(DType::F32, {2, 1, 1, 70});
  for (int64_t e = 0; e < keep.numElements(); ++e)
    keep.data<uint8_t>()[e] = e % 70 <= e / 70;
  for (int64_t e = 0; e < pad.numElements(); ++e)
    pad.data<float>()[e] = e / 70 == 1 && e % 70 < 3 ? low : 0.0f;
  for (int64_t hd : {16, 64}) {
    SCOPED_TRACE("keep, head dim " + std::to_string(hd));
    std::vector<Tensor> in = {randomF32({2, 2, 70, hd}, rng),
                              randomF32({2, 2, hd, 70}, rng),
                              randomF32({2, 2, 70, hd}, rng), pad, keep};
    Attrs attrs = Attrs()
                      .f("scale", 0.3f)
                      .i("has_mask", 1)
                      .i("has_keep", 1)
                      .i("has_masked_score", 1)
                      .f("masked_score", low);
    const Shape out = {2, 2, 70, hd}, rows = {2, 2, 70};
    conformOp("attention", in, {{DType::F32, out}, {DType::F32, rows}}, attrs,
              {1e-4, 1e-4});
    std::vector<Tensor> fwd =
        runOp("attention", in, {{DType::F32, out}, {DType::F32, rows}}, attrs);
    conformOp(
        "attention_grad",
        {in[0], in[1], in[2], fwd[0], fwd[1], randomF32(out, rng), pad, keep},
        {{DType::F32, out}, {DType::F32, {2, 2, hd, 70}}, {DType::F32, out}},
        attrs, {1e-4, 1e-4});
  }
}

// A half attention (bf16 or f16 q, kt, v and results, f32 mask and lse):
// each backend sums in f32 and rounds its results once, the CPU in its
// order, the GPU in FlashAttention's tiles (p and ds rounded to the half
// before their products); lse (f32) within the same absolute bound.
TEST(CudaTraining, HalfAttention) {
  TSL_REQUIRE_CUDA();
  std::mt19937 rng(48);
  struct Case {
    Shape q, kt, v, mask;
    bool fill;
    float scale;
  };
  const float dead = -3.4028235e38f; // the exporters' causal fill
  for (DType half : {DType::BF16, DType::F16})
    for (const Case &c : std::vector<Case>{
             // GPT-2's and Llama's head dims, causal, rows and keys that
             // are no multiple of a tile, a padding mask with dead rows;
             // the benchmark's attention (seq 1024, head dim 64, causal),
             // Phi's head dim 80; head dims without tiles (40, 24: the
             // widening path).
             {{2, 3, 200, 64},
              {2, 3, 64, 200},
              {2, 3, 200, 64},
              {1, 1, 200, 200},
              true,
              0.125f},
             {{1, 2, 1024, 64},
              {1, 2, 64, 1024},
              {1, 2, 1024, 64},
              {1, 1, 1024, 1024},
              true,
              0.125f},
             {{1, 2, 130, 80},
              {1, 2, 80, 130},
              {1, 2, 130, 80},
              {130, 130},
              false,
              0.11f},
             {{1, 2, 77, 128},
              {1, 2, 128, 77},
              {1, 2, 77, 128},
              {77, 77},
              false,
              0.088f},
             {{2, 2, 33, 64},
              {2, 2, 64, 150},
              {2, 2, 150, 64},
              {2, 1, 1, 150},
              true,
              0.125f},
             {{3, 16, 64}, {3, 64, 16}, {3, 16, 64}, {}, false, 0.125f},
             {{2, 9, 40}, {2, 40, 13}, {2, 13, 24}, {9, 13}, true, 0.3f}}) {
      SCOPED_TRACE(std::string(dtypeName(half)) + " " + shapeToString(c.q) +
                   " " + shapeToString(c.kt));
      std::vector<Tensor> in = {halfPair(half, c.q, rng).second,
                                halfPair(half, c.kt, rng).second,
                                halfPair(half, c.v, rng).second};
      if (!c.mask.empty()) {
        Tensor m(DType::F32, c.mask);
        const int64_t t = c.mask.back(),
                      s = c.mask.size() > 1 ? c.mask[c.mask.size() - 2] : 1;
        for (int64_t e = 0; e < m.numElements(); ++e) {
          const int64_t col = e % t, row = (e / t) % s;
          m.data<float>()[e] = s > 1 ? (col > row ? dead : 0.0f)
                                     : (col >= t - 7 ? -INFINITY : 0.0f);
        }
        if (c.fill && s > 1) // a dead row
          for (int64_t j = 0; j < t; ++j)
            m.data<float>()[3 * t + j] = -INFINITY;
        in.push_back(m);
      }
      if (c.fill) {
        Tensor f(DType::F32, {});
        f.data<float>()[0] = 0.5f;
        in.push_back(f);
      }
      Shape rows(c.q.begin(), c.q.end() - 1), out = rows;
      out.push_back(c.v.back());
      Attrs attrs = Attrs()
                        .f("scale", c.scale)
                        .i("has_mask", !c.mask.empty())
                        .i("has_nan_fill", c.fill);
      // Within units in the half's last place of the largest result (the
      // emulator test's bound): two forward, four backward.
      const double ulp = half == DType::BF16 ? 0x1p-7 : 0x1p-10;
      auto largest = [&](const std::vector<Tensor> &ts) {
        double top = 1e-30;
        for (const Tensor &t : ts)
          for (int64_t i = 0; t.dtype() == half && i < t.numElements(); ++i) {
            const double x = halfToF32(half, t.data<uint16_t>()[i]);
            if (std::isfinite(x))
              top = std::max(top, std::fabs(x));
          }
        return top;
      };
      std::vector<Tensor> fwd =
          runOp("attention", in, {{half, out}, {DType::F32, rows}}, attrs);
      conformOp("attention", in, {{half, out}, {DType::F32, rows}}, attrs,
                {2 * ulp * largest(fwd), 1e-5, false});
      std::vector<Tensor> bin = {
          in[0], in[1], in[2], fwd[0], fwd[1], halfPair(half, out, rng).second};
      bin.insert(bin.end(), in.begin() + 3, in.end());
      const std::vector<std::pair<DType, Shape>> grads = {
          {half, c.q}, {half, c.kt}, {half, c.v}};
      std::vector<Tensor> want = runOp("attention_grad", bin, grads, attrs);
      conformOp("attention_grad", bin, grads, attrs,
                {4 * ulp * largest(want), 1e-5, false});
    }
}

TEST(CudaTraining, GatherGradSumsLikeTheCpu) {
  TSL_REQUIRE_CUDA();
  std::mt19937 rng(44);
  // An embedding's backward: repeated and negative indices, both index
  // dtypes, the axis first and in the middle; the same bits as the CPU.
  struct Case {
    Shape data, indices;
    int64_t axis;
  };
  for (const Case &c : std::vector<Case>{{{11, 8}, {4, 9}, 0},
                                          {{3, 7, 5}, {2, 6}, 1},
                                          {{50, 64}, {300}, 0},
                                          {{6, 3}, {}, 0}}) {
    Shape grad(c.data.begin(), c.data.begin() + c.axis);
    grad.insert(grad.end(), c.indices.begin(), c.indices.end());
    grad.insert(grad.end(), c.data.begin() + c.axis + 1, c.data.end());
    const int64_t dim = c.data[c.axis];
    for (DType it : {DType::I64, DType::I32}) {
      SCOPED_TRACE(shapeToString(c.data) + " " + dtypeName(it));
      Tensor idx = it == DType::I64
                       ? randomI64(c.indices, rng, -dim, dim - 1)
                       : randomI32(c.indices, rng, static_cast<int32_t>(-dim),
                                   static_cast<int32_t>(dim - 1));
      conformOp("gather_grad", {randomF32(grad, rng), idx},
                {{DType::F32, c.data}}, Attrs().i("axis", c.axis), {0, 0});
    }
  }
}

TEST(CudaTraining, GatherGradOutOfRangeFailsLikeCpu) {
  TSL_REQUIRE_CUDA();
  std::mt19937 rng(45);
  Tensor grad = randomF32({4, 2}, rng);
  Tensor idx = Tensor::fromVector(DType::I64, {4},
                                  std::vector<int64_t>{1, 2, 9, -7});
  std::shared_ptr<const Program> prog;
  ASSERT_TRUE(buildOneOp("gather_grad", {grad, idx}, {{DType::F32, {5, 2}}},
                         Attrs().i("axis", 0), prog)
                  .isOk());
  std::vector<Tensor> o1, o2;
  const std::vector<std::pair<std::string, Tensor>> feeds = {{"in0", grad},
                                                             {"in1", idx}};
  Status sc = runProgram("cpu", prog, feeds, o1);
  Status sg = runProgram("cuda", prog, feeds, o2);
  ASSERT_FALSE(sc.isOk());
  ASSERT_FALSE(sg.isOk());
  EXPECT_NE(sc.message().find("gather_grad: index 9 at position 2 is out of "
                              "range for an axis of size 5"),
            std::string::npos)
      << sc.message();
  EXPECT_EQ(sc.message(), sg.message());
}

/// x, g [N, C, ...] and the per-channel operands of BatchNorm's pieces.
TEST(CudaTraining, BatchNormPieces) {
  TSL_REQUIRE_CUDA();
  std::mt19937 rng(46);
  for (const Shape &s : std::vector<Shape>{{2, 3, 5, 5}, {8, 4, 30, 31},
                                           {16, 6}, {3, 2, 0, 4}}) {
    SCOPED_TRACE(shapeToString(s));
    const Shape ch = {s[1]};
    Tensor x = randomF32(s, rng), g = randomF32(s, rng),
           mean = randomF32(ch, rng, -0.5f, 0.5f);
    const Tol sums{1e-4, 1e-4};
    conformOp("batch_norm_variance", {x, mean}, {{DType::F32, ch}}, {}, sums);
    conformOp("batch_norm_grad_sums", {g, x, mean},
              {{DType::F32, ch}, {DType::F32, ch}}, {}, sums);
    conformOp("batch_norm_grad_input",
              {g, x, mean, randomF32(ch, rng), randomF32(ch, rng),
               randomF32(ch, rng, 0.1f, 3.0f)},
              {{DType::F32, s}}, {}, {1e-6, 1e-6});
  }
}

TEST(CudaTraining, ConvBackward) {
  TSL_REQUIRE_CUDA();
  std::mt19937 rng(47);
  const std::vector<ConvCase> cases = convBackwardCases();
  for (const ConvCase &c : cases) {
    SCOPED_TRACE("x " + shapeToString(c.x) + " w " + shapeToString(c.w));
    const Shape ys = convResult(c);
    conformOp("conv2d_backward_data", {randomF32(ys, rng), randomF32(c.w, rng)},
              {{DType::F32, c.x}}, convAttrs(c), {1e-4, 1e-4});
    conformOp("conv2d_backward_weight",
              {randomF32(c.x, rng), randomF32(ys, rng)}, {{DType::F32, c.w}},
              convAttrs(c), {1e-4, 1e-4});
  }
}

TEST(CudaTraining, PoolBackward) {
  TSL_REQUIRE_CUDA();
  std::mt19937 rng(48);
  forEachPoolCase([&](const PoolCase &c, const char *op, int cip, Attrs attrs,
                      const Shape &ys) {
    const bool isMax = std::string(op) == "max_pool";
    if (isMax && cip)
      return; // count_include_pad means nothing to max pooling
    // Distinct values: one maximum per window, as oneDNN's workspace.
    Tensor x = distinctF32(c.x, rng);
    std::vector<Tensor> ins = {randomF32(ys, rng)};
    if (isMax)
      ins.insert(ins.begin(), x);
    SCOPED_TRACE(std::string(op) + "_backward " + shapeToString(c.x) +
                 " cip=" + std::to_string(cip) + (c.ceil ? " ceil" : ""));
    conformOp(std::string(op) + "_backward", ins, {{DType::F32, c.x}},
              std::move(attrs), {1e-6, 1e-6});
  });
}

/// A plugin op registered in this process: y = x * 3 - 1, and the sum of x
/// as a second result.
void registerTestOp(ext::Registrar &r) {
  ext::CustomOp op;
  op.name = "cudatest.AffineSum";
  op.inferTypes = [](const std::vector<ext::TensorType> &in, const ext::Attrs &,
                     std::vector<ext::TensorType> &out) {
    out = {in[0], ext::TensorType{"f32", {}}};
    return std::string();
  };
  op.cpuKernel = [](const ext::KernelInstance &inst, ext::CpuKernelFn &run) {
    const int64_t n = inst.operands[0].numel();
    run = [n](const void *const *in, void *const *out) {
      const float *x = static_cast<const float *>(in[0]);
      float *y = static_cast<float *>(out[0]);
      float sum = 0.0f;
      for (int64_t i = 0; i < n; ++i) {
        y[i] = x[i] * 3.0f - 1.0f;
        sum += x[i];
      }
      *static_cast<float *>(out[1]) = sum;
    };
    return std::string();
  };
  r.addOp(std::move(op));
}

TEST(CudaTraining, CustomCallRunsThePluginKernel) {
  TSL_REQUIRE_CUDA();
  static const std::string registered = ext::host::registerPlugin(
      {"cudatest", "1", ""}, registerTestOp, "tessel-run");
  ASSERT_EQ(registered, "");
  std::mt19937 rng(49);
  conformOp("custom_call", {randomF32({7, 33}, rng)},
            {{DType::F32, {7, 33}}, {DType::F32, {}}},
            Attrs().s("target", "cudatest.AffineSum"), {0, 0});
}

} // namespace
} // namespace tessel::runtime::test
