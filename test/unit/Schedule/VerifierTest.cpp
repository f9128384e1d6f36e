//===- VerifierTest.cpp - Refusing bad schedules --------------------------===//
//
// Each test breaks one rule of Verifier.h (V1..V6) and checks that the
// message names the rank, the position and the action.
//
//===----------------------------------------------------------------------===//

#include "TestUtils.h"

#include "tessel/Schedule/Verifier.h"

using namespace tessel::pipeline;
using namespace tessel::pipeline::testing;

namespace {

/// 1F1B on 2 ranks and 2 microbatches with its sends and receives; valid.
constexpr const char *kValid =
    "rank 0: 0F0 0SEND_F0 0F1 0SEND_F1 0RECV_B0 0BW0 0RECV_B1 0BW1 0STEP\n"
    "rank 1: 1RECV_F0 1F0 1RECV_F1 1BW0 1SEND_B0 1F1 1BW1 1SEND_B1 1STEP\n";

std::vector<std::string> messages(const Schedule &s) {
  std::vector<std::string> out;
  for (const ScheduleDiagnostic &d : verifySchedule(s))
    out.push_back(d.message);
  return out;
}

std::string firstMessage(llvm::StringRef text) {
  std::vector<std::string> m = messages(parse(text));
  if (m.empty()) {
    ADD_FAILURE() << "expected the verifier to refuse:\n" << text.str();
    return "";
  }
  return m.front();
}

TEST(VerifierTest, AcceptsValidSchedule) {
  EXPECT_TRUE(messages(parse(kValid)).empty());
  EXPECT_FALSE(static_cast<bool>(verify(parse(kValid))));
}

TEST(VerifierTest, AcceptsComputeOnlySchedule) {
  EXPECT_TRUE(messages(parse("rank 0: 0F0 0F1 0BW0 0BW1 0STEP\n"
                             "rank 1: 1F0 1BW0 1F1 1BW1 1STEP\n"))
                  .empty());
}

// V1.
TEST(VerifierTest, V1StageOnAnotherRank) {
  Schedule s = unwrap(Schedule::createLooped("x", 2, 1, 1));
  s.append(0, Action::forward(1, 0));
  std::vector<ScheduleDiagnostic> d = verifySchedule(s);
  ASSERT_FALSE(d.empty());
  EXPECT_EQ(d[0].rank, 0);
  EXPECT_EQ(d[0].position, 0);
  EXPECT_EQ(d[0].message,
            "rank 0, position 0 (1F0): stage 1 belongs to rank 1");
}

TEST(VerifierTest, V1MicrobatchOutOfRange) {
  Schedule s = unwrap(Schedule::createLooped("x", 1, 1, 2));
  s.append(0, Action::forward(0, 0));
  s.append(0, Action::forward(0, 2));
  EXPECT_EQ(messages(s)[0],
            "rank 0, position 1 (0F2): microbatch 2 is out of range [0, 2)");
}

TEST(VerifierTest, V1StageOutOfRange) {
  Schedule s = unwrap(Schedule::createLooped("x", 1, 1, 1));
  s.append(0, Action::forward(3, 0));
  EXPECT_EQ(messages(s)[0],
            "rank 0, position 0 (3F0): stage 3 is out of range [0, 1)");
}

TEST(VerifierTest, V1LastStageSendsNoActivation) {
  EXPECT_EQ(firstMessage("rank 0: 0F0 0BW0 0STEP\n"
                         "rank 1: 1F0 1SEND_F0 1BW0 1STEP\n"),
            "rank 1, position 1 (1SEND_F0): the last stage sends no "
            "activation");
}

TEST(VerifierTest, V1FirstStageReceivesNoActivation) {
  EXPECT_EQ(firstMessage("rank 0: 0RECV_F0 0F0 0BW0 0STEP\n"
                         "rank 1: 1F0 1BW0 1STEP\n"),
            "rank 0, position 0 (0RECV_F0): the first stage receives no "
            "activation");
}

TEST(VerifierTest, V1NoMessagesBetweenStagesOfOneRank) {
  EXPECT_EQ(firstMessage("rank 0: 0F0 0SEND_F0 1F0 1BW0 0BW0 0STEP 1STEP\n"),
            "rank 0, position 1 (0SEND_F0): stages 0 and 1 both sit on rank "
            "0 and exchange nothing");
}

// V2.
TEST(VerifierTest, V2Duplicate) {
  EXPECT_EQ(firstMessage("rank 0: 0F0 0F0 0BW0 0STEP\n"),
            "rank 0, position 1 (0F0): appears twice (first at position 0)");
}

TEST(VerifierTest, V2MissingForward) {
  EXPECT_EQ(firstMessage("rank 0: 0F0 0BW0 0BW1 0STEP\n"),
            "rank 0: missing 0F1");
}

TEST(VerifierTest, V2MissingBackward) {
  EXPECT_EQ(firstMessage("rank 0: 0F0 0F1 0BW0 0STEP\n"),
            "rank 0: missing the backward of stage 0 microbatch 1 (0BW1, or "
            "0B1 and 0W1)");
}

TEST(VerifierTest, V2BothFullAndSplitBackward) {
  EXPECT_EQ(firstMessage("rank 0: 0F0 0B0 0BW0 0W0 0STEP\n"),
            "rank 0, position 2 (0BW0): stage 0 microbatch 0 also has the "
            "split backward 0B0 at position 1");
}

TEST(VerifierTest, V2InputGradientWithoutWeightGradient) {
  EXPECT_EQ(firstMessage("rank 0: 0F0 0B0 0STEP\n"),
            "rank 0, position 1 (0B0): has no weight-gradient 0W0");
}

TEST(VerifierTest, V2MissingOptimizerStep) {
  EXPECT_EQ(firstMessage("rank 0: 0F0 0BW0\n"),
            "rank 0: missing the optimizer step 0STEP of stage 0");
}

// V3.
TEST(VerifierTest, V3BackwardBeforeForward) {
  EXPECT_EQ(firstMessage("rank 0: 0BW0 0F0 0STEP\n"),
            "rank 0, position 0 (0BW0): runs before its forward 0F0 at "
            "position 1");
}

TEST(VerifierTest, V3WeightGradientBeforeInputGradient) {
  EXPECT_EQ(firstMessage("rank 0: 0F0 0W0 0B0 0STEP\n"),
            "rank 0, position 1 (0W0): runs before its input-gradient "
            "backward 0B0 at position 2");
}

TEST(VerifierTest, V3OptimizerStepBeforeLastWeightGradient) {
  EXPECT_EQ(firstMessage("rank 0: 0F0 0F1 0B0 0B1 0W0 0STEP 0W1\n"),
            "rank 0, position 5 (0STEP): runs before the last backward of "
            "stage 0, 0W1 at position 6");
}

// V4.
TEST(VerifierTest, V4ForwardBeforeItsProducerOnTheSameRank) {
  EXPECT_EQ(firstMessage("rank 0: 1F0 0F0 1BW0 0BW0 0STEP 1STEP\n"),
            "rank 0, position 0 (1F0): runs before 0F0 at position 1, whose "
            "output it needs");
}

TEST(VerifierTest, V4BackwardBeforeTheNextStagesBackwardOnTheSameRank) {
  EXPECT_EQ(firstMessage("rank 0: 0F0 1F0 0BW0 1BW0 0STEP 1STEP\n"),
            "rank 0, position 2 (0BW0): runs before 1BW0 at position 3, "
            "whose output it needs");
}

// V5.
TEST(VerifierTest, V5MissingReceive) {
  EXPECT_EQ(
      firstMessage(
          "rank 0: 0F0 0SEND_F0 0F1 0SEND_F1 0RECV_B0 0BW0 0RECV_B1 0BW1 "
          "0STEP\n"
          "rank 1: 1RECV_F0 1F0 1BW0 1SEND_B0 1F1 1BW1 1SEND_B1 1STEP\n"),
      "rank 1, position 4 (1F1): needs the activation of 0F1 from rank 0 but "
      "no 1RECV_F1 comes before it");
}

TEST(VerifierTest, V5ReceiveAfterItsConsumer) {
  EXPECT_EQ(
      firstMessage(
          "rank 0: 0F0 0SEND_F0 0F1 0SEND_F1 0RECV_B0 0BW0 0RECV_B1 0BW1 "
          "0STEP\n"
          "rank 1: 1RECV_F0 1F0 1BW0 1SEND_B0 1F1 1RECV_F1 1BW1 1SEND_B1 "
          "1STEP\n"),
      "rank 1, position 5 (1RECV_F1): comes after 1F1 at position 4, which "
      "needs it");
}

TEST(VerifierTest, V5ReceiveWithoutSend) {
  EXPECT_EQ(
      firstMessage(
          "rank 0: 0F0 0SEND_F0 0F1 0SEND_F1 0RECV_B0 0BW0 0RECV_B1 0BW1 "
          "0STEP\n"
          "rank 1: 1RECV_F0 1F0 1RECV_F1 1BW0 1SEND_B0 1F1 1BW1 1STEP\n"),
      "rank 0, position 6 (0RECV_B1): has no matching 1SEND_B1 on rank 1");
}

TEST(VerifierTest, V5SendBeforeItsProducer) {
  EXPECT_EQ(firstMessage(
                "rank 0: 0SEND_F0 0F0 0F1 0SEND_F1 0RECV_B0 0BW0 0RECV_B1 0BW1 "
                "0STEP\n"
                "rank 1: 1RECV_F0 1F0 1RECV_F1 1BW0 1SEND_B0 1F1 1BW1 1SEND_B1 "
                "1STEP\n"),
            "rank 0, position 0 (0SEND_F0): runs before 0F0 at position 1 "
            "produces what it sends");
}

// V6.
TEST(VerifierTest, V6DeadlockUnderBlockingSendRecv) {
  // Megatron's 1F1B with every send and receive blocking on its own: rank 0
  // sends F1 while rank 1 sends B0; neither receives.
  std::vector<std::string> m = messages(parse(
      "rank 0: 0F0 0SEND_F0 0F1 0SEND_F1 0RECV_B0 0BW0 0RECV_B1 0BW1 0STEP\n"
      "rank 1: 1RECV_F0 1F0 1BW0 1SEND_B0 1RECV_F1 1F1 1BW1 1SEND_B1 "
      "1STEP\n"));
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m[0], "rank 0, position 3 (0SEND_F1): deadlock under blocking "
                  "send/recv: waits for 1RECV_F1 at rank 1, position 4, "
                  "which is blocked at position 3 (1SEND_B0)");
  EXPECT_EQ(m[1], "rank 1, position 3 (1SEND_B0): deadlock under blocking "
                  "send/recv: waits for 0RECV_B0 at rank 0, position 4, "
                  "which is blocked at position 3 (0SEND_F1)");
}

TEST(VerifierTest, V6DeadlockWithoutSendsAndReceives) {
  EXPECT_EQ(firstMessage("rank 0: 0F0 0BW0 0F1 0BW1 0STEP\n"
                         "rank 1: 1F1 1F0 1BW0 1BW1 1STEP\n"),
            "rank 0, position 1 (0BW0): deadlock: waits for 1BW0 at rank 1, "
            "position 2, which is blocked at position 0 (1F1)");
}

TEST(VerifierTest, ErrorListsDiagnosticsUnderTheScheduleName) {
  std::string msg = errorOf(verify(parse("rank 0: 0F0 0F0 0BW0 0BW0 0STEP\n")));
  EXPECT_EQ(msg, "schedule 'test' is invalid:\n"
                 "  rank 0, position 1 (0F0): appears twice (first at "
                 "position 0)\n"
                 "  rank 0, position 3 (0BW0): appears twice (first at "
                 "position 2)");
}

TEST(VerifierTest, StopsAtMaxDiagnostics) {
  Schedule s = unwrap(Schedule::createLooped("x", 1, 1, 100));
  EXPECT_EQ(verifySchedule(s, 5).size(), 5u);
}

} // namespace
