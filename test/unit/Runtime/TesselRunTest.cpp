//===- TesselRunTest.cpp - tessel-run end to end --------------------------===//
#include "MlpFixture.h"
#include "../ScratchDir.h"
#include "RunTool.h"

#include <fstream>
#include <iterator>
#include <sstream>

using namespace tessel::runtime;
using namespace tessel::runtime::test;

namespace {

class TesselRunTest : public RunToolTest {
protected:
  TesselRunTest() : RunToolTest("run") {}
  void SetUp() override {
    ArtifactBuilder b("tessel-run-test");
    mlp.build(b.rank(0));
    ASSERT_TRUE(b.write(art).isOk());
    std::mt19937 rng(81);
    x = randomF32({Mlp::kBatch, Mlp::kIn}, rng);
    writeInput(".x.npy", x, xPath);
  }
  std::string xPath;
  Tensor x;
  Mlp mlp{80};
};

TEST_F(TesselRunTest, RunsTheMlpAndWritesOutputs) {
  std::string y = base + ".y.npy", logits = base + ".logits.npy";
  RunResult r = runTool(art + " --input x=" + xPath + " --output " + y +
                        " --output logits=" + logits + " --threads 2 --repeat 5");
  ASSERT_EQ(r.exitCode, 0) << r.output;
  EXPECT_NE(r.output.find("ms per run (median of 5 runs after 1 untimed warm-up)"), std::string::npos) << r.output;
  Tensor out;
  ASSERT_TRUE(readNpy(y, out).isOk());
  EXPECT_EQ(out.shape(), (Shape{Mlp::kBatch, Mlp::kOut}));
  expectNear(out, mlp.reference(x), 1e-6, 1e-5);
  Tensor lg;
  ASSERT_TRUE(readNpy(logits, lg).isOk());
  EXPECT_EQ(lg.shape(), (Shape{Mlp::kBatch, Mlp::kOut}));
}

TEST_F(TesselRunTest, BareInputFileForSingleInputPrograms) {
  std::string y = base + ".y.npy";
  RunResult r = runTool(art + " --input " + xPath + " --output=" + y);
  ASSERT_EQ(r.exitCode, 0) << r.output;
  // Without --repeat: one run, timed, and said so.
  EXPECT_NE(r.output.find("ms per run (one run, no warm-up)"),
            std::string::npos)
      << r.output;
}

TEST_F(TesselRunTest, OutputNameOnlyWhenItIsAnOutput) {
  // "a=b.npy": 'a' is no output of the program, so the whole value is the
  // file of the first output.
  std::string eq = base + ".a=b.npy";
  RunResult r = runTool(art + " --input x=" + xPath + " --output " + eq);
  ASSERT_EQ(r.exitCode, 0) << r.output;
  EXPECT_NE(r.output.find("output 'y' f32 [4, 5] -> " + eq), std::string::npos)
      << r.output;
  Tensor out;
  ASSERT_TRUE(readNpy(eq, out).isOk());
  expectNear(out, mlp.reference(x), 1e-6, 1e-5);
  // "logits=FILE" names the output 'logits'.
  std::string lg = base + ".lg.npy";
  r = runTool(art + " --input x=" + xPath + " --output logits=" + lg);
  ASSERT_EQ(r.exitCode, 0) << r.output;
  EXPECT_NE(r.output.find("output 'logits' f32 [4, 5] -> " + lg),
            std::string::npos)
      << r.output;
}

TEST_F(TesselRunTest, UnwritableFilesFailBeforeTheRun) {
  std::string missingDir = base + ".nodir/y.npy";
  RunResult r = runTool(art + " --input x=" + xPath + " --output " + missingDir);
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_NE(r.output.find("--output " + missingDir +
                          ": cannot be written: No such file or directory"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find("ms per run"), std::string::npos) << r.output;

  // A directory as the trace file.
  r = runTool(art + " --input x=" + xPath + " --trace " + files.path(""));
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_NE(r.output.find("cannot be written: it is a directory"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find("ms per run"), std::string::npos) << r.output;

  // A writable path is left as it was: an existing file keeps its contents
  // when the run then fails (here: a missing input), a new one is not
  // created.
  std::string kept = files.write("kept.npy", "old");
  std::string fresh = base + ".fresh.npy";
  r = runTool(art + " --output " + kept + " --output logits=" + fresh);
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_NE(r.output.find("missing input 'x'"), std::string::npos) << r.output;
  std::ifstream in(kept);
  std::string text((std::istreambuf_iterator<char>(in)), {});
  EXPECT_EQ(text, "old");
  EXPECT_FALSE(std::ifstream(fresh).good());
}

TEST_F(TesselRunTest, Version) {
  RunResult r = runTool("--version");
  EXPECT_EQ(r.exitCode, 0);
  EXPECT_EQ(r.output.rfind("tessel-run ", 0), 0u) << r.output;
  EXPECT_NE(r.output.find(" (git "), std::string::npos) << r.output;
}

TEST_F(TesselRunTest, WrongDTypeNamesInputAndBothTypes) {
  std::string bad = base + ".bad.npy";
  ASSERT_TRUE(writeNpy(bad, Tensor(DType::I64, {Mlp::kBatch, Mlp::kIn})).isOk());
  RunResult r = runTool(art + " --input x=" + bad);
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_NE(r.output.find("input 'x': expected f32 [4, 8], got i64 [4, 8]"), std::string::npos)
      << r.output;
}

TEST_F(TesselRunTest, WrongShape) {
  std::string bad = base + ".bad.npy";
  ASSERT_TRUE(writeNpy(bad, Tensor(DType::F32, {2, 8})).isOk());
  RunResult r = runTool(art + " --input x=" + bad);
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_NE(r.output.find("input 'x': expected f32 [4, 8], got f32 [2, 8]"), std::string::npos)
      << r.output;
}

TEST_F(TesselRunTest, UnknownAndMissingInputs) {
  RunResult r = runTool(art + " --input nope=" + xPath);
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_NE(r.output.find("unknown input 'nope' (the program's inputs: x)"), std::string::npos)
      << r.output;
  r = runTool(art);
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_NE(r.output.find("missing input 'x' (f32 [4, 8])"), std::string::npos) << r.output;
}

TEST_F(TesselRunTest, UsageErrors) {
  EXPECT_EQ(runTool("").exitCode, 2);
  EXPECT_EQ(runTool(art + " --threads 0").exitCode, 2);
  // One line, and where to look.
  RunResult r = runTool(art + " --bogus");
  EXPECT_EQ(r.exitCode, 2);
  EXPECT_EQ(r.output,
            "tessel-run: unknown option '--bogus' (see tessel-run --help)\n");
  r = runTool(art + " --overlap-collectives sometimes");
  EXPECT_EQ(r.exitCode, 2);
  EXPECT_EQ(r.output, "tessel-run: --overlap-collectives needs auto, on or "
                      "off (see tessel-run --help)\n");
}

TEST_F(TesselRunTest, CorruptArtifactIsAnErrorNotACrash) {
  std::ofstream(art + "/rank0.program.pb", std::ios::trunc) << "junk";
  RunResult r = runTool(art + " --input x=" + xPath);
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_NE(r.output.find("rank0.program.pb: truncated or corrupted"), std::string::npos)
      << r.output;
}

} // namespace
