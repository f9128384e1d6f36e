//===- ConvPlanTest.cpp - NHWC layouts and relu fusion around convs -------===//
//
// A residual block (conv-relu-conv-add-relu, then max_pool and
// global_avg_pool) with constant weights, as a compiled model has them: the
// CPU executor keeps the activations between oneDNN's kernels in their
// layouts and folds relus and the residual add into convs
// (runtime/cpu/ConvPlan.h). Every path must equal direct loops.
//
//===----------------------------------------------------------------------===//
#include "ConvPlan.h"
#include "DnnlConv.h"
#include "TestUtil.h"

#include <cstdlib>

using namespace tessel::runtime;
using namespace tessel::runtime::test;

namespace {

/// NCHW conv2d (group 1, dilation 1), double accumulation.
std::vector<double> refConv(const std::vector<double> &x, const Shape &xs,
                            const Tensor &w, const Tensor &b, int64_t stride,
                            int64_t pad, Shape &ys) {
  const Shape &ws = w.shape();
  int64_t oh = (xs[2] + 2 * pad - ws[2]) / stride + 1;
  int64_t ow = (xs[3] + 2 * pad - ws[3]) / stride + 1;
  ys = {xs[0], ws[0], oh, ow};
  std::vector<double> y;
  for (int64_t n = 0; n < xs[0]; ++n)
    for (int64_t o = 0; o < ws[0]; ++o)
      for (int64_t r = 0; r < oh; ++r)
        for (int64_t s = 0; s < ow; ++s) {
          double acc = b.data<float>()[o];
          for (int64_t c = 0; c < xs[1]; ++c)
            for (int64_t i = 0; i < ws[2]; ++i)
              for (int64_t j = 0; j < ws[3]; ++j) {
                int64_t ih = r * stride - pad + i, iw = s * stride - pad + j;
                if (ih < 0 || ih >= xs[2] || iw < 0 || iw >= xs[3])
                  continue;
                acc += x[((n * xs[1] + c) * xs[2] + ih) * xs[3] + iw] *
                       w.data<float>()[((o * ws[1] + c) * ws[2] + i) * ws[3] + j];
              }
          y.push_back(acc);
        }
  return y;
}

std::vector<double> relu(std::vector<double> v) {
  for (double &x : v)
    x = x > 0 ? x : 0;
  return v;
}

struct Block {
  Tensor x, w1, b1, w2, b2;
  Shape hidden, pooled;
  std::vector<double> wantPool, wantMean;
};

Block makeBlock(std::mt19937 &rng) {
  Block k;
  k.x = randomF32({2, 16, 9, 9}, rng);
  k.w1 = randomF32({32, 16, 3, 3}, rng);
  k.b1 = randomF32({32}, rng);
  k.w2 = randomF32({32, 32, 1, 1}, rng);
  k.b2 = randomF32({32}, rng);
  std::vector<double> x(k.x.data<float>(), k.x.data<float>() + k.x.numElements());
  Shape s1, s2;
  std::vector<double> r1 = relu(refConv(x, k.x.shape(), k.w1, k.b1, 1, 1, s1));
  std::vector<double> c2 = refConv(r1, s1, k.w2, k.b2, 1, 0, s2);
  for (size_t i = 0; i < c2.size(); ++i)
    c2[i] += r1[i];
  std::vector<double> r2 = relu(c2);
  k.hidden = s2;
  // max_pool 3x3 stride 2 (no pad) and the mean over H, W.
  const int64_t ph = (s2[2] - 3) / 2 + 1, pw = (s2[3] - 3) / 2 + 1;
  k.pooled = {s2[0], s2[1], ph, pw};
  for (int64_t n = 0; n < s2[0]; ++n)
    for (int64_t c = 0; c < s2[1]; ++c) {
      const double *p = r2.data() + (n * s2[1] + c) * s2[2] * s2[3];
      for (int64_t r = 0; r < ph; ++r)
        for (int64_t s = 0; s < pw; ++s) {
          double m = -1e300;
          for (int64_t i = 0; i < 3; ++i)
            for (int64_t j = 0; j < 3; ++j)
              m = std::max(m, p[(r * 2 + i) * s2[3] + s * 2 + j]);
          k.wantPool.push_back(m);
        }
      double sum = 0;
      for (int64_t i = 0; i < s2[2] * s2[3]; ++i)
        sum += p[i];
      k.wantMean.push_back(sum / double(s2[2] * s2[3]));
    }
  return k;
}

/// The block as one program with constant weights; runs it and returns
/// (max_pool output, global_avg_pool output).
std::vector<Tensor> runBlock(const Block &k, int threads) {
  ProgramBuilder pb;
  int x = pb.addInput("x", DType::F32, k.x.shape());
  auto c = [&](const Tensor &t) {
    return pb.addConstant(DType::F32, t.shape(), t.data());
  };
  int w1 = c(k.w1), b1 = c(k.b1), w2 = c(k.w2), b2 = c(k.b2);
  int c1 = pb.addBuffer(DType::F32, k.hidden), r1 = pb.addBuffer(DType::F32, k.hidden);
  int c2 = pb.addBuffer(DType::F32, k.hidden), a = pb.addBuffer(DType::F32, k.hidden);
  int r2 = pb.addBuffer(DType::F32, k.hidden);
  int pool = pb.addBuffer(DType::F32, k.pooled);
  int mean = pb.addBuffer(DType::F32, {k.hidden[0], k.hidden[1], 1, 1});
  Attrs same = Attrs().is("strides", {1, 1}).is("pads", {1, 1, 1, 1}).is("dilations", {1, 1}).i("group", 1);
  Attrs point = Attrs().is("strides", {1, 1}).is("pads", {0, 0, 0, 0}).is("dilations", {1, 1}).i("group", 1);
  pb.addOp("conv2d", {x, w1, b1}, {c1}, same);
  pb.addOp("relu", {c1}, {r1});
  pb.addOp("conv2d", {r1, w2, b2}, {c2}, point);
  pb.addOp("add", {c2, r1}, {a});
  pb.addOp("relu", {a}, {r2});
  pb.addOp("max_pool", {r2}, {pool},
           Attrs().is("kernel", {3, 3}).is("strides", {2, 2}).is("pads", {0, 0, 0, 0}));
  pb.addOp("global_avg_pool", {r2}, {mean});
  pb.addOutput("pool", pool);
  pb.addOutput("mean", mean);
  std::shared_ptr<const Program> prog;
  Status s = pb.build(prog);
  EXPECT_TRUE(s.isOk()) << s.message();
  if (!s)
    return {};
  std::unique_ptr<Executor> exec;
  ExecutorOptions eo;
  eo.threads = threads;
  s = createExecutor("cpu", prog, eo, exec);
  EXPECT_TRUE(s.isOk()) << s.message();
  if (!s)
    return {};
  EXPECT_TRUE(exec->setInput("x", k.x).isOk());
  std::vector<Tensor> out(2);
  for (int run = 0; run < 2; ++run) { // a second run reuses every buffer
    s = exec->run();
    EXPECT_TRUE(s.isOk()) << s.message();
  }
  EXPECT_TRUE(exec->getOutput("pool", out[0]).isOk());
  EXPECT_TRUE(exec->getOutput("mean", out[1]).isOk());
  return out;
}

class ConvPaths : public ::testing::TestWithParam<const char *> {};

TEST_P(ConvPaths, ResidualBlockMatchesLoops) {
  // "blocked" (the default: nChw16c, Winograd), "direct" (nChw16c without
  // Winograd), "nhwc", "nchw" (TESSEL_LAYOUT), "im2col" (TESSEL_CONV).
  std::string path = GetParam();
  const char *vars[] = {"TESSEL_LAYOUT", "TESSEL_CONV", "TESSEL_WINOGRAD"};
  for (const char *v : vars)
    unsetenv(v);
  if (path == "nchw" || path == "nhwc")
    setenv("TESSEL_LAYOUT", path.c_str(), 1);
  if (path == "direct")
    setenv("TESSEL_WINOGRAD", "0", 1);
  if (path == "im2col")
    setenv("TESSEL_CONV", "im2col", 1);
  std::mt19937 rng(31);
  Block k = makeBlock(rng);
  for (int threads : {1, 2}) {
    SCOPED_TRACE(path + ", threads " + std::to_string(threads));
    std::vector<Tensor> out = runBlock(k, threads);
    ASSERT_EQ(out.size(), 2u);
    expectNear(out[0], k.wantPool, 1e-4, 1e-5);
    expectNear(out[1], k.wantMean, 1e-4, 1e-5);
  }
  for (const char *v : vars)
    unsetenv(v);
}

INSTANTIATE_TEST_SUITE_P(Layouts, ConvPaths,
                         ::testing::Values("blocked", "direct", "nhwc", "nchw",
                                           "im2col"));

/// The fusion tests' 1x1 conv over 16 channels: attributes, and a weight
/// drawn from `seed`.
Attrs pointConv() {
  return Attrs()
      .is("strides", {1, 1})
      .is("pads", {0, 0, 0, 0})
      .is("dilations", {1, 1})
      .i("group", 1);
}
Tensor pointWeight(unsigned seed) {
  std::mt19937 rng(seed);
  return randomF32({16, 16, 1, 1}, rng);
}

// A relu is fused into the conv before it only when writing the relu's
// buffer early cannot clobber a buffer live at the time.
TEST(ReluFusion, RefusedWhereTheReluBufferIsLiveEarlier) {
  const Shape s = {1, 16, 4, 4};
  const int64_t bytes = 16 * 16 * 4;
  Tensor w = pointWeight(32);
  for (bool overlap : {false, true}) {
    ProgramBuilder pb;
    int in = pb.addInput("in", DType::F32, s);
    int wc = pb.addConstant(DType::F32, w.shape(), w.data());
    // x lives at [0, bytes) until the conv reads it; c after it. The relu's
    // result either gets fresh bytes or reuses x's, which is legal for the
    // arena planner (x is dead once the conv ran) but not for a fused conv,
    // which would write it while still reading x.
    int x = pb.addBuffer(DType::F32, s, "x", 0);
    int c = pb.addBuffer(DType::F32, s, "c", bytes);
    int r = pb.addBuffer(DType::F32, s, "r", overlap ? 0 : 2 * bytes);
    pb.addOp("neg", {in}, {x});
    pb.addOp("conv2d", {x, wc}, {c}, pointConv());
    pb.addOp("relu", {c}, {r});
    pb.addOutput("r", r);
    std::shared_ptr<const Program> prog;
    ASSERT_TRUE(pb.build(prog).isOk());
    auto fusion =
        tessel::runtime::cpu::planConvFusion(*prog, {false, true, false});
    EXPECT_EQ(fusion[1].relu, overlap ? -1 : 2)
        << (overlap ? "overlapping" : "disjoint");
    EXPECT_EQ(fusion[1].writes, overlap ? -1 : r);
  }
}

// A residual add is folded into the conv before it (addend copied into the
// result, then a sum post-op) only when the addend exists when the conv
// runs.
TEST(AddFusion, NeedsTheAddendBeforeTheConv) {
  const Shape s = {1, 16, 4, 4};
  // Disjoint bytes for every buffer: only the order of ops decides.
  const int64_t bytes = 16 * 16 * 4;
  const Tensor w = pointWeight(33);
  for (bool addendFirst : {true, false}) {
    ProgramBuilder pb;
    const int in = pb.addInput("in", DType::F32, s);
    const int wc = pb.addConstant(DType::F32, w.shape(), w.data());
    int e = pb.addBuffer(DType::F32, s, "e", 0);
    int c = pb.addBuffer(DType::F32, s, "c", bytes);
    int a = pb.addBuffer(DType::F32, s, "a", 2 * bytes);
    int r = pb.addBuffer(DType::F32, s, "r", 3 * bytes);
    if (addendFirst)
      pb.addOp("neg", {in}, {e});
    pb.addOp("conv2d", {in, wc}, {c}, pointConv());
    if (!addendFirst)
      pb.addOp("neg", {in}, {e});
    pb.addOp("add", {e, c}, {a});
    pb.addOp("relu", {a}, {r});
    pb.addOutput("r", r);
    std::shared_ptr<const Program> prog;
    ASSERT_TRUE(pb.build(prog).isOk());
    const int conv = addendFirst ? 1 : 0;
    std::vector<bool> eligible(4, false);
    eligible[conv] = true;
    auto fusion = tessel::runtime::cpu::planConvFusion(*prog, eligible);
    if (addendFirst) {
      EXPECT_EQ(fusion[conv].add, 2);
      EXPECT_EQ(fusion[conv].addend, e);
      EXPECT_EQ(fusion[conv].relu, 3);
      EXPECT_EQ(fusion[conv].writes, r);
    } else {
      EXPECT_EQ(fusion[conv].writes, -1);
    }
  }
}

} // namespace

namespace {

// The Winograd kernel itself against direct loops, where oneDNN has one
// (AVX-512 machines); elsewhere create() falls back to a direct kernel (in
// oneDNN's own layout where nChw16c has none: AVX2) and the numbers must
// hold all the same.
TEST(DnnlConv, WinogradMatchesLoops) {
  using namespace tessel::runtime::cpu;
  std::mt19937 rng(34);
  Tensor x = randomF32({2, 32, 12, 12}, rng), w = randomF32({32, 32, 3, 3}, rng),
         b = randomF32({32}, rng);
  std::vector<double> xd(x.data<float>(), x.data<float>() + x.numElements());
  Shape ys;
  std::vector<double> want = refConv(xd, x.shape(), w, b, 1, 1, ys);
  auto ctx = createDnnlContext();
  ASSERT_TRUE(ctx);
  ConvAlgo algo;
  algo.winograd = true;
  algo.layout = Layout::NChw16c;
  auto conv = DnnlConv::create(ctx, x.shape(), w.shape(), ys, {1, 1},
                               {1, 1, 1, 1}, {1, 1}, 1, w.data<float>(),
                               b.data<float>(), {}, algo);
  ASSERT_TRUE(conv);
  std::printf("kernel: %s\n", conv->kernelName());
  EXPECT_EQ(dnnlHasWinograd(),
            std::string(conv->kernelName()).find("wino") != std::string::npos)
      << conv->kernelName();
  Tensor y(DType::F32, ys);
  std::vector<float> src(conv->srcScratchBytes() / 4 + 16),
      dst(conv->dstScratchBytes() / 4 + 16);
  ASSERT_TRUE(conv->run(x.data<float>(), y.data<float>(), src.data(), dst.data()).isOk());
  // Winograd rounds differently: a few times direct convolution's error.
  expectNear(y, want, 1e-4, 1e-4);
}

} // namespace

namespace {

// gelu(x @ W + b) with constant W and b runs as one oneDNN matmul with a bias
// and GELU epilogue: both GELU forms against loops, on the fused path and
// with TESSEL_FUSE=0; and the planner folds only that pattern.
TEST(MatMulEpilogue, MatchesLoopsAndFoldsOnlyItsPattern) {
  std::mt19937 rng(35);
  const int64_t m = 6, k = 24, n = 40;
  Tensor x = randomF32({2, m, k}, rng), w = randomF32({k, n}, rng),
         b = randomF32({n}, rng);
  for (bool tanhForm : {true, false})
    for (const char *fuse : {"1", "0"}) {
      setenv("TESSEL_FUSE", fuse, 1);
      ProgramBuilder pb;
      int xi = pb.addInput("x", DType::F32, x.shape());
      int wi = pb.addConstant(DType::F32, w.shape(), w.data());
      int bi = pb.addConstant(DType::F32, b.shape(), b.data());
      const Shape ys = {2, m, n};
      int p = pb.addBuffer(DType::F32, ys), s = pb.addBuffer(DType::F32, ys),
          y = pb.addBuffer(DType::F32, ys);
      pb.addOp("matmul", {xi, wi}, {p});
      pb.addOp("add", {p, bi}, {s});
      pb.addOp("gelu", {s}, {y}, Attrs().i("tanh_approximation", tanhForm));
      pb.addOutput("y", y);
      std::shared_ptr<const Program> prog;
      ASSERT_TRUE(pb.build(prog).isOk());
      if (std::string(fuse) == "1") {
        auto plan = tessel::runtime::cpu::planMatMulEpilogue(*prog, {true, false, false});
        EXPECT_EQ(plan[0].add, 1);
        EXPECT_EQ(plan[0].gelu, 2);
        EXPECT_EQ(plan[0].writes, y);
        EXPECT_EQ(plan[0].tanhForm, tanhForm);
      }
      Tensor got;
      ASSERT_NO_FATAL_FAILURE(runOneInput(prog, "x", x, "y", got));
      std::vector<double> want;
      for (int64_t r = 0; r < 2 * m; ++r)
        for (int64_t j = 0; j < n; ++j) {
          double v = b.data<float>()[j];
          for (int64_t q = 0; q < k; ++q)
            v += double(x.data<float>()[r * k + q]) * w.data<float>()[q * n + j];
          want.push_back(tanhForm
                             ? 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) *
                                                        (v + 0.044715 * v * v * v)))
                             : 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))));
        }
      SCOPED_TRACE(std::string(tanhForm ? "tanh" : "erf") + " TESSEL_FUSE=" + fuse);
      expectNear(got, want, 1e-4, 1e-4);
    }
  unsetenv("TESSEL_FUSE");

  // Not the pattern: a bias that is an input, or no gelu after the add.
  for (bool biasIsInput : {true, false}) {
    ProgramBuilder pb;
    int xi = pb.addInput("x", DType::F32, x.shape());
    int wi = pb.addConstant(DType::F32, w.shape(), w.data());
    int bi = biasIsInput ? pb.addInput("b", DType::F32, b.shape())
                         : pb.addConstant(DType::F32, b.shape(), b.data());
    const Shape ys = {2, m, n};
    int p = pb.addBuffer(DType::F32, ys), s = pb.addBuffer(DType::F32, ys),
        y = pb.addBuffer(DType::F32, ys);
    pb.addOp("matmul", {xi, wi}, {p});
    pb.addOp("add", {p, bi}, {s});
    pb.addOp(biasIsInput ? "gelu" : "relu", {s}, {y});
    pb.addOutput("y", y);
    std::shared_ptr<const Program> prog;
    ASSERT_TRUE(pb.build(prog).isOk());
    auto plan = tessel::runtime::cpu::planMatMulEpilogue(*prog, {true, false, false});
    EXPECT_EQ(plan[0].writes, -1) << (biasIsInput ? "bias is an input" : "relu, not gelu");
  }
}

} // namespace

namespace {

// `conv(x) + x` where the planner gave the add's result x's own bytes: the
// add is not folded in place (the conv would overwrite the x it reads), and
// the numbers stay those of the loops.
TEST(AddFusion, NotInPlaceOnTheConvsOwnInput) {
  const Shape s = {1, 16, 4, 4};
  const int64_t bytes = 16 * 16 * 4;
  std::mt19937 rng(36);
  Tensor in = randomF32(s, rng), w = randomF32({16, 16, 1, 1}, rng),
         b = randomF32({16}, rng);
  ProgramBuilder pb;
  int ii = pb.addInput("in", DType::F32, s);
  int wc = pb.addConstant(DType::F32, w.shape(), w.data());
  int bc = pb.addConstant(DType::F32, b.shape(), b.data());
  int x = pb.addBuffer(DType::F32, s, "x", 0);
  int c = pb.addBuffer(DType::F32, s, "c", bytes);
  int a = pb.addBuffer(DType::F32, s, "a", 0); // x's bytes: x dies at the add
  pb.addOp("relu", {ii}, {x});
  pb.addOp("conv2d", {x, wc, bc}, {c},
           Attrs().is("strides", {1, 1}).is("pads", {0, 0, 0, 0}).is("dilations", {1, 1}).i("group", 1));
  pb.addOp("add", {c, x}, {a});
  pb.addOutput("a", a);
  std::shared_ptr<const Program> prog;
  ASSERT_TRUE(pb.build(prog).isOk());
  auto fusion = tessel::runtime::cpu::planConvFusion(*prog, {false, true, false});
  EXPECT_FALSE(fusion[1].inPlace);
  EXPECT_EQ(fusion[1].writes, -1); // and a is live-overlapping x: no fusion

  Tensor got;
  ASSERT_NO_FATAL_FAILURE(runOneInput(prog, "in", in, "a", got));
  std::vector<double> xr(in.numElements());
  for (int64_t i = 0; i < in.numElements(); ++i)
    xr[i] = std::max(0.0f, in.data<float>()[i]);
  Shape ys;
  std::vector<double> want = refConv(xr, s, w, b, 1, 0, ys);
  for (size_t i = 0; i < want.size(); ++i)
    want[i] += xr[i];
  expectNear(got, want, 1e-4, 1e-5);
}

} // namespace
