//===- TextFormatTest.cpp - Text and CSV forms of schedules ---------------===//

#include "TestUtils.h"

#include "tessel/Schedule/Verifier.h"

using namespace tessel::pipeline;
using namespace tessel::pipeline::testing;

namespace {

TEST(TextFormatTest, ActionTokensRoundTrip) {
  for (const char *token : {"0F0", "1B0", "12W345", "3BW7", "2SEND_F3",
                            "3RECV_F3", "1SEND_B0", "0RECV_B0", "4STEP"}) {
    Action a = unwrap(parseAction(token));
    EXPECT_EQ(formatAction(a), token);
  }
  Action a = unwrap(parseAction("2SEND_F3"));
  EXPECT_EQ(a.kind, ActionKind::SendForward);
  EXPECT_EQ(a.stage, 2);
  EXPECT_EQ(a.microbatch, 3);
  EXPECT_EQ(unwrap(parseAction("0STEP")).microbatch, -1);
  // PyTorch's long name of the fused backward.
  EXPECT_EQ(unwrap(parseAction("1FULL_BACKWARD2")), Action::fullBackward(1, 2));
}

TEST(TextFormatTest, RefusesMalformedActions) {
  EXPECT_EQ(errorOf(parseAction("F0")),
            "action 'F0' does not start with a stage index");
  EXPECT_EQ(errorOf(parseAction("0X1")),
            "action '0X1' has unknown kind 'X' (expected F, B, W, BW, SEND_F, "
            "RECV_F, SEND_B, RECV_B or STEP)");
  EXPECT_EQ(errorOf(parseAction("0F")),
            "action '0F' has no microbatch index after 'F'");
  EXPECT_EQ(errorOf(parseAction("0STEP1")),
            "action '0STEP1' is an optimizer step and takes no microbatch");
  EXPECT_EQ(errorOf(parseAction("0F1x")), "action '0F1x' has trailing 'x'");
  EXPECT_EQ(errorOf(parseAction("0F99999999999")),
            "action '0F99999999999' has a microbatch index '99999999999' that "
            "is too large");
}

TEST(TextFormatTest, GeneratedSchedulesRoundTrip) {
  for (const char *name : {"gpipe", "1f1b", "zb-h1"}) {
    Schedule s = build(name, 4, 6);
    Schedule back = parse(formatSchedule(s));
    EXPECT_EQ(back, s) << name;
    EXPECT_EQ(formatSchedule(back).substr(formatSchedule(back).find('\n')),
              formatSchedule(s).substr(formatSchedule(s).find('\n')));
  }
  Schedule s = build("interleaved-1f1b", 4, 8, 3);
  Schedule back = parse(formatSchedule(s));
  EXPECT_EQ(back, s);
  EXPECT_EQ(back.getChunk(9), 2);
}

TEST(TextFormatTest, PrintsOneLinePerRank) {
  Schedule s = build("gpipe", 2, 1);
  EXPECT_EQ(formatSchedule(s),
            "# schedule 'gpipe': 2 ranks, 2 stages, 1 microbatches\n"
            "rank 0: 0F0 0SEND_F0 0RECV_B0 0BW0 0STEP\n"
            "rank 1: 1RECV_F0 1F0 1BW0 1SEND_B0 1STEP\n");
}

TEST(TextFormatTest, ParsesCsvRowsAndComments) {
  Schedule s = parse("# compute only, as PyTorch's CSV\n"
                     "0F0,0F1,,0BW0,0BW1,0STEP\n"
                     "\n"
                     "1F0, 1BW0, 1F1, 1BW1, 1STEP   # rank 1\n");
  EXPECT_EQ(s.getNumRanks(), 2);
  EXPECT_EQ(s.getNumStages(), 2);
  EXPECT_EQ(s.getNumMicrobatches(), 2);
  EXPECT_EQ(s.getActions(0).size(), 5u);
  EXPECT_EQ(s.getActions(1)[1], Action::fullBackward(1, 0));
  EXPECT_TRUE(verifySchedule(s).empty());
}

TEST(TextFormatTest, ReadsPlacementOffTheLists) {
  // A V-shaped placement: rank 0 holds stages 0 and 3, rank 1 stages 1, 2.
  Schedule s = parse("rank 0: 0F0 3F0 3BW0 0BW0 0STEP 3STEP\n"
                     "rank 1: 1F0 2F0 2BW0 1BW0 1STEP 2STEP\n");
  EXPECT_EQ(s.getRank(3), 0);
  EXPECT_EQ(s.getChunk(3), 1);
  EXPECT_EQ(s.getRank(2), 1);
  EXPECT_TRUE(verifySchedule(s).empty());
}

TEST(TextFormatTest, ErrorsNameLineAndColumn) {
  auto err = [](llvm::StringRef text) {
    return errorOf(parseSchedule(text, "my.sched"));
  };
  EXPECT_EQ(err("rank 0: 0F0 0F1\nrank 1: 1F0 1Q0\n"),
            "my.sched:2:13: action '1Q0' has unknown kind 'Q' (expected F, B, "
            "W, BW, SEND_F, RECV_F, SEND_B, RECV_B or STEP)");
  EXPECT_EQ(err("rank 0: 0F0\nrank 0: 0BW0\n"),
            "my.sched:2:1: rank 0 is listed twice (first on line 1)");
  EXPECT_EQ(err("rank 0: 0F0\n0F1\n"),
            "my.sched:2:1: expected 'rank N:' at the start of the line");
  EXPECT_EQ(err("0F0\nrank 1: 1F0\n"),
            "my.sched:2:1: 'rank N:' line in a file of CSV rows");
  EXPECT_EQ(err("rank x: 0F0\n"),
            "my.sched:1:6: expected a rank number after 'rank'");
  EXPECT_EQ(err("rank 0 0F0\n"), "my.sched:1:8: expected ':' after 'rank 0'");
  EXPECT_EQ(err("rank 0: 0F0 1F0\nrank 1: 1BW0\n"),
            "my.sched:2:9: stage 1 appears on rank 1 and on rank 0 (line 1)");
  EXPECT_EQ(err("rank 1: 1F0\n"), "my.sched: rank 0 has no line");
  EXPECT_EQ(err("rank 0: 0F0 2F0\n"),
            "my.sched: stage 1 appears in no rank's list");
  EXPECT_EQ(err("rank 0: 0F0\nrank 1:\n"), "my.sched:2: rank 1 has no actions");
  EXPECT_EQ(err("# nothing\n"), "my.sched: no rank lists in the schedule");
  EXPECT_EQ(err("rank 0: 0STEP\n"), "my.sched: no action names a microbatch");
  EXPECT_EQ(err("rank 0: 70000F0\n"),
            "my.sched:1:9: action '70000F0' exceeds the limits of 65536 "
            "stages and 1048576 microbatches");
}

TEST(TextFormatTest, MissingFileIsAnError) {
  std::string msg = errorOf(readScheduleFile("/nonexistent/dir/x.sched"));
  EXPECT_EQ(
      msg.rfind("cannot read schedule file '/nonexistent/dir/x.sched': ", 0),
      0u)
      << msg;
}

} // namespace
