//===- CommunicationTest.cpp - Inserting sends and receives ---------------===//

#include "TestUtils.h"

#include "tessel/Schedule/Communication.h"
#include "tessel/Schedule/Generators.h"
#include "tessel/Schedule/Verifier.h"

#include <map>

using namespace tessel::pipeline;
using namespace tessel::pipeline::testing;

namespace {

TEST(CommunicationTest, OneFOneBGetsADeadlockFreeOrder) {
  Schedule s = unwrap(generateOneFOneB(ScheduleOptions{2, 2, 1}));
  llvm::cantFail(insertCommunication(s));
  // Rank 1 receives microbatch 1's activation before it sends microbatch 0's
  // gradient: the order in which rank 0 sends and receives them.
  EXPECT_EQ(formatSchedule(s).substr(formatSchedule(s).find('\n') + 1),
            "rank 0: 0F0 0SEND_F0 0F1 0SEND_F1 0RECV_B0 0BW0 0RECV_B1 0BW1 "
            "0STEP\n"
            "rank 1: 1RECV_F0 1F0 1RECV_F1 1BW0 1SEND_B0 1F1 1BW1 1SEND_B1 "
            "1STEP\n");
  EXPECT_TRUE(verifySchedule(s).empty());
}

TEST(CommunicationTest, EverySendHasOneReceiveWithTheSameTag) {
  Schedule s = build("interleaved-1f1b", 3, 6, 2);
  std::map<int64_t, int> sends, recvs;
  for (int32_t r = 0; r < s.getNumRanks(); ++r)
    for (const Action &a : s.getActions(r)) {
      if (isSend(a.kind)) {
        ++sends[s.getMessageTag(a)];
        EXPECT_NE(s.getPeerRank(a), r);
      }
      if (isRecv(a.kind))
        ++recvs[s.getMessageTag(a)];
    }
  EXPECT_EQ(sends, recvs);
  for (const auto &[tag, n] : sends)
    EXPECT_EQ(n, 1) << tag;
  // 5 stage boundaries, 6 microbatches, both directions.
  EXPECT_EQ(sends.size(), 5u * 6u * 2u);
}

TEST(CommunicationTest, MatchingActionsPair) {
  Action send{ActionKind::SendForward, 1, 3};
  Action recv = Schedule::getMatchingAction(send);
  EXPECT_EQ(formatAction(recv), "2RECV_F3");
  EXPECT_EQ(Schedule::getMatchingAction(recv), send);
  Action g{ActionKind::SendBackward, 2, 0};
  EXPECT_EQ(formatAction(Schedule::getMatchingAction(g)), "1RECV_B0");
}

TEST(CommunicationTest, NoMessagesBetweenStagesOfOneRank) {
  Schedule s = parse("rank 0: 0F0 1F0 1BW0 0BW0 0STEP 1STEP\n");
  Schedule done = unwrap(finalizeSchedule(s));
  EXPECT_FALSE(done.hasCommunication());
}

TEST(CommunicationTest, RefusesAScheduleThatHasMessages) {
  Schedule s = build("gpipe", 2, 2);
  EXPECT_EQ(errorOf(insertCommunication(s)),
            "schedule 'gpipe' already lists its sends and receives");
}

TEST(CommunicationTest, FinalizeRefusesADeadlockingComputeOrder) {
  Schedule s = parse("rank 0: 0F0 0BW0 0F1 0BW1 0STEP\n"
                     "rank 1: 1F1 1F0 1BW0 1BW1 1STEP\n");
  std::string msg = errorOf(finalizeSchedule(s));
  EXPECT_NE(msg.find("deadlock"), std::string::npos) << msg;
}

} // namespace
