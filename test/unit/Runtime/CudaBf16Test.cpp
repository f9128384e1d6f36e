//===- CudaBf16Test.cpp - bf16 GEMMs on cuBLASLt against the CPU ----------===//
//
// matmul and gemm with `bf16_operands` (runtime/cuda/Bf16Gemm.h), and
// conv2d and its gradients (cublasGemmEx over bf16 columns, Conv.cpp), on
// "cuda" against the CPU backend (oneDNN's bf16 kernels where the CPU has
// bf16 dot products, else the f32 ones on the same values). The operands are bf16
// values, so every product is exact in f32 and the two sides differ only
// in the order of their f32 sums. Each side's sum of K terms is within
// (K - 1)·2^-24·Σ|terms| of the exact one (Higham's first-order bound for
// any order), so the two are within K·2^-23·Σ|terms|; the tests allow
// (K + 2)·2^-22·Σ|terms| (twice that: the alpha/beta roundings, and an
// accumulator that may truncate), where Σ|terms| is element (i, j) of the
// same op on |a|, |b| (and |c|, |alpha|, |beta|), computed on the CPU. For
// K = 4096 that is 2^-10 of Σ|terms|; an operand read wrongly (transposed,
// offset, another batch) misses by O(1) of it.
//
// Without a device the conformance tests skip; the host pieces (the
// rounding, the cuBLASLt layouts replayed through a reference GEMM with
// cuBLASLt's semantics, the alignment) run everywhere.
//
//===----------------------------------------------------------------------===//
#include "Bf16Gemm.h"
#include "CudaTestUtil.h"
#include "GemmPlan.h"
#include "tessel/runtime/HalfFloat.h"
#include "tessel/runtime/ScalarOps.h"

#include <cmath>
#include <cstring>

namespace tessel::runtime::test {
namespace {

/// Rounds every element of an f32 tensor to bf16 (round_float's rounding).
Tensor toBf16Values(Tensor t) {
  float *p = t.data<float>();
  for (int64_t i = 0; i < t.numElements(); ++i) {
    uint16_t unused;
    p[i] = scalar::floatOfBits(
        scalar::roundBf16Bits(scalar::bitsOfFloat(p[i]), &unused));
  }
  return t;
}

Tensor absOf(Tensor t) {
  float *p = t.data<float>();
  for (int64_t i = 0; i < t.numElements(); ++i)
    p[i] = std::fabs(p[i]);
  return t;
}

Tensor bf16Random(const Shape &s, std::mt19937 &rng) {
  return toBf16Values(randomF32(s, rng));
}

/// Expects |cpu - gpu| <= (k + 2)·2^-22·bound elementwise (the header).
void expectWithinSumOrder(const Tensor &cpu, const Tensor &gpu,
                          const Tensor &bound, int64_t k) {
  ASSERT_EQ(cpu.shape(), gpu.shape());
  ASSERT_EQ(cpu.shape(), bound.shape());
  const double scale = double(k + 2) * std::ldexp(1.0, -22);
  int bad = 0;
  for (int64_t i = 0; i < cpu.numElements(); ++i) {
    const double c = cpu.data<float>()[i], g = gpu.data<float>()[i];
    const double tol = scale * bound.data<float>()[i] + 1e-30;
    if (!(std::fabs(c - g) <= tol) && ++bad <= 5)
      ADD_FAILURE() << "element " << i << ": cpu " << c << ", cuda " << g
                    << ", bound " << tol;
  }
  EXPECT_EQ(bad, 0) << bad << " of " << cpu.numElements() << " elements";
}

/// Runs `op` with bf16_operands on both backends and compares within the
/// sum-order bound; `absAttrs` are the attributes of the bound's run.
void conformBf16(const std::string &op, const std::vector<Tensor> &ins,
                 const Shape &y, Attrs attrs, Attrs absAttrs, int64_t k) {
  std::vector<std::pair<std::string, Tensor>> feeds;
  std::vector<Tensor> absIns;
  for (size_t i = 0; i < ins.size(); ++i) {
    feeds.emplace_back("in" + std::to_string(i), ins[i]);
    absIns.push_back(absOf(ins[i]));
  }
  std::shared_ptr<const Program> prog;
  attrs.i("bf16_operands", 1);
  Status s = buildOneOp(op, ins, {{DType::F32, y}}, attrs, prog);
  ASSERT_TRUE(s.isOk()) << s.message();
  std::vector<Tensor> want, got;
  s = runProgram("cpu", prog, feeds, want);
  ASSERT_TRUE(s.isOk()) << "cpu: " << s.message();
  s = runProgram("cuda", prog, feeds, got, /*repeats=*/2);
  ASSERT_TRUE(s.isOk()) << "cuda: " << s.message();
  std::vector<Tensor> bound =
      runOp(op, absIns, {{DType::F32, y}}, std::move(absAttrs));
  expectWithinSumOrder(want[0], got[0], bound[0], k);
}

//===----------------------------------------------------------------------===//
// On the device
//===----------------------------------------------------------------------===//

struct MatMulCase {
  Shape a, b, y;
  int64_t k;
};

void conformBf16MatMuls(const std::vector<MatMulCase> &cases, unsigned seed) {
  std::mt19937 rng(seed);
  for (const MatMulCase &c : cases) {
    SCOPED_TRACE(shapeToString(c.a) + " @ " + shapeToString(c.b));
    conformBf16("matmul", {bf16Random(c.a, rng), bf16Random(c.b, rng)}, c.y,
                {}, {}, c.k);
  }
}

TEST(CudaBf16, MatMul) {
  TSL_REQUIRE_CUDA();
  conformBf16MatMuls(
      {
          {{3, 4}, {4, 5}, {3, 5}, 4},
          {{2, 3, 4}, {4, 5}, {2, 3, 5}, 4}, // b shared: one folded GEMM
          {{4, 5}, {5}, {4}, 5},
          {{4}, {4}, {}, 4},
          {{3, 0}, {0, 4}, {3, 4}, 0},            // k = 0: zeros
          {{1, 128, 96}, {96, 80}, {1, 128, 80}, 96}, // aligned for tensor cores
          {{33, 2048}, {2048, 17}, {33, 17}, 2048},
          {{64, 4096}, {4096, 64}, {64, 64}, 4096},
      },
      31);
}

TEST(CudaBf16, BatchedMatMul) {
  TSL_REQUIRE_CUDA();
  conformBf16MatMuls(
      {
          {{2, 3, 4}, {2, 4, 5}, {2, 3, 5}, 4},          // strided batched
          {{4}, {2, 4, 5}, {2, 5}, 4},                   // a shared: stride 0
          {{2, 1, 3, 4}, {1, 3, 4, 5}, {2, 3, 3, 5}, 4}, // two calls
          {{3, 1, 2, 4}, {5, 4, 2}, {3, 5, 2, 2}, 4},    // three calls
          {{2, 1, 3, 64}, {3, 64, 33}, {2, 3, 3, 33}, 64},
          {{4, 12, 32, 64}, {4, 12, 64, 32}, {4, 12, 32, 32}, 64}, // attention
          {{3, 16, 1000}, {3, 1000, 24}, {3, 16, 24}, 1000},
      },
      32);
}

TEST(CudaBf16, Gemm) {
  TSL_REQUIRE_CUDA();
  std::mt19937 rng(33);
  for (int64_t k : {9, 300, 2048}) {
    const int64_t m = 5, n = 7;
    for (int ta : {0, 1})
      for (int tb : {0, 1})
        for (const Shape &cs :
             std::vector<Shape>{{}, {n}, {m, 1}, {m, n}, {1}}) {
          Tensor a = bf16Random(ta ? Shape{k, m} : Shape{m, k}, rng);
          Tensor b = bf16Random(tb ? Shape{n, k} : Shape{k, n}, rng);
          std::vector<Tensor> ins = {a, b};
          const bool hasC = !(cs.size() == 1 && cs[0] == 1);
          if (hasC)
            ins.push_back(randomF32(cs, rng)); // c is added in f32
          SCOPED_TRACE("k " + std::to_string(k) + " trans " +
                       std::to_string(ta) + std::to_string(tb) + " C " +
                       (hasC ? shapeToString(cs) : "none"));
          auto attrs = [&](float alpha, float beta) {
            return Attrs()
                .i("trans_a", ta)
                .i("trans_b", tb)
                .f("alpha", alpha)
                .f("beta", beta);
          };
          conformBf16("gemm", ins, {m, n}, attrs(-0.75f, hasC ? 1.5f : 1.0f),
                      attrs(0.75f, 1.5f), k);
        }
  }
  // Tensor-core-friendly dims, nn.Linear's layout (trans_b), and k = 0.
  Tensor x = bf16Random({128, 256}, rng), w = bf16Random({64, 256}, rng);
  conformBf16("gemm", {x, w}, {128, 64}, Attrs().i("trans_b", 1),
              Attrs().i("trans_b", 1), 256);
  conformBf16("gemm", {bf16Random({4, 0}, rng), bf16Random({0, 3}, rng),
                       randomF32({4, 3}, rng)},
              {4, 3}, Attrs().f("beta", 2.0f), Attrs().f("beta", 2.0f), 0);
}

/// conv2d (with a bias, added in f32) and its two gradients with
/// bf16_operands, over the gradient cases (strides, pads, dilations,
/// groups, depthwise, 1x1): bf16 copies, im2col in bf16 and cublasGemmEx
/// (Conv.cpp). K is the number of terms of one output element.
TEST(CudaBf16, Convolutions) {
  TSL_REQUIRE_CUDA();
  std::mt19937 rng(35);
  for (const ConvCase &c : convBackwardCases()) {
    SCOPED_TRACE("x " + shapeToString(c.x) + " w " + shapeToString(c.w));
    const Shape ys = convResult(c);
    const Attrs attrs = convAttrs(c);
    conformBf16("conv2d",
                {bf16Random(c.x, rng), bf16Random(c.w, rng),
                 randomF32({c.w[0]}, rng)},
                ys, attrs, attrs, c.w[1] * c.w[2] * c.w[3]);
    conformBf16("conv2d_backward_data",
                {bf16Random(ys, rng), bf16Random(c.w, rng)}, c.x, attrs,
                attrs, c.w[0] / c.group * c.w[2] * c.w[3]);
    conformBf16("conv2d_backward_weight",
                {bf16Random(c.x, rng), bf16Random(ys, rng)}, c.w, attrs,
                attrs, ys[0] * ys[2] * ys[3]);
  }
}

//===----------------------------------------------------------------------===//
// Without a device
//===----------------------------------------------------------------------===//

struct HostMath {
  static float fabs(float x) { return std::fabs(x); }
  static float nearbyint(float x) { return std::nearbyint(x); }
};

/// The conversion kernel's rounding (scalar::roundBf16Bits, run here on the
/// host) is round_float's to bf16 (scalar::roundToFormat(x, 8, 7)), and on
/// values that are already bf16 it is the CPU's bf16 copy (the upper half).
// A half model's own GEMMs (bf16 or f16 operands and result, which
// -tessel-float-normalization keeps half): cuBLASLt over their own
// halves, f32 sums, the result rounded once (MatMul.cpp, makeLtHalf).
// Small integers make every sum exact in any order, so the device and the
// CPU (oneDNN's bf16 matmul, or the widened f32 GEMM) give the same bits.
TEST(CudaBf16, HalfModelGemms) {
  TSL_REQUIRE_CUDA();
  std::mt19937 rng(57);
  auto ints = [&](DType half, const Shape &shape) {
    Tensor t(half, shape);
    std::uniform_int_distribution<int> d(-4, 4);
    for (int64_t i = 0; i < t.numElements(); ++i)
      t.data<uint16_t>()[i] = f32ToHalf(half, static_cast<float>(d(rng)));
    return t;
  };
  for (DType half : {DType::BF16, DType::F16}) {
    SCOPED_TRACE(dtypeName(half));
    conformOp("matmul", {ints(half, {2, 33, 40}), ints(half, {40, 17})},
              {{half, {2, 33, 17}}});
    conformOp("matmul", {ints(half, {2, 1, 5, 8}), ints(half, {3, 8, 6})},
              {{half, {2, 3, 5, 6}}});
    for (bool ta : {false, true})
      for (bool tb : {false, true})
        conformOp("gemm",
                  {ints(half, ta ? Shape{24, 9} : Shape{9, 24}),
                   ints(half, tb ? Shape{7, 24} : Shape{24, 7}),
                   ints(half, {7})},
                  {{half, {9, 7}}},
                  Attrs().i("trans_a", ta).i("trans_b", tb).f("alpha", 0.5f).f(
                      "beta", 2.0f));
  }
}

TEST(CudaBf16Host, RoundingIsRoundFloatsAndExactOnBf16Values) {
  std::mt19937 rng(34);
  const uint32_t lows[] = {0x0000u, 0x0001u, 0x7fffu, 0x8000u,
                           0x8001u, 0xffffu, 0x4000u, 0xc000u};
  int bad = 0;
  for (uint32_t hi = 0; hi < 0x10000u; ++hi)
    for (uint32_t low : lows) {
      const uint32_t u = hi << 16 | (low == 0x4000u ? rng() & 0xffffu : low);
      const float x = scalar::floatOfBits(u);
      uint16_t half = 0;
      const uint32_t r = scalar::roundBf16Bits(u, &half);
      const bool nan = std::isnan(x);
      const uint32_t want = scalar::bitsOfFloat(
          scalar::roundToFormat<HostMath>(x, 8, 7));
      bool ok = nan ? (r == u && (half & 0x7fc0u) == 0x7fc0u &&
                       (half & 0x8000u) == (u >> 16 & 0x8000u))
                    : (r == want && half == r >> 16);
      if (!nan && (u & 0xffffu) == 0)
        ok = ok && half == u >> 16;
      if (!ok && ++bad <= 5)
        ADD_FAILURE() << std::hex << "bits 0x" << u << ": rounded 0x" << r
                      << " (bf16 0x" << half << "), round_float 0x" << want;
    }
  EXPECT_EQ(bad, 0);
}

/// C = alpha·op(A)·op(B) + beta·C with cuBLASLt's meaning of the layouts,
/// in double; fails where a layout is inconsistent or reaches past its
/// buffer (n* elements).
Status referenceLt(const cuda::LtGemm &g, float alpha, const float *A,
                   int64_t nA, const float *B, int64_t nB, float beta,
                   float *C, int64_t nC) {
  const uint64_t m = g.c.rows, n = g.c.cols;
  const uint64_t k = g.transA ? g.a.rows : g.a.cols;
  if ((g.transA ? g.a.cols : g.a.rows) != m ||
      (g.transB ? g.b.rows : g.b.cols) != n ||
      (g.transB ? g.b.cols : g.b.rows) != k)
    return Status::error("inconsistent layouts");
  for (const cuda::LtLayout *l : {&g.a, &g.b, &g.c})
    if (l->ld < static_cast<int64_t>(std::max<uint64_t>(l->rows, 1)) ||
        l->count != g.c.count)
      return Status::error("bad leading dimension or batch");
  if (cuda::ltExtent(g.a) > nA || cuda::ltExtent(g.b) > nB ||
      cuda::ltExtent(g.c) > nC)
    return Status::error("a layout reaches past its buffer");
  for (int bi = 0; bi < g.c.count; ++bi) {
    const float *a = A + bi * g.a.stride, *b = B + bi * g.b.stride;
    float *c = C + bi * g.c.stride;
    for (uint64_t j = 0; j < n; ++j)
      for (uint64_t i = 0; i < m; ++i) {
        double acc = 0;
        for (uint64_t l = 0; l < k; ++l) {
          const double av = g.transA ? a[l + i * g.a.ld] : a[i + l * g.a.ld];
          const double bv = g.transB ? b[j + l * g.b.ld] : b[l + j * g.b.ld];
          acc += av * bv;
        }
        float &cv = c[i + j * g.c.ld];
        cv = static_cast<float>(alpha * acc + (beta == 0 ? 0.0 : beta * cv));
      }
  }
  return Status::ok();
}

/// The layouts each bf16 matmul call gets (ltGemm(columnMajor(call)), A
/// from b and B from a, as makeBf16MatMul passes them), replayed with
/// cuBLASLt's semantics, give the CPU backend's bf16 matmul.
TEST(CudaBf16Host, MatMulLayoutsReplayLikeTheCpu) {
  std::mt19937 rng(35);
  struct Case {
    Shape a, b, y;
  };
  const std::vector<Case> cases = {
      {{3, 4}, {4, 5}, {3, 5}},
      {{2, 3, 4}, {4, 5}, {2, 3, 5}},
      {{2, 3, 4}, {2, 4, 5}, {2, 3, 5}},
      {{4}, {2, 4, 5}, {2, 5}},
      {{2, 3, 4}, {4}, {2, 3}},
      {{2, 1, 3, 4}, {1, 3, 4, 5}, {2, 3, 3, 5}},
      {{3, 1, 2, 4}, {5, 4, 2}, {3, 5, 2, 2}},
      {{4}, {4}, {}},
      {{1, 2, 3}, {2, 3, 2}, {2, 2, 2}},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(shapeToString(c.a) + " @ " + shapeToString(c.b));
    Tensor a = bf16Random(c.a, rng), b = bf16Random(c.b, rng);
    std::vector<Tensor> want = runOp("matmul", {a, b}, {{DType::F32, c.y}},
                                     Attrs().i("bf16_operands", 1));
    cuda::MatMulPlan plan;
    ASSERT_TRUE(cuda::planMatMul(c.a, c.b, c.y, plan).isOk());
    Tensor got(DType::F32, c.y);
    std::fill(got.data<float>(), got.data<float>() + got.numElements(), NAN);
    for (const cuda::GemmCall &call : plan.calls) {
      const cuda::ColumnMajorCall cm = cuda::columnMajor(call);
      Status s = referenceLt(cuda::ltGemm(cm), 1.0f, b.data<float>() + cm.aOff,
                             b.numElements() - cm.aOff,
                             a.data<float>() + cm.bOff,
                             a.numElements() - cm.bOff, 0.0f,
                             got.data<float>() + cm.cOff,
                             got.numElements() - cm.cOff);
      ASSERT_TRUE(s.isOk()) << s.message();
    }
    expectSame(want[0], got, 1e-5, 1e-5, "replayed layouts");
  }
}

/// ltRowMajorGemm's layouts (A from b, B from a, as makeGemm passes them)
/// replayed with cuBLASLt's semantics give the CPU backend's bf16 gemm.
TEST(CudaBf16Host, GemmLayoutsReplayLikeTheCpu) {
  std::mt19937 rng(36);
  const int m = 5, n = 7, k = 3;
  for (int ta : {0, 1})
    for (int tb : {0, 1}) {
      SCOPED_TRACE("trans " + std::to_string(ta) + std::to_string(tb));
      Tensor a = bf16Random(ta ? Shape{k, m} : Shape{m, k}, rng);
      Tensor b = bf16Random(tb ? Shape{n, k} : Shape{k, n}, rng);
      Tensor c = randomF32({m, n}, rng);
      std::vector<Tensor> want =
          runOp("gemm", {a, b, c}, {{DType::F32, {m, n}}},
                Attrs()
                    .i("trans_a", ta)
                    .i("trans_b", tb)
                    .f("alpha", 0.5f)
                    .f("beta", 2.0f)
                    .i("bf16_operands", 1));
      Tensor got = Tensor::fromData(DType::F32, {m, n}, c.data());
      const cuda::LtGemm g = cuda::ltRowMajorGemm(
          ta, tb, m, n, k, static_cast<int>(a.shape()[1]),
          static_cast<int>(b.shape()[1]));
      Status s = referenceLt(g, 0.5f, b.data<float>(), b.numElements(),
                             a.data<float>(), a.numElements(), 2.0f,
                             got.data<float>(), got.numElements());
      ASSERT_TRUE(s.isOk()) << s.message();
      expectSame(want[0], got, 1e-5, 1e-5, "replayed gemm");
    }
}

/// The alignment the heuristic is told: the lowest set bit of the address
/// and (in a batch) of the stride, at most 256.
TEST(CudaBf16Host, Alignment) {
  EXPECT_EQ(cuda::ltAlignment(0, 0, 1), 256u);
  EXPECT_EQ(cuda::ltAlignment(4096 + 64, 0, 1), 64u);
  EXPECT_EQ(cuda::ltAlignment(2, 0, 1), 2u);
  EXPECT_EQ(cuda::ltAlignment(512, 12, 3), 4u);  // 6 bf16 elements apart
  EXPECT_EQ(cuda::ltAlignment(512, 12, 1), 256u); // one matrix: no stride
  EXPECT_EQ(cuda::ltAlignment(512, 0, 4), 256u);  // shared: stride 0
}

} // namespace
} // namespace tessel::runtime::test
