//===- SimulatorTest.cpp - Step time, bubble and memory -------------------===//
//
// With equal costs and free transfers the simulator must reproduce the known
// closed forms; every expected value below is computed from the formula.
//
//===----------------------------------------------------------------------===//

#include "TestUtils.h"

#include "tessel/Schedule/BufferPlan.h"
#include "tessel/Schedule/Simulator.h"

#include <algorithm>

using namespace tessel::pipeline;
using namespace tessel::pipeline::testing;

namespace {

constexpr double kEps = 1e-9;

SimulationResult run(const Schedule &s, ScheduleCosts costs = {}) {
  return unwrap(simulate(s, costs));
}

/// Every rank's idle time and the step time for p ranks, m microbatches.
void expectEveryRank(const SimulationResult &sim, double bubble) {
  for (size_t r = 0; r < sim.ranks.size(); ++r)
    EXPECT_NEAR(sim.ranks[r].bubbleFraction, bubble, kEps) << "rank " << r;
  EXPECT_NEAR(sim.meanBubbleFraction, bubble, kEps);
}

TEST(SimulatorTest, GPipeAnd1F1BBubbleIsPMinusOneOverMPlusPMinusOne) {
  for (const char *name : {"gpipe", "1f1b"})
    for (int p : {1, 2, 3, 4, 8})
      for (int m : {1, 2, 4, 7, 16}) {
        SCOPED_TRACE(std::string(name) + " p=" + std::to_string(p) +
                     " m=" + std::to_string(m));
        SimulationResult sim = run(build(name, p, m));
        // F = 1, BW = B + W = 2: every rank works 3m of 3(m+p-1).
        EXPECT_NEAR(sim.stepTime, 3.0 * (m + p - 1), kEps);
        expectEveryRank(sim, double(p - 1) / (m + p - 1));
      }
}

TEST(SimulatorTest, InterleavedBubbleIsPMinusOneOverVMPlusPMinusOne) {
  for (int p : {2, 3, 4, 8})
    for (int k : {1, 2, 3})
      for (int v : {1, 2, 3, 4}) {
        int m = k * p;
        SCOPED_TRACE("p=" + std::to_string(p) + " m=" + std::to_string(m) +
                     " v=" + std::to_string(v));
        SimulationResult sim = run(build("interleaved-1f1b", p, m, v));
        EXPECT_NEAR(sim.stepTime, 3.0 * (v * m + p - 1), kEps);
        expectEveryRank(sim, double(p - 1) / (v * m + p - 1));
      }
}

TEST(SimulatorTest, ZeroBubbleH1IdlesAThirdOfOneFOneB) {
  for (int p : {2, 3, 4, 8})
    for (int m : {p, 2 * p, 3 * p + 1}) {
      SCOPED_TRACE("p=" + std::to_string(p) + " m=" + std::to_string(m));
      SimulationResult zb = run(build("zb-h1", p, m));
      SimulationResult ofob = run(build("1f1b", p, m));
      // 1F1B idles (p-1)(F+B+W) per rank, ZB-H1 (p-1)(F+B-W): a third.
      for (int r = 0; r < p; ++r) {
        EXPECT_NEAR(ofob.ranks[r].idleTime, 3.0 * (p - 1), kEps);
        EXPECT_NEAR(zb.ranks[r].idleTime, 1.0 * (p - 1), kEps);
      }
      EXPECT_NEAR(zb.stepTime, 3.0 * m + (p - 1), kEps);
    }
}

TEST(SimulatorTest, GPipeKeepsMActivationsInFlightOneFOneBAtMostP) {
  for (int p : {2, 4, 8})
    for (int m : {1, 3, 8, 16}) {
      SCOPED_TRACE("p=" + std::to_string(p) + " m=" + std::to_string(m));
      SimulationResult g = run(build("gpipe", p, m));
      for (const RankStatistics &st : g.ranks)
        EXPECT_EQ(st.peakActivations, m);
      SimulationResult o = run(build("1f1b", p, m));
      EXPECT_EQ(o.peakActivations, std::min(p, m));
      for (int r = 0; r < p; ++r)
        EXPECT_EQ(o.ranks[r].peakActivations, std::min(p - r, m));
      // ZB-H1 keeps 1F1B's memory.
      SimulationResult z = run(build("zb-h1", p, m));
      EXPECT_EQ(z.peakActivations, std::min(p, m));
    }
}

TEST(SimulatorTest, UnequalCostsScaleTheFormula) {
  // With F = f and BW = b every rank of 1F1B works m(f+b) and waits
  // (p-1)(f+b): the fraction does not depend on the costs.
  ScheduleCosts c;
  c.forward = 2;
  c.backwardInput = 3;
  c.backwardWeight = 1;
  SimulationResult sim = run(build("1f1b", 4, 8), c);
  EXPECT_NEAR(sim.stepTime, 6.0 * (8 + 4 - 1), kEps);
  expectEveryRank(sim, 3.0 / 11.0);
}

TEST(SimulatorTest, PerStageCostsSlowTheStageThatHasThem) {
  // 1F1B, p = 2, m = 4; stage 0: F = 1, BW = 2; stage 1: F = 2, BW = 4.
  // Stage 1 is busy 4 * 6 = 24 and waits only for the first forward (1)
  // and at the end for rank 0's last backward (2): step 27. Worked out by
  // hand.
  llvm::Expected<ScheduleCosts> c = ScheduleCosts::parse("1,2,0;2,4,0");
  ASSERT_TRUE(static_cast<bool>(c));
  SimulationResult sim = run(build("1f1b", 2, 4), *c);
  EXPECT_NEAR(sim.stepTime, 27.0, kEps);
  EXPECT_NEAR(sim.ranks[0].busyTime, 12.0, kEps);
  EXPECT_NEAR(sim.ranks[1].busyTime, 24.0, kEps);
  EXPECT_NEAR(sim.ranks[1].bubbleFraction, 3.0 / 27.0, kEps);
  // A triple per stage, or an error naming both counts.
  llvm::Expected<ScheduleCosts> three = ScheduleCosts::parse("1,1,1;1,1,1;1,1,1");
  ASSERT_TRUE(static_cast<bool>(three));
  llvm::Expected<SimulationResult> bad = simulate(build("1f1b", 2, 4), *three);
  ASSERT_FALSE(static_cast<bool>(bad));
  EXPECT_EQ(llvm::toString(bad.takeError()),
            "per-stage costs name 3 stages, but schedule '1f1b' has 2");
  llvm::Expected<ScheduleCosts> junk = ScheduleCosts::parse("1,1,1;1,x,1");
  ASSERT_FALSE(static_cast<bool>(junk));
  EXPECT_NE(llvm::toString(junk.takeError()).find("stage 1: cost of B"),
            std::string::npos);
}

TEST(SimulatorTest, P2PLatencyAndBandwidthDelayEveryHop) {
  // One microbatch crosses p-1 links forward and p-1 back:
  // step = p(F + BW) + 2(p-1)(latency + bytes/bandwidth).
  const int p = 4;
  ScheduleCosts c;
  c.p2pLatency = 0.5;
  c.p2pBandwidth = 100;
  c.messageBytes = 50;
  for (const char *name : {"gpipe", "1f1b"}) {
    SimulationResult sim = run(build(name, p, 1), c);
    EXPECT_NEAR(sim.stepTime, 3.0 * p + 2.0 * (p - 1) * 1.0, kEps) << name;
  }
}

TEST(SimulatorTest, OptimizerStepCostsTime) {
  ScheduleCosts c;
  c.optimizerStep = 5;
  SimulationResult sim = run(build("gpipe", 2, 2), c);
  EXPECT_NEAR(sim.stepTime, 3.0 * (2 + 2 - 1) + 5, kEps);
}

TEST(SimulatorTest, ComputeOnlyScheduleIsTimedLikeTheCompletedOne) {
  Schedule s = parse("rank 0: 0F0 0F1 0BW0 0BW1 0STEP\n"
                     "rank 1: 1F0 1BW0 1F1 1BW1 1STEP\n");
  EXPECT_NEAR(run(s).stepTime, 3.0 * (2 + 2 - 1), kEps);
}

TEST(SimulatorTest, ActionTimesAreRecorded) {
  SimulationResult sim = run(build("gpipe", 2, 1));
  // rank 0: 0F0 [0,1), 0SEND_F0 at 1, 0RECV_B0 ends at 4, 0BW0 [4,6).
  EXPECT_NEAR(sim.getStart(0, 0), 0, kEps);
  EXPECT_NEAR(sim.getEnd(0, 0), 1, kEps);
  EXPECT_NEAR(sim.getEnd(1, 1), 2, kEps); // 1F0
  EXPECT_NEAR(sim.stepTime, 6, kEps);
}

TEST(SimulatorTest, RefusesNegativeCosts) {
  ScheduleCosts c;
  c.backwardWeight = -1;
  EXPECT_EQ(errorOf(simulate(build("gpipe", 1, 1), c)),
            "weight-gradient backward cost must be a non-negative number, got "
            "-1");
}

TEST(SimulatorTest, ParsesCosts) {
  ScheduleCosts c = unwrap(ScheduleCosts::parse("1,2.5,0.5"));
  EXPECT_EQ(c.forward, 1);
  EXPECT_EQ(c.backwardInput, 2.5);
  EXPECT_EQ(c.backwardWeight, 0.5);
  EXPECT_EQ(c.getCost(ActionKind::FullBackward), 3);
  EXPECT_EQ(errorOf(ScheduleCosts::parse("1,2")),
            "costs must be three numbers F,B,W, got '1,2'");
  EXPECT_EQ(errorOf(ScheduleCosts::parse("1,x,2")),
            "cost of B must be a non-negative number, got 'x'");
  EXPECT_EQ(errorOf(ScheduleCosts::parse("1,1,-2")),
            "cost of W must be a non-negative number, got '-2'");
}

TEST(SimulatorTest, BufferPlanReusesSlots) {
  // GPipe holds all m activations; 1F1B's rank 0 holds p (its receives are
  // posted early on later ranks, so those may hold one more).
  Schedule g = build("gpipe", 2, 5);
  BufferPlan gp = planBuffers(g);
  EXPECT_EQ(gp.slotsPerRank[0], 5);
  Schedule o = build("1f1b", 4, 12);
  BufferPlan op = planBuffers(o);
  EXPECT_EQ(op.slotsPerRank[0], 4);
  for (int r = 0; r < 4; ++r)
    EXPECT_LE(op.slotsPerRank[r], 4);
  // A slot is never shared by two live microbatches: in 1F1B on rank 0,
  // microbatch k and k+4 reuse the same slot.
  EXPECT_EQ(op.getSlot(0, 0), op.getSlot(0, 4));
  EXPECT_NE(op.getSlot(0, 0), op.getSlot(0, 1));
}

} // namespace
