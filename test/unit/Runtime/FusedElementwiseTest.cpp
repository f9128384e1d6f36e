//===- FusedElementwiseTest.cpp - fused_elementwise on the CPU ------------===//
//
// Inputs of each kind (whole, one element, trailing dims whose period does
// not divide the kernel's block) over many blocks and both thread counts,
// against the same float arithmetic written out; bf16 and f16 inputs and
// results with the casts between them; the load-time checks' messages for
// programs that do not fit. (test/E2E/fused-elementwise.test
// compares every op fused and unfused, bit for bit.)
//
//===----------------------------------------------------------------------===//
#include "TestUtil.h"
#include "tessel/runtime/HalfFloat.h"

using namespace tessel::runtime;
using namespace tessel::runtime::test;

namespace {

constexpr int64_t kAdd = 20, kSub = 21, kMul = 22, kTanh = 6, kNeg = 1,
                  kCast = 14;

Tensor randomHalf(DType t, const Shape &shape, std::mt19937 &rng) {
  Tensor f = randomF32(shape, rng);
  Tensor h(t, shape);
  for (int64_t i = 0; i < f.numElements(); ++i)
    h.data<uint16_t>()[i] = f32ToHalf(t, f.data<float>()[i]);
  return h;
}

TEST(FusedElementwise, InputsOfEveryKindOverManyBlocks) {
  std::mt19937 rng(11);
  // [40, 33]: 1320 elements, six blocks of 256; b's period 33 wraps inside
  // and across blocks.
  Tensor x = randomF32({40, 33}, rng), b = randomF32({1, 33}, rng),
         s = randomF32({}, rng), y = randomF32({40, 33}, rng);
  // ((x + b) * s - y) then tanh, then neg: values 4.. are the results.
  const std::vector<int64_t> program = {kAdd, 0, 1, 0,  kMul, 4, 2, 0,
                                        kSub, 5, 3, 0,  kTanh, 6, -1, 0,
                                        kNeg, 7, -1, 0};
  for (int threads : {1, 2}) {
    auto out = runOp("fused_elementwise", {x, b, s, y},
                     {{DType::F32, {40, 33}}},
                     Attrs().is("program", program), threads);
    ASSERT_EQ(out[0].numElements(), 1320);
    for (int64_t e = 0; e < 1320; ++e) {
      const float t = (x.data<float>()[e] + b.data<float>()[e % 33]) *
                          s.data<float>()[0] -
                      y.data<float>()[e];
      EXPECT_NEAR(out[0].data<float>()[e], -std::tanh(t),
                  2e-7f * (1.0f + std::fabs(std::tanh(t))))
          << "element " << e << " threads " << threads;
    }
  }
}

// A bf16 model's chain: inputs bf16 (whole), f16 (trailing dims, a period
// that wraps inside blocks) and bf16 (one element); an inner cast to bf16
// rounds; the result is stored as bf16 or, in a second program, f32.
TEST(FusedElementwise, HalfInputsAndResults) {
  std::mt19937 rng(13);
  Tensor x = randomHalf(DType::BF16, {40, 33}, rng),
         b = randomHalf(DType::F16, {33}, rng),
         s = randomHalf(DType::BF16, {}, rng);
  auto at = [](const Tensor &t, int64_t i) {
    return halfToF32(t.dtype(), t.data<uint16_t>()[i]);
  };
  // v3..5 = the inputs as f32; v6 = x + b; v7 = v6 rounded to bf16, v8
  // widened; v9 = tanh(v8); v10 = v9 * s; v11 = v10 to the result's type.
  const std::vector<int64_t> head = {kCast, 0, -1, 0, kCast, 1, -1, 0,
                                     kCast, 2, -1, 0, kAdd, 3, 4, 0,
                                     kCast, 6, -1, 1, kCast, 7, -1, 0,
                                     kTanh, 8, -1, 0, kMul, 9, 5, 0};
  for (DType result : {DType::BF16, DType::F32}) {
    std::vector<int64_t> program = head;
    program.insert(program.end(),
                   {kCast, 10, -1, result == DType::BF16 ? 1 : 0});
    for (int threads : {1, 2}) {
      auto out = runOp("fused_elementwise", {x, b, s}, {{result, {40, 33}}},
                       Attrs().is("program", program), threads);
      ASSERT_EQ(out[0].dtype(), result);
      for (int64_t e = 0; e < 1320; ++e) {
        const float sum = bf16ToF32(f32ToBf16(at(x, e) + at(b, e % 33)));
        const float want = std::tanh(sum) * at(s, 0);
        const float got = result == DType::BF16
                              ? bf16ToF32(out[0].data<uint16_t>()[e])
                              : out[0].data<float>()[e];
        const float bound =
            result == DType::BF16 ? 0x1p-8f * std::fabs(want) + 1e-30f
                                  : 2e-7f * (1.0f + std::fabs(want));
        EXPECT_NEAR(got, want, bound) << "element " << e;
      }
    }
  }
}

TEST(FusedElementwise, LoadTimeChecksNameWhatDoesNotFit) {
  std::mt19937 rng(12);
  Tensor x = randomF32({4, 6}, rng), m = randomF32({4, 1}, rng),
         h = randomHalf(DType::BF16, {4, 6}, rng);
  Tensor i(DType::I64, {4, 6});
  struct Case {
    std::vector<Tensor> in;
    std::vector<int64_t> program;
    const char *want;
  };
  const std::vector<Case> cases = {
      {{x}, {}, "program must hold 1 to 32 instructions"},
      {{x, x}, {kAdd, 0, 5, 0}, "instruction 0: reads values 0, 5 of the 2"},
      {{x}, {kTanh, 0, 0, 0}, "instruction 0: reads values 0, 0"},
      {{x}, {40, 0, 0, 0}, "instruction 0: kind 40 is no unary or binary"},
      {{x}, {kTanh, 0, -1, 1}, "instruction 0: flag 1 is not 0"},
      // [4, 1] against [4, 6]: a middle broadcast, not trailing dims.
      {{x, m}, {kAdd, 0, 1, 0}, "input 1 has shape [4, 1]"},
      {{x}, {kCast, 0, -1, 3}, "instruction 0: cast to 3: the target is 0"},
      {{h}, {kNeg, 0, -1, 0},
       "instruction 0: reads value 0 of bf16: only a cast reads a half"},
      {{x}, {kCast, 0, -1, 1}, "the result is f32, the last instruction's "
                               "value bf16"},
      {{i}, {kCast, 0, -1, 0}, "operand has dtype i64, expected f32|bf16|f16"},
  };
  for (const Case &c : cases) {
    std::shared_ptr<const Program> prog;
    Status st = buildOneOp("fused_elementwise", c.in, {{DType::F32, {4, 6}}},
                           Attrs().is("program", c.program), prog);
    ASSERT_FALSE(st.isOk()) << c.want;
    EXPECT_NE(st.message().find(c.want), std::string::npos) << st.message();
  }
}

} // namespace
