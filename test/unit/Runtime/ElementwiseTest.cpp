//===- ElementwiseTest.cpp - Unary, binary, compare, where, cast ----------===//
#include "TestUtil.h"

#include <algorithm>
#include <functional>

using namespace tessel::runtime;
using namespace tessel::runtime::test;

namespace {

struct UnaryCase {
  const char *op;
  std::function<double(double)> ref;
  float lo, hi;
  double atol, rtol;
};

class UnaryTest : public ::testing::TestWithParam<std::tuple<UnaryCase, int>> {};

TEST_P(UnaryTest, MatchesReference) {
  const UnaryCase &c = std::get<0>(GetParam());
  int threads = std::get<1>(GetParam());
  std::mt19937 rng(7);
  // Large enough to split across threads, odd to leave vector tails.
  for (Shape shape : {Shape{}, Shape{7}, Shape{3, 1, 5}, Shape{257, 131}}) {
    Tensor x = randomF32(shape, rng, c.lo, c.hi);
    auto out = runOp(c.op, {x}, {{DType::F32, shape}}, {}, threads);
    ASSERT_EQ(out.size(), 1u);
    std::vector<double> want;
    for (int64_t i = 0; i < x.numElements(); ++i)
      want.push_back(c.ref(x.data<float>()[i]));
    expectNear(out[0], want, c.atol, c.rtol);
  }
}

// The same op on f64 (docs/precision.md): libm's double functions, within
// a few units of f64's last place of the formula (1e-15 absolute), where
// f32 would be 1e-7 away. leaky_relu's alpha is ONNX's f32 attribute, in f64 as
// it is.
TEST_P(UnaryTest, MatchesReferenceInF64) {
  const UnaryCase &c = std::get<0>(GetParam());
  int threads = std::get<1>(GetParam());
  std::mt19937 rng(8);
  for (Shape shape : {Shape{}, Shape{7}, Shape{257, 131}}) {
    Tensor x = randomF64(shape, rng, c.lo, c.hi);
    auto out = runOp(c.op, {x}, {{DType::F64, shape}}, {}, threads);
    ASSERT_EQ(out[0].dtype(), DType::F64);
    std::vector<double> want;
    for (int64_t i = 0; i < x.numElements(); ++i) {
      const double v = x.data<double>()[i];
      want.push_back(std::string(c.op) == "leaky_relu"
                         ? (v < 0 ? double(0.01f) * v : v)
                         : c.ref(v));
    }
    // atol for the cancellations of the formulas (gelu's 1 + erf for
    // x < 0, hard_swish's x / 6 + 1/2 near -3), which both sides compute.
    expectNear(out[0], want, 1e-15, 1e-14);
  }
}

const double kPi = 3.14159265358979323846;

/// "OP_threadsN": the test name of a (case, threads) parameter.
template <typename Info> std::string opAndThreads(const Info &info) {
  return std::string(std::get<0>(info.param).op) + "_threads" +
         std::to_string(std::get<1>(info.param));
}

INSTANTIATE_TEST_SUITE_P(
    Ops, UnaryTest,
    ::testing::Combine(
        ::testing::Values(
            UnaryCase{"neg", [](double x) { return -x; }, -5, 5, 0, 0},
            UnaryCase{"exp", [](double x) { return std::exp(x); }, -80, 80, 1e-30, 3e-7},
            UnaryCase{"log", [](double x) { return std::log(x); }, 1e-6f, 1e6f, 1e-6, 3e-7},
            UnaryCase{"sqrt", [](double x) { return std::sqrt(x); }, 0, 100, 0, 1e-7},
            UnaryCase{"rsqrt", [](double x) { return 1 / std::sqrt(x); }, 1e-3f, 100, 0, 3e-7},
            UnaryCase{"tanh", [](double x) { return std::tanh(x); }, -12, 12, 1e-7, 3e-7},
            UnaryCase{"erf", [](double x) { return std::erf(x); }, -4, 4, 3e-7, 3e-7},
            UnaryCase{"sigmoid", [](double x) { return 1 / (1 + std::exp(-x)); }, -30, 30, 1e-7, 3e-7},
            UnaryCase{"relu", [](double x) { return x < 0 ? 0 : x; }, -5, 5, 0, 0},
            UnaryCase{"gelu",
                      [](double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); },
                      -6, 6, 3e-7, 3e-7},
            UnaryCase{"reciprocal", [](double x) { return 1 / x; }, 0.01f, 100, 0, 1e-7},
            UnaryCase{"abs", [](double x) { return std::fabs(x); }, -5, 5, 0, 0},
            UnaryCase{"softplus",
                      [](double x) { return std::max(x, 0.0) + std::log1p(std::exp(-std::fabs(x))); },
                      -40, 40, 1e-30, 3e-7},
            UnaryCase{"hard_swish",
                      [](double x) { return x * std::clamp(x / 6 + 0.5, 0.0, 1.0); },
                      -8, 8, 1e-7, 3e-7},
            UnaryCase{"leaky_relu", [](double x) { return x < 0 ? 0.01 * x : x; }, -5, 5, 0, 1e-7},
            UnaryCase{"softsign", [](double x) { return x / (1 + std::fabs(x)); }, -1e4f, 1e4f, 0, 3e-7},
            UnaryCase{"floor", [](double x) { return std::floor(x); }, -5, 5, 0, 0},
            UnaryCase{"ceil", [](double x) { return std::ceil(x); }, -5, 5, 0, 0},
            UnaryCase{"round", [](double x) { return std::nearbyint(x); }, -5, 5, 0, 0},
            UnaryCase{"sign", [](double x) { return double((x > 0) - (x < 0)); }, -5, 5, 0, 0}),
        ::testing::Values(1, 2)),
    opAndThreads<::testing::TestParamInfo<UnaryTest::ParamType>>);

/// y = op(x) with `attrs` against ref(x) elementwise, for f32 x of shape
/// [n].
template <typename Ref>
void expectUnary(const char *op, const Tensor &x, Attrs attrs, Ref ref,
                 double atol, double rtol) {
  const int64_t n = x.numElements();
  auto out = runOp(op, {x}, {{DType::F32, {n}}}, std::move(attrs));
  std::vector<double> want;
  for (int64_t i = 0; i < n; ++i)
    want.push_back(ref(double(x.data<float>()[i])));
  expectNear(out[0], want, atol, rtol);
}

TEST(Unary, GeluTanhApproximation) {
  std::mt19937 rng(1);
  expectUnary(
      "gelu", randomF32({1000}, rng, -6, 6), Attrs().i("tanh_approximation", 1),
      [](double v) {
        return 0.5 * v *
               (1 + std::tanh(std::sqrt(2 / kPi) * (v + 0.044715 * v * v * v)));
      },
      3e-7, 3e-7);
}

TEST(Unary, LeakyReluAlpha) {
  std::mt19937 rng(2);
  expectUnary(
      "leaky_relu", randomF32({333}, rng, -4, 4), Attrs().f("alpha", 0.2f),
      [](double v) { return v < 0 ? double(0.2f) * v : v; }, 0, 1e-7);
}

// The op table declares leaky_relu's alpha as one float: anything else is a
// load-time error naming it.
TEST(Unary, DeclaredAttributeOfTheWrongType) {
  std::shared_ptr<const Program> p;
  Status s = buildOneOp("leaky_relu", {Tensor(DType::F32, {4})},
                        {{DType::F32, {4}}}, Attrs().s("alpha", "0.2"), p);
  ASSERT_FALSE(s);
  EXPECT_NE(s.message().find("attribute 'alpha' must be one float"),
            std::string::npos)
      << s.message();
}

TEST(Unary, SpecialValues) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Tensor x = Tensor::fromVector<float>(DType::F32, {6},
                                       {0.0f, -0.0f, inf, -inf, nan, -1.0f});
  auto e = runOp("exp", {x}, {{DType::F32, {6}}});
  expectNear(e[0], {1, 1, INFINITY, 0, NAN, std::exp(-1.0)}, 0, 1e-7);
  auto l = runOp("log", {x}, {{DType::F32, {6}}});
  expectNear(l[0], {-INFINITY, -INFINITY, INFINITY, NAN, NAN, NAN});
  auto t = runOp("tanh", {x}, {{DType::F32, {6}}});
  expectNear(t[0], {0, 0, 1, -1, NAN, std::tanh(-1.0)}, 1e-7, 3e-7);
  // Exactly, as tanhf: 1 - 6e-8 at -inf made gelu's tanh form -inf there.
  EXPECT_EQ(t[0].data<float>()[2], 1.0f);
  EXPECT_EQ(t[0].data<float>()[3], -1.0f);
  auto s = runOp("sigmoid", {x}, {{DType::F32, {6}}});
  expectNear(s[0], {0.5, 0.5, 1, 0, NAN, 1 / (1 + std::exp(1.0))}, 1e-7, 3e-7);
  auto er = runOp("erf", {x}, {{DType::F32, {6}}});
  expectNear(er[0], {0, 0, 1, -1, NAN, std::erf(-1.0)}, 1e-7, 3e-7);
  // gelu is its formula in IEEE arithmetic, as on CUDA (erff): at -inf,
  // -inf * (1 + erf(-inf)) = -inf * 0 is NaN, in either form.
  const double g1 = -0.5 * (1 + std::erf(-1 / std::sqrt(2.0)));
  auto g = runOp("gelu", {x}, {{DType::F32, {6}}});
  expectNear(g[0], {0, 0, INFINITY, NAN, NAN, g1}, 1e-7, 3e-7);
  auto gt = runOp("gelu", {x}, {{DType::F32, {6}}},
                  Attrs().i("tanh_approximation", 1));
  expectNear(gt[0], {0, 0, INFINITY, NAN, NAN, -0.15880800939172324}, 1e-7,
             3e-7);
}

TEST(Unary, IntegerNegAbsRelu) {
  Tensor x = Tensor::fromVector<int64_t>(DType::I64, {4}, {-3, 0, 5, -9});
  expectEqual<int64_t>(runOp("neg", {x}, {{DType::I64, {4}}})[0], {3, 0, -5, 9});
  expectEqual<int64_t>(runOp("abs", {x}, {{DType::I64, {4}}})[0], {3, 0, 5, 9});
  expectEqual<int64_t>(runOp("relu", {x}, {{DType::I64, {4}}})[0], {0, 0, 5, 0});
}

TEST(Unary, Not) {
  Tensor x = Tensor::fromVector<uint8_t>(DType::Bool, {3}, {1, 0, 1});
  expectEqual<uint8_t>(runOp("not", {x}, {{DType::Bool, {3}}})[0], {0, 1, 0});
}

TEST(Cast, AllPairs) {
  Tensor f = Tensor::fromVector<float>(DType::F32, {4}, {-2.7f, 0.0f, 3.9f, 1.0f});
  expectEqual<int64_t>(runOp("cast", {f}, {{DType::I64, {4}}}, Attrs().s("to", "i64"))[0],
                       {-2, 0, 3, 1});
  expectEqual<int32_t>(runOp("cast", {f}, {{DType::I32, {4}}}, Attrs().s("to", "i32"))[0],
                       {-2, 0, 3, 1});
  expectEqual<uint8_t>(runOp("cast", {f}, {{DType::Bool, {4}}}, Attrs().s("to", "bool"))[0],
                       {1, 0, 1, 1});
  Tensor i = Tensor::fromVector<int64_t>(DType::I64, {3}, {-5, 0, 7});
  expectNear(runOp("cast", {i}, {{DType::F32, {3}}}, Attrs().s("to", "f32"))[0],
             {-5, 0, 7});
  expectEqual<int32_t>(runOp("cast", {i}, {{DType::I32, {3}}}, Attrs().s("to", "i32"))[0],
                       {-5, 0, 7});
  Tensor b = Tensor::fromVector<uint8_t>(DType::Bool, {2}, {1, 0});
  expectNear(runOp("cast", {b}, {{DType::F32, {2}}}, Attrs().s("to", "f32"))[0], {1, 0});
  expectEqual<int64_t>(runOp("cast", {b}, {{DType::I64, {2}}}, Attrs().s("to", "i64"))[0],
                       {1, 0});
}

// Binary ops over a set of broadcasting shape pairs.
struct BinaryCase {
  const char *op;
  std::function<double(double, double)> ref;
};

const std::vector<std::pair<Shape, Shape>> kBroadcastPairs = {
    {{}, {}},
    {{5}, {}},
    {{}, {5}},
    {{4, 7}, {4, 7}},
    {{4, 7}, {7}},
    {{4, 7}, {4, 1}},
    {{1, 7}, {4, 1}},
    {{2, 3, 4, 5}, {1, 3, 1, 5}},
    {{2, 1, 4}, {3, 1}},
    {{2, 12, 16, 16}, {2, 1, 1, 16}}, // attention-mask shape
    {{64, 768}, {768}},               // bias add
    {{300, 257}, {300, 257}},         // large enough to use threads
    {{0, 3}, {3}},                    // empty
};

class BinaryTest : public ::testing::TestWithParam<std::tuple<BinaryCase, int>> {};

TEST_P(BinaryTest, BroadcastsLikeNumpy) {
  const BinaryCase &c = std::get<0>(GetParam());
  int threads = std::get<1>(GetParam());
  std::mt19937 rng(11);
  for (const auto &[as, bs] : kBroadcastPairs) {
    bool pow = std::string(c.op) == "pow";
    Tensor a = randomF32(as, rng, pow ? 0.1f : -3, 3);
    Tensor b = randomF32(bs, rng, pow ? -2 : -3, pow ? 2 : 3);
    if (std::string(c.op) == "div")
      for (int64_t i = 0; i < b.numElements(); ++i)
        if (std::fabs(b.data<float>()[i]) < 0.1f)
          b.data<float>()[i] = 0.5f;
    Shape rs = broadcastShape(as, bs);
    auto out = runOp(c.op, {a, b}, {{DType::F32, rs}}, {}, threads);
    ASSERT_EQ(out.size(), 1u);
    std::vector<double> want;
    for (int64_t i = 0; i < numElements(rs); ++i) {
      auto idx = unravel(i, rs);
      want.push_back(c.ref(a.data<float>()[broadcastIndex(idx, as)],
                           b.data<float>()[broadcastIndex(idx, bs)]));
    }
    SCOPED_TRACE(shapeToString(as) + " op " + shapeToString(bs));
    expectNear(out[0], want, 1e-6, 1e-6);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Ops, BinaryTest,
    ::testing::Combine(
        ::testing::Values(
            BinaryCase{"add", [](double a, double b) { return a + b; }},
            BinaryCase{"sub", [](double a, double b) { return a - b; }},
            BinaryCase{"mul", [](double a, double b) { return a * b; }},
            BinaryCase{"div", [](double a, double b) { return a / b; }},
            BinaryCase{"pow",
                       [](double a, double b) { return std::pow(a, b); }},
            BinaryCase{"max",
                       [](double a, double b) { return std::max(a, b); }},
            BinaryCase{"min",
                       [](double a, double b) { return std::min(a, b); }}),
        ::testing::Values(1, 2)),
    opAndThreads<::testing::TestParamInfo<BinaryTest::ParamType>>);

TEST(Binary, PowScalarExponents) {
  std::mt19937 rng(3);
  Tensor a = randomF32({100}, rng, -3, 3);
  for (float e : {2.0f, 3.0f, 1.0f, -1.0f}) {
    Tensor b = Tensor::fromVector<float>(DType::F32, {}, {e});
    auto out = runOp("pow", {a, b}, {{DType::F32, {100}}});
    std::vector<double> want;
    for (int i = 0; i < 100; ++i)
      want.push_back(std::pow(static_cast<double>(a.data<float>()[i]), e));
    expectNear(out[0], want, 1e-6, 1e-6);
  }
  Tensor pos = randomF32({100}, rng, 0, 3);
  Tensor half = Tensor::fromVector<float>(DType::F32, {1}, {0.5f});
  auto out = runOp("pow", {pos, half}, {{DType::F32, {100}}});
  std::vector<double> want;
  for (int i = 0; i < 100; ++i)
    want.push_back(std::sqrt(static_cast<double>(pos.data<float>()[i])));
  expectNear(out[0], want, 1e-6, 1e-6);
}

TEST(Binary, MaxMinPropagateNaN) {
  Tensor a = Tensor::fromVector<float>(DType::F32, {2}, {NAN, 1.0f});
  Tensor b = Tensor::fromVector<float>(DType::F32, {2}, {1.0f, NAN});
  expectNear(runOp("max", {a, b}, {{DType::F32, {2}}})[0], {NAN, NAN});
  expectNear(runOp("min", {a, b}, {{DType::F32, {2}}})[0], {NAN, NAN});
}

TEST(Binary, Integers) {
  Tensor a = Tensor::fromVector<int64_t>(DType::I64, {2, 3}, {7, -7, 9, 0, 5, -1});
  Tensor b = Tensor::fromVector<int64_t>(DType::I64, {3}, {2, 2, -4});
  expectEqual<int64_t>(runOp("add", {a, b}, {{DType::I64, {2, 3}}})[0],
                       {9, -5, 5, 2, 7, -5});
  expectEqual<int64_t>(runOp("sub", {a, b}, {{DType::I64, {2, 3}}})[0],
                       {5, -9, 13, -2, 3, 3});
  expectEqual<int64_t>(runOp("mul", {a, b}, {{DType::I64, {2, 3}}})[0],
                       {14, -14, -36, 0, 10, 4});
  // Truncating division, as C and ONNX.
  expectEqual<int64_t>(runOp("div", {a, b}, {{DType::I64, {2, 3}}})[0],
                       {3, -3, -2, 0, 2, 0});
  Tensor zero = Tensor::fromVector<int64_t>(DType::I64, {}, {0});
  expectEqual<int64_t>(runOp("div", {b, zero}, {{DType::I64, {3}}})[0], {0, 0, 0});
  Tensor i32a = Tensor::fromVector<int32_t>(DType::I32, {2}, {4, -6});
  Tensor i32b = Tensor::fromVector<int32_t>(DType::I32, {2}, {3, 3});
  expectEqual<int32_t>(runOp("max", {i32a, i32b}, {{DType::I32, {2}}})[0], {4, 3});
}

TEST(Compare, AllPredicatesBroadcast) {
  std::mt19937 rng(5);
  Tensor a = randomI64({3, 4}, rng, -2, 2);
  Tensor b = randomI64({4}, rng, -2, 2);
  Tensor af(DType::F32, {3, 4}), bf(DType::F32, {4});
  for (int i = 0; i < 12; ++i)
    af.data<float>()[i] = static_cast<float>(a.data<int64_t>()[i]);
  for (int i = 0; i < 4; ++i)
    bf.data<float>()[i] = static_cast<float>(b.data<int64_t>()[i]);
  const std::pair<const char *, std::function<bool(double, double)>> preds[] = {
      {"eq", [](double x, double y) { return x == y; }},
      {"ne", [](double x, double y) { return x != y; }},
      {"lt", [](double x, double y) { return x < y; }},
      {"le", [](double x, double y) { return x <= y; }},
      {"gt", [](double x, double y) { return x > y; }},
      {"ge", [](double x, double y) { return x >= y; }}};
  for (const auto &[name, fn] : preds) {
    std::vector<uint8_t> want;
    for (int i = 0; i < 12; ++i)
      want.push_back(fn(static_cast<double>(a.data<int64_t>()[i]),
                        static_cast<double>(b.data<int64_t>()[i % 4])));
    SCOPED_TRACE(name);
    expectEqual<uint8_t>(
        runOp("compare", {a, b}, {{DType::Bool, {3, 4}}}, Attrs().s("predicate", name))[0],
        want);
    expectEqual<uint8_t>(
        runOp("compare", {af, bf}, {{DType::Bool, {3, 4}}}, Attrs().s("predicate", name))[0],
        want);
  }
}

TEST(Where, ThreeWayBroadcast) {
  std::mt19937 rng(9);
  for (int threads : {1, 2}) {
    for (auto [cs, xs, ys] : std::vector<std::tuple<Shape, Shape, Shape>>{
             {{4, 5}, {4, 5}, {4, 5}},
             {{1, 1, 8, 8}, {2, 3, 8, 8}, {}}, // causal mask
             {{3, 1}, {1, 6}, {3, 6}},
             {{200, 300}, {300}, {200, 1}}}) {
      Tensor c = randomBool(cs, rng);
      Tensor x = randomF32(xs, rng), y = randomF32(ys, rng);
      Shape rs = broadcastShape(broadcastShape(cs, xs), ys);
      auto out = runOp("where", {c, x, y}, {{DType::F32, rs}}, {}, threads);
      std::vector<double> want;
      for (int64_t i = 0; i < numElements(rs); ++i) {
        auto idx = unravel(i, rs);
        want.push_back(c.data<uint8_t>()[broadcastIndex(idx, cs)]
                           ? x.data<float>()[broadcastIndex(idx, xs)]
                           : y.data<float>()[broadcastIndex(idx, ys)]);
      }
      expectNear(out[0], want, 0, 0);
    }
  }
  // i64 payload.
  Tensor c = Tensor::fromVector<uint8_t>(DType::Bool, {3}, {1, 0, 1});
  Tensor x = Tensor::fromVector<int64_t>(DType::I64, {3}, {1, 2, 3});
  Tensor y = Tensor::fromVector<int64_t>(DType::I64, {}, {-1});
  expectEqual<int64_t>(runOp("where", {c, x, y}, {{DType::I64, {3}}})[0], {1, -1, 3});
}

// The binary ops, compare and where on f64: exact IEEE operations (pow and
// fmod libm's), broadcast as for f32.
TEST(Binary, F64) {
  std::mt19937 rng(31);
  const Tensor a = randomF64({3, 4}, rng, 0.5, 3.0),
               b = randomF64({4}, rng, 0.5, 3.0);
  struct Case {
    const char *op;
    double (*ref)(double, double);
  };
  const Case cases[] = {
      {"add", [](double x, double y) { return x + y; }},
      {"sub", [](double x, double y) { return x - y; }},
      {"mul", [](double x, double y) { return x * y; }},
      {"div", [](double x, double y) { return x / y; }},
      {"pow", [](double x, double y) { return std::pow(x, y); }},
      {"max", [](double x, double y) { return std::max(x, y); }},
      {"min", [](double x, double y) { return std::min(x, y); }}};
  for (const Case &c : cases) {
    SCOPED_TRACE(c.op);
    auto out = runOp(c.op, {a, b}, {{DType::F64, {3, 4}}});
    std::vector<double> want;
    for (int64_t i = 0; i < 12; ++i)
      want.push_back(c.ref(a.data<double>()[i], b.data<double>()[i % 4]));
    expectNear(out[0], want, 0, 0);
  }
  auto fmod = runOp("fmod", {a, b}, {{DType::F64, {3, 4}}});
  for (int64_t i = 0; i < 12; ++i)
    EXPECT_EQ(fmod[0].data<double>()[i],
              std::fmod(a.data<double>()[i], b.data<double>()[i % 4]));
  // 1 + 2^-40 > 1 in f64, equal in f32: the compare reads f64.
  const Tensor x =
      Tensor::fromVector<double>(DType::F64, {2}, {1.0 + 0x1p-40, 1.0});
  const Tensor one = Tensor::fromVector<double>(DType::F64, {1}, {1.0});
  auto gt = runOp("compare", {x, one}, {{DType::Bool, {2}}},
                  Attrs().s("predicate", "gt"));
  EXPECT_EQ(gt[0].data<uint8_t>()[0], 1);
  EXPECT_EQ(gt[0].data<uint8_t>()[1], 0);
  auto w = runOp("where", {gt[0], x, one}, {{DType::F64, {2}}});
  EXPECT_EQ(w[0].data<double>()[0], 1.0 + 0x1p-40);
}

// The load names the operand whose dtype differs from the one it pairs
// with: a binary op's, where's values', a matmul's, and the result.
TEST(Binary, LoadChecksTheDTypes) {
  auto fails = [](const std::string &op, std::vector<Tensor> operands,
                  DType result, const std::string &needle) {
    std::shared_ptr<const Program> prog;
    Status s = buildOneOp(op, operands, {{result, {2, 2}}}, Attrs(), prog);
    ASSERT_FALSE(s.isOk()) << op << ": expected an error mentioning " << needle;
    EXPECT_NE(s.message().find(needle), std::string::npos) << s.message();
  };
  const Tensor f(DType::F32, {2, 2}), i(DType::I64, {2, 2}),
      c(DType::Bool, {2, 2});
  fails("add", {f, i}, DType::F32, "operand 1 has dtype i64, expected f32");
  fails("add", {f, f}, DType::I64, "result has dtype i64, expected f32");
  fails("where", {c, f, i}, DType::F32,
        "operand 2 has dtype i64, expected f32");
  fails("where", {c, i, i}, DType::F32, "result has dtype f32, expected i64");
  fails("matmul", {f, i}, DType::F32, "operand 1 has dtype i64, expected f32");
  fails("matmul", {f, f}, DType::I64, "result has dtype i64, expected f32");
}

} // namespace
