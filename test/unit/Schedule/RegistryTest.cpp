//===- RegistryTest.cpp - Registering and loading schedules ---------------===//
//
// The worked example of docs/pipeline.md: a user's schedule registered as a
// C++ generator, and one loaded from a file; both go through the verifier.
//
//===----------------------------------------------------------------------===//

#include "TestUtils.h"

#include "tessel/Schedule/Simulator.h"

using namespace tessel::pipeline;
using namespace tessel::pipeline::testing;

namespace {

// --- The worked example ----------------------------------------------------
// Looped BFS (breadth-first over chunks): each rank runs all forwards of its
// first chunk, then of its second, ..., then all backwards, last chunk first.
llvm::Expected<Schedule> generateLoopedBfs(const ScheduleOptions &o) {
  llvm::Expected<Schedule> s =
      Schedule::createLooped("looped-bfs", o.ranks, o.chunks, o.microbatches);
  if (!s)
    return s.takeError();
  for (int32_t r = 0; r < o.ranks; ++r) {
    for (int32_t c = 0; c < o.chunks; ++c)
      for (int32_t mb = 0; mb < o.microbatches; ++mb)
        s->append(r, Action::forward(c * o.ranks + r, mb));
    for (int32_t c = o.chunks - 1; c >= 0; --c)
      for (int32_t mb = 0; mb < o.microbatches; ++mb)
        s->append(r, Action::fullBackward(c * o.ranks + r, mb));
    for (int32_t c = 0; c < o.chunks; ++c)
      s->append(r, Action::optimizerStep(c * o.ranks + r));
  }
  return s;
}

ScheduleRegistration
    registerLoopedBfs("looped-bfs",
                      "all forwards chunk by chunk, then all backwards",
                      generateLoopedBfs);
// ---------------------------------------------------------------------------

TEST(RegistryTest, HasTheBuiltins) {
  std::vector<std::string> names = ScheduleRegistry::getGlobal().getNames();
  for (const char *name : {"gpipe", "1f1b", "interleaved-1f1b", "zb-h1"})
    EXPECT_NE(std::find(names.begin(), names.end(), name), names.end()) << name;
}

TEST(RegistryTest, RegisteredGeneratorIsBuiltAndVerified) {
  ASSERT_NE(ScheduleRegistry::getGlobal().lookup("looped-bfs"), nullptr);
  Schedule s = build("looped-bfs", 4, 8, 2);
  EXPECT_TRUE(s.hasCommunication());
  SimulationResult sim = unwrap(simulate(s, ScheduleCosts()));
  // Like GPipe, every rank holds all v*m activations before its first
  // backward.
  EXPECT_EQ(sim.peakActivations, 2 * 8);
}

TEST(RegistryTest, UnknownNameListsTheKnownOnes) {
  ScheduleRegistry registry;
  registry.addBuiltins();
  EXPECT_EQ(errorOf(registry.build("2f2b", ScheduleOptions())),
            "unknown schedule '2f2b' (known: 1f1b, gpipe, interleaved-1f1b, "
            "zb-h1)");
}

TEST(RegistryTest, RefusesDuplicateNames) {
  ScheduleRegistry registry;
  registry.addBuiltins();
  EXPECT_EQ(errorOf(registry.add("gpipe", "again", generateGPipe)),
            "schedule 'gpipe' is already registered");
  EXPECT_EQ(errorOf(registry.add("", "nameless", generateGPipe)),
            "a schedule needs a name");
}

TEST(RegistryTest, InvalidGeneratedScheduleIsRefused) {
  ScheduleRegistry registry;
  // Forgets the backward of the last microbatch on rank 1.
  llvm::cantFail(registry.add(
      "broken", "", [](const ScheduleOptions &o) -> llvm::Expected<Schedule> {
        llvm::Expected<Schedule> s = generateGPipe(o);
        if (s)
          s->getMutableActions(1).erase(s->getMutableActions(1).end() - 2);
        return s;
      }));
  EXPECT_EQ(errorOf(registry.build("broken", options(2, 3))),
            "schedule 'broken' is invalid:\n"
            "  rank 1: missing the backward of stage 1 microbatch 2 (1BW2, or "
            "1B2 and 1W2)");
}

TEST(RegistryTest, GeneratorErrorsPassThrough) {
  ScheduleRegistry registry;
  registry.addBuiltins();
  EXPECT_EQ(errorOf(registry.build("interleaved-1f1b", options(4, 6, 2))),
            "interleaved-1f1b needs the number of microbatches to be a "
            "multiple of the number of stages: 6 is not a multiple of 4");
}

TEST(RegistryTest, LoadsAComputeOnlyFileAndAddsCommunication) {
  ScratchDir dir;
  std::string path =
      dir.write("sched.txt", "rank 0: 0F0 0F1 0BW0 0BW1 0STEP\n"
                             "rank 1: 1F0 1BW0 1F1 1BW1 1STEP\n");
  Schedule s = unwrap(loadSchedule(path));
  EXPECT_TRUE(s.hasCommunication());
  EXPECT_EQ(formatSchedule(s).substr(formatSchedule(s).find('\n') + 1),
            "rank 0: 0F0 0SEND_F0 0F1 0SEND_F1 0RECV_B0 0BW0 0RECV_B1 0BW1 "
            "0STEP\n"
            "rank 1: 1RECV_F0 1F0 1RECV_F1 1BW0 1SEND_B0 1F1 1BW1 1SEND_B1 "
            "1STEP\n");
}

TEST(RegistryTest, LoadingAnInvalidFileNamesRankPositionAndAction) {
  ScratchDir dir;
  std::string path = dir.write(
      "sched.txt", "rank 0: 0F0 0BW0 0STEP\nrank 1: 1BW0 1F0 1STEP\n");
  std::string msg = errorOf(loadSchedule(path));
  EXPECT_NE(msg.find("rank 1, position 0 (1BW0): runs before its forward 1F0 "
                     "at position 1"),
            std::string::npos)
      << msg;
}

} // namespace
