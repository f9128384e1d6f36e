//===- FusedElementwiseTest.cpp - fused_elementwise on the CPU ------------===//
//
// Inputs of each kind (whole, one element, trailing dims whose period does
// not divide the kernel's block) over many blocks and both thread counts,
// against the same float arithmetic written out; the load-time checks'
// messages for programs that do not fit. (test/E2E/fused-elementwise.test
// compares every op fused and unfused, bit for bit.)
//
//===----------------------------------------------------------------------===//
#include "TestUtil.h"

using namespace tessel::runtime;
using namespace tessel::runtime::test;

namespace {

constexpr int64_t kAdd = 20, kSub = 21, kMul = 22, kTanh = 6, kNeg = 1;

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

TEST(FusedElementwise, LoadTimeChecksNameWhatDoesNotFit) {
  std::mt19937 rng(12);
  Tensor x = randomF32({4, 6}, rng), m = randomF32({4, 1}, rng);
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
