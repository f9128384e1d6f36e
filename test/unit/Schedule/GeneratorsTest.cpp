//===- GeneratorsTest.cpp - Built-in schedule generators ------------------===//

#include "TestUtils.h"

#include "tessel/Schedule/Generators.h"
#include "tessel/Schedule/Verifier.h"

#include "llvm/ADT/StringExtras.h"

using namespace tessel::pipeline;
using namespace tessel::pipeline::testing;

namespace {

std::vector<std::string> tokens(const Schedule &s, int32_t rank) {
  std::vector<std::string> out;
  for (const Action &a : s.getActions(rank))
    out.push_back(formatAction(a));
  return out;
}

std::string line(const Schedule &s, int32_t rank) {
  return llvm::join(tokens(s, rank), " ");
}

/// Expects the action lists of ranks 0, 1, ... to be `lines`.
void expectLines(const Schedule &s, llvm::ArrayRef<const char *> lines) {
  ASSERT_EQ(size_t(s.getNumRanks()), lines.size());
  for (size_t r = 0; r < lines.size(); ++r)
    EXPECT_EQ(line(s, int32_t(r)), lines[r]) << "rank " << r;
}

TEST(GeneratorsTest, GPipeRunsAllForwardsThenAllBackwards) {
  expectLines(unwrap(generateGPipe(options(2, 3))),
              {"0F0 0F1 0F2 0BW0 0BW1 0BW2 0STEP",
               "1F0 1F1 1F2 1BW0 1BW1 1BW2 1STEP"});
}

TEST(GeneratorsTest, OneFOneBWarmsUpWithPMinusOneMinusRankForwards) {
  expectLines(unwrap(generateOneFOneB(options(3, 4))),
              {"0F0 0F1 0F2 0BW0 0F3 0BW1 0BW2 0BW3 0STEP",
               "1F0 1F1 1BW0 1F2 1BW1 1F3 1BW2 1BW3 1STEP",
               "2F0 2BW0 2F1 2BW1 2F2 2BW2 2F3 2BW3 2STEP"});
}

TEST(GeneratorsTest, OneFOneBWithFewerMicrobatchesThanStages) {
  expectLines(unwrap(generateOneFOneB(options(4, 2))),
              {"0F0 0F1 0BW0 0BW1 0STEP", "1F0 1F1 1BW0 1BW1 1STEP",
               "2F0 2F1 2BW0 2BW1 2STEP", "3F0 3BW0 3F1 3BW1 3STEP"});
}

TEST(GeneratorsTest, ZeroBubbleH1SplitsBackwardAndDelaysW) {
  // Slot x: F_x, B_{x-(p-1-r)}, W_{x-(p-1)}.
  expectLines(unwrap(generateZeroBubbleH1(options(3, 4))),
              {"0F0 0F1 0F2 0B0 0W0 0F3 0B1 0W1 0B2 0W2 0B3 0W3 0STEP",
               "1F0 1F1 1B0 1F2 1B1 1W0 1F3 1B2 1W1 1B3 1W2 1W3 1STEP",
               "2F0 2B0 2F1 2B1 2F2 2B2 2W0 2F3 2B3 2W1 2W2 2W3 2STEP"});
}

TEST(GeneratorsTest, InterleavedUsesMegatronPlacementAndOrder) {
  Schedule s = unwrap(generateInterleavedOneFOneB(options(2, 4, 2)));
  ASSERT_EQ(s.getNumStages(), 4);
  // Stage s on rank s % p, as chunk s / p.
  EXPECT_EQ(s.getRank(3), 1);
  EXPECT_EQ(s.getChunk(3), 1);
  EXPECT_EQ(s.getRank(2), 0);
  EXPECT_EQ(s.getChunk(2), 1);
  // Rank 0: warm-up (p-r-1)*2 + (v-1)*p = 4 forwards: chunk 0 on mb 0,1,
  // chunk 1 on mb 0,1; then 1F1B over virtual microbatches, backwards
  // visiting chunk 1 first.
  EXPECT_EQ(line(s, 0), "0F0 0F1 2F0 2F1 0F2 2BW0 0F3 2BW1 2F2 0BW0 2F3 0BW1 "
                        "2BW2 2BW3 0BW2 0BW3 0STEP 2STEP");
}

TEST(GeneratorsTest, InterleavedWithOneChunkIsOneFOneB) {
  Schedule a = unwrap(generateInterleavedOneFOneB(options(4, 8, 1)));
  Schedule b = unwrap(generateOneFOneB(options(4, 8)));
  for (int32_t r = 0; r < 4; ++r)
    EXPECT_EQ(line(a, r), line(b, r));
}

TEST(GeneratorsTest, EveryBuiltinVerifiesOverASweep) {
  for (int32_t p = 1; p <= 6; ++p) {
    for (int32_t m = 1; m <= 12; ++m) {
      for (const char *name : {"gpipe", "1f1b", "zb-h1"}) {
        Schedule s = build(name, p, m);
        EXPECT_TRUE(verifySchedule(s).empty())
            << name << " p=" << p << " m=" << m;
      }
      if (m % p != 0)
        continue;
      for (int32_t v = 1; v <= 3; ++v) {
        Schedule s = build("interleaved-1f1b", p, m, v);
        EXPECT_TRUE(verifySchedule(s).empty())
            << "interleaved p=" << p << " m=" << m << " v=" << v;
      }
    }
  }
}

TEST(GeneratorsTest, ActionCounts) {
  // F + BW per (stage, microbatch), one STEP per stage, and for each of the
  // p*v-1 stage boundaries one send and one receive each way per microbatch.
  const int32_t p = 4, m = 8, v = 2;
  Schedule s = build("interleaved-1f1b", p, m, v);
  const size_t stages = p * v;
  EXPECT_EQ(s.size(), stages * m * 2 + stages + (stages - 1) * m * 4);
  Schedule z = build("zb-h1", p, m);
  EXPECT_EQ(z.size(), size_t(p) * m * 3 + p + (p - 1) * m * 4);
}

TEST(GeneratorsTest, RefusesBadOptions) {
  EXPECT_EQ(errorOf(generateGPipe(options(0, 4))),
            "number of stages must be at least 1, got 0");
  EXPECT_EQ(errorOf(generateOneFOneB(options(2, 0))),
            "number of microbatches must be at least 1, got 0");
  EXPECT_EQ(errorOf(generateGPipe(options(2, 4, 2))),
            "gpipe takes one chunk per rank, got 2 (interleaved-1f1b runs "
            "several)");
  EXPECT_EQ(errorOf(generateInterleavedOneFOneB(options(4, 6, 2))),
            "interleaved-1f1b needs the number of microbatches to be a "
            "multiple of the number of stages: 6 is not a multiple of 4");
  EXPECT_EQ(errorOf(generateInterleavedOneFOneB(options(2, 4, 0))),
            "number of chunks must be at least 1, got 0");
  EXPECT_NE(errorOf(generateOneFOneB(options(1 << 20, 1 << 20)))
                .find("schedule too large"),
            std::string::npos);
}

} // namespace
