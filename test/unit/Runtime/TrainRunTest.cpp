//===- TrainRunTest.cpp - tessel-run --steps, --data, --losses ------------===//
//
// Hand-built training-step artifacts run by tessel-run: state carried over
// steps, data fed a row per step, losses collected, states saved; on one
// rank and on two (an all_reduce in the step); checkpoints (--save,
// --save-every, --resume) and their atomic swap, a save killed at every
// phase (TESSEL_TEST_SAVE_KILL) leaving the previous checkpoint loadable.
//
//===----------------------------------------------------------------------===//
#include "CounterStep.h"
#include "RunTool.h"
#include "../ScratchDir.h"
#include "TestUtil.h"

#include "tessel/runtime/MappedFile.h"
#include "tessel/runtime/Safetensors.h"
#include "tessel/tooling/Checkpoint.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>
#include <cstring>
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

namespace tessel::runtime::test {
namespace {

/// `r` exited with `code` and said `message`.
void expectExit(const RunResult &r, int code, const std::string &message) {
  EXPECT_EQ(r.exitCode, code) << r.output;
  EXPECT_NE(r.output.find(message), std::string::npos) << r.output;
}

/// name -> (dtype, shape, values as float) of a safetensors file.
struct Saved {
  DType dtype;
  Shape shape;
  std::vector<float> values;
};
std::map<std::string, Saved> readSafetensors(const std::string &path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  std::string bytes = ss.str();
  SafetensorsIndex idx;
  std::map<std::string, Saved> out;
  Status s = parseSafetensors(
      reinterpret_cast<const unsigned char *>(bytes.data()), bytes.size(), path,
      idx);
  EXPECT_TRUE(s.isOk()) << s.message();
  if (!s)
    return out;
  for (auto &[name, e] : idx.tensors) {
    Saved v{e.dtype, e.shape, {}};
    const char *p = bytes.data() + idx.dataStart + e.begin;
    for (uint64_t o = 0; o + 4 <= e.end - e.begin; o += 4) {
      float x;
      std::memcpy(&x, p + o, 4);
      v.values.push_back(x);
    }
    out[name] = v;
  }
  return out;
}

class TrainRunTest : public RunToolTest {
protected:
  TrainRunTest() : RunToolTest("train") {}
  void SetUp() override {
    // Data: 2 rows, fed alternately.
    xs = Tensor::fromVector(DType::F32, {2, kN},
                            std::vector<float>{1, 2, 3, 4, -1, 0.5f, 2, -3});
    writeInput(".xs.npy", xs, xsPath);
  }
  void build(int ranks) {
    ArtifactBuilder b("train-test");
    buildStep(b, ranks);
    Status s = b.write(art);
    ASSERT_TRUE(s.isOk()) << s.message();
  }
  /// Step k's x row, and the expected losses and final s of rank r.
  const float *row(int k) const { return xs.data<float>() + (k % 2) * kN; }
  std::vector<float> expectedLosses(int steps, int ranks) const {
    std::vector<float> losses(steps, 0.0f);
    for (int r = 0; r < ranks; ++r) {
      std::vector<float> s = kInit;
      for (float &v : s)
        v += static_cast<float>(r);
      for (int k = 0; k < steps; ++k) {
        float l = 0;
        for (int i = 0; i < kN; ++i)
          l += s[i] * row(k)[i];
        losses[k] += l;
        for (int i = 0; i < kN; ++i)
          s[i] += row(k)[i];
      }
    }
    return losses;
  }
  std::vector<float> expectedState(int steps, int rank) const {
    std::vector<float> s = kInit;
    for (float &v : s)
      v += static_cast<float>(rank);
    for (int k = 0; k < steps; ++k)
      for (int i = 0; i < kN; ++i)
        s[i] += row(k)[i];
    return s;
  }
  /// Each rank's states saved in `dir` after `steps` steps: its own s, and
  /// the step count.
  void expectSavedStates(const std::string &dir, int steps, int ranks) {
    for (int rank = 0; rank < ranks; ++rank) {
      auto saved = readSafetensors(dir + "/rank" + std::to_string(rank) +
                                   ".safetensors");
      std::vector<float> s = expectedState(steps, rank);
      ASSERT_EQ(saved["s"].values.size(), static_cast<size_t>(kN));
      for (int i = 0; i < kN; ++i)
        EXPECT_NEAR(saved["s"].values[i], s[i], 1e-6f) << "rank " << rank;
      EXPECT_EQ(saved["count"].values,
                std::vector<float>{static_cast<float>(steps)});
    }
  }
  void expectLosses(const std::string &path, int steps, int ranks) {
    Tensor l;
    ASSERT_TRUE(readNpy(path, l).isOk());
    ASSERT_EQ(l.dtype(), DType::F32);
    ASSERT_EQ(l.shape(), (Shape{steps}));
    std::vector<float> want = expectedLosses(steps, ranks);
    for (int k = 0; k < steps; ++k)
      EXPECT_NEAR(l.data<float>()[k], want[k], 1e-5f) << "step " << k;
  }
  std::string xsPath;
  Tensor xs;
};

TEST_F(TrainRunTest, StepsDataLossesAndSavedState) {
  build(1);
  tessel::test::ScratchDir scratch;
  std::string losses = base + ".losses.npy", dir = scratch.path("ckpt/nested");
  RunResult r = runTool(art + " --steps 3 --data x=" + xsPath + " --losses " +
                        losses + " --save-state " + dir +
                        " --output s1=" + base + ".s1.npy");
  ASSERT_EQ(r.exitCode, 0) << r.output;
  expectLosses(losses, 3, 1);
  std::vector<float> want = expectedLosses(3, 1);
  char line[128];
  std::snprintf(line, sizeof(line), "tessel-run: step 1/3 loss %.6f ", want[0]);
  EXPECT_NE(r.output.find(line), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("tessel-run: step 3/3 loss "), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find(" ms/step"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("ms per step (median of 3)"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("tessel-run: losses f32 [3] -> " + losses),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("tessel-run: checkpoint of step 3 (2 states, 1 "
                          "rank) -> " + dir),
            std::string::npos)
      << r.output;

  auto saved = readSafetensors(dir + "/rank0.safetensors");
  ASSERT_EQ(saved.size(), 2u);
  EXPECT_EQ(saved["s"].shape, (Shape{kN}));
  std::vector<float> s = expectedState(3, 0);
  for (int i = 0; i < kN; ++i)
    EXPECT_NEAR(saved["s"].values[i], s[i], 1e-6f);
  EXPECT_EQ(saved["count"].shape, Shape{});
  EXPECT_EQ(saved["count"].values, std::vector<float>{3});
  // Every step's loss so far (what a restarted training's --losses needs).
  expectLosses(dir + "/losses.npy", 3, 1);
  // Nothing but the checkpoint's files: no temporary is left behind.
  std::vector<std::string> files;
  if (DIR *d = opendir(dir.c_str())) {
    while (dirent *e = readdir(d))
      if (e->d_name[0] != '.')
        files.push_back(e->d_name);
    closedir(d);
  }
  std::sort(files.begin(), files.end());
  EXPECT_EQ(files, (std::vector<std::string>{"losses.npy",
                                             "model.safetensors.index.json",
                                             "rank0.safetensors"}));

  // --output gives the last step's value.
  Tensor s1;
  ASSERT_TRUE(readNpy(base + ".s1.npy", s1).isOk());
  for (int i = 0; i < kN; ++i)
    EXPECT_NEAR(s1.data<float>()[i], s[i], 1e-6f);
}

TEST_F(TrainRunTest, InputShapedFileIsFedEveryStepAndInputWorksToo) {
  build(1);
  Tensor x0 = Tensor::fromData(DType::F32, {kN}, xs.data<float>());
  std::string x0Path = base + ".x0.npy", l1 = base + ".l1.npy",
              l2 = base + ".l2.npy";
  ASSERT_TRUE(writeNpy(x0Path, x0).isOk());
  RunResult r = runTool(art + " --steps 4 --data x=" + x0Path + " --losses " + l1);
  ASSERT_EQ(r.exitCode, 0) << r.output;
  r = runTool(art + " --steps 4 --input x=" + x0Path + " --losses " + l2);
  ASSERT_EQ(r.exitCode, 0) << r.output;
  Tensor a, b;
  ASSERT_TRUE(readNpy(l1, a).isOk());
  ASSERT_TRUE(readNpy(l2, b).isOk());
  ASSERT_EQ(a.shape(), (Shape{4}));
  std::vector<float> s = kInit;
  for (int k = 0; k < 4; ++k) {
    float l = 0;
    for (int i = 0; i < kN; ++i) {
      l += s[i] * x0.data<float>()[i];
      s[i] += x0.data<float>()[i];
    }
    EXPECT_NEAR(a.data<float>()[k], l, 1e-5f);
    EXPECT_EQ(a.data<float>()[k], b.data<float>()[k]);
  }
}

TEST_F(TrainRunTest, WrongDataShapeOrDTypeOrName) {
  build(1);
  std::string bad = base + ".bad.npy";
  ASSERT_TRUE(writeNpy(bad, Tensor(DType::F32, {3, 5})).isOk());
  RunResult r = runTool(art + " --steps 2 --data x=" + bad);
  expectExit(r, 1, "error: --data x=" + bad +
                          ": input 'x' is f32 [4], the file holds f32 [3, 5]: "
                          "expected [4] (fed every step) or [steps, 4] (row k "
                          "mod steps at step k)");

  ASSERT_TRUE(writeNpy(bad, Tensor(DType::I64, {3, 4})).isOk());
  r = runTool(art + " --steps 2 --data x=" + bad);
  expectExit(r, 1, "input 'x' is f32 [4], the file holds i64 [3, 4]: "
                          "the dtypes differ");

  r = runTool(art + " --steps 2 --data x=" + xsPath + " --data nope=" + xsPath);
  expectExit(r, 1, "--data nope=" + xsPath +
                          ": the program has no input 'nope' (its inputs: x)");

  r = runTool(art + " --steps 2 --data x=" + xsPath + " --input x=" + xsPath);
  expectExit(r, 1, "input 'x' is given twice (by --input and a data "
                          "file)");

  r = runTool(art + " --steps 2");
  expectExit(r, 1, "missing input 'x' (f32 [4]); pass --input "
                          "x=FILE.npy or --data x=FILE.npy");
}

TEST_F(TrainRunTest, UsageErrors) {
  build(1);
  EXPECT_EQ(runTool(art + " --steps 0 --data x=" + xsPath).exitCode, 2);
  RunResult r = runTool(art + " --data x=" + xsPath);
  expectExit(r, 2, "need --steps N");
  r = runTool(art + " --steps 2 --repeat 3 --data x=" + xsPath);
  expectExit(r, 2, "--repeat cannot be combined with --steps");
}

TEST_F(TrainRunTest, LossesNeedALossOutput) {
  ArtifactBuilder b("train-test");
  ProgramBuilder &p = b.rank(0);
  int x = p.addInput("x", DType::F32, {kN});
  int y = p.addBuffer(DType::F32, {kN});
  p.addOp("neg", {x}, {y});
  p.addOutput("y", y);
  ASSERT_TRUE(b.write(art).isOk());
  // Without a state or a loss, --steps still runs (one line per step).
  RunResult r = runTool(art + " --steps 2 --data x=" + xsPath);
  ASSERT_EQ(r.exitCode, 0) << r.output;
  EXPECT_NE(r.output.find("tessel-run: step 2/2 "), std::string::npos)
      << r.output;
  r = runTool(art + " --steps 2 --data x=" + xsPath + " --losses " + base +
              ".l.npy");
  expectExit(r, 1, "--losses: the program has no output 'loss' (its "
                          "outputs: y)");
}

TEST_F(TrainRunTest, DataLmFeedsInputIdsAndShiftedLabels) {
  // loss = f32(sum(1000 * labels - input_ids)); input_ids, labels i64 [2, 3].
  ArtifactBuilder b("train-test");
  ProgramBuilder &p = b.rank(0);
  int ids = p.addInput("input_ids", DType::I64, {2, 3});
  int labels = p.addInput("labels", DType::I64, {2, 3});
  const int64_t k1000 = 1000;
  int c = p.addConstant(DType::I64, {}, &k1000);
  int m = p.addBuffer(DType::I64, {2, 3});
  int d = p.addBuffer(DType::I64, {2, 3});
  int sum = p.addBuffer(DType::I64, {});
  int loss = p.addBuffer(DType::F32, {});
  p.addOp("mul", {labels, c}, {m});
  p.addOp("sub", {m, ids}, {d});
  p.addOp("reduce_sum", {d}, {sum}, Attrs().is("dims", {}).i("keep_dims", 0));
  p.addOp("cast", {sum}, {loss}, Attrs().s("to", "f32"));
  p.addOutput("loss", loss);
  ASSERT_TRUE(b.write(art).isOk());

  // [steps=2, batch=2, seq+1=4].
  std::vector<int64_t> tok(2 * 2 * 4);
  for (size_t i = 0; i < tok.size(); ++i)
    tok[i] = static_cast<int64_t>((i * 7 + 3) % 50);
  Tensor t = Tensor::fromVector(DType::I64, {2, 2, 4}, tok);
  std::string tPath = base + ".batches.npy", l = base + ".l.npy";
  ASSERT_TRUE(writeNpy(tPath, t).isOk());
  RunResult r = runTool(art + " --steps 3 --data-lm " + tPath + " --losses " + l);
  ASSERT_EQ(r.exitCode, 0) << r.output;
  Tensor lt;
  ASSERT_TRUE(readNpy(l, lt).isOk());
  ASSERT_EQ(lt.shape(), (Shape{3}));
  for (int k = 0; k < 3; ++k) {
    int64_t want = 0;
    const int64_t *stepTok = tok.data() + (k % 2) * 8;
    for (int bi = 0; bi < 2; ++bi)
      for (int j = 0; j < 3; ++j)
        want += 1000 * stepTok[bi * 4 + j + 1] - stepTok[bi * 4 + j];
    EXPECT_EQ(lt.data<float>()[k], static_cast<float>(want)) << "step " << k;
  }

  // A batch file whose sequence does not fit.
  Tensor wrong(DType::I64, {2, 2, 5});
  ASSERT_TRUE(writeNpy(tPath, wrong).isOk());
  r = runTool(art + " --steps 1 --data-lm " + tPath);
  expectExit(r, 1, "--data-lm " + tPath +
                          ": input 'input_ids' is i64 [2, 3], the file holds "
                          "i64 [2, 2, 5]: expected [steps, 2, 4]");
}

TEST_F(TrainRunTest, TwoRanksRunTheSameStepsAndSaveTheirStates) {
  build(2);
  tessel::test::ScratchDir scratch;
  std::string losses = base + ".losses.npy", dir = scratch.path("ckpt");
  RunResult r = runTool(art + " -n 2 --steps 3 --data x=" + xsPath +
                        " --losses " + losses + " --save-state " + dir);
  ASSERT_EQ(r.exitCode, 0) << r.output;
  expectLosses(losses, 3, 2);
  // Rank 0 alone reports.
  EXPECT_NE(r.output.find("tessel-run: step 3/3 loss "), std::string::npos)
      << r.output;
  size_t first = r.output.find("step 1/3");
  EXPECT_EQ(r.output.find("step 1/3", first + 1), std::string::npos) << r.output;
  expectSavedStates(dir, 3, 2);
}


// ---- Checkpoints ----------------------------------------------------------

std::vector<std::string> listDir(const std::string &dir) {
  std::vector<std::string> files;
  if (DIR *d = opendir(dir.c_str())) {
    while (dirent *e = readdir(d))
      if (std::strcmp(e->d_name, ".") && std::strcmp(e->d_name, ".."))
        files.push_back(e->d_name);
    closedir(d);
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::string readText(const std::string &path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::vector<float> readLosses(const std::string &path) {
  Tensor t;
  Status s = readNpy(path, t);
  EXPECT_TRUE(s.isOk()) << s.message();
  if (!s)
    return {};
  return std::vector<float>(t.data<float>(), t.data<float>() + t.numElements());
}

/// Bitwise equality of float vectors.
void expectSameBits(const std::vector<float> &a, const std::vector<float> &b) {
  ASSERT_EQ(a.size(), b.size());
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * 4), 0);
}

/// The exit status of a tessel-run killed by SIGKILL (through the shell).
constexpr int kKilled = 128 + 9;

class CheckpointRunTest : public TrainRunTest {
protected:
  /// Saves every 2 steps of 4 and is killed (SIGKILL) at `point` (write,
  /// swap, cleanup) of the step-4 save.
  void killSaveOfStep4(const std::string &ck, const std::string &point) {
    run("--steps 4 --save " + ck + " --save-every 2", kKilled,
        "TESSEL_TEST_SAVE_KILL=" + point + "@4");
  }

  std::string run(const std::string &args, int wantExit = 0,
                  const std::string &env = "") {
    RunResult r = runTool(art + " --data x=" + xsPath + " " + args, env);
    EXPECT_EQ(r.exitCode, wantExit) << args << "\n" << r.output;
    return r.output;
  }
  /// The straight run's losses (steps 1..n).
  std::vector<float> straight(int n, const std::string &ranks = "") {
    std::string l = scratch.path("straight.npy");
    run(ranks + " --steps " + std::to_string(n) + " --losses " + l);
    return readLosses(l);
  }
  /// Resumes `ck` up to step `stop` and checks its losses against the
  /// straight run's steps from+1..stop.
  void expectResumes(const std::string &ck, int from, int stop,
                     const std::string &ranks = "") {
    std::vector<float> full = straight(stop, ranks);
    std::string l = scratch.path("rest.npy");
    std::string out = run(ranks + " --steps " + std::to_string(stop) +
                          " --resume " + ck + " --losses " + l);
    EXPECT_NE(out.find("step " + std::to_string(from + 1) + "/" +
                       std::to_string(stop) + " loss"),
              std::string::npos)
        << out;
    expectSameBits(readLosses(l),
                   std::vector<float>(full.begin() + from, full.end()));
  }
  /// `--steps 3 --resume ck` fails (exit 1) saying `message`.
  void expectResumeFails(const std::string &ck, const std::string &message) {
    std::string out = run("--steps 3 --resume " + ck, 1);
    EXPECT_NE(out.find(message), std::string::npos) << out;
  }
  /// Kills the step-4 save of a run saving to `ck` at `point`: the scratch
  /// directory then holds `kept` and the save's temporary, whose name this
  /// returns.
  std::string killSaveLeaving(const std::string &ck, const std::string &point,
                              const std::string &kept) {
    killSaveOfStep4(ck, point);
    auto files = listDir(scratch.path(""));
    EXPECT_EQ(files.size(), 2u);
    if (files.size() != 2)
      return "";
    EXPECT_EQ(files[0], kept);
    EXPECT_EQ(files[1].rfind("ck.tmp-", 0), 0u) << files[1];
    return files[1];
  }
  /// A resumed run (`--steps steps`) recovers `ck` from a killed save,
  /// saying `message`, and leaves `ck` alone; it then resumes from step
  /// `from` (up to `stop`) as the straight run.
  void expectRecovers(const std::string &ck, int steps,
                      const std::string &message, int from, int stop) {
    std::string out =
        run("--steps " + std::to_string(steps) + " --resume " + ck);
    EXPECT_NE(out.find(message), std::string::npos) << out;
    EXPECT_EQ(listDir(scratch.path("")), std::vector<std::string>{"ck"});
    expectResumes(ck, from, stop);
  }
  tessel::test::ScratchDir scratch;
};

TEST_F(CheckpointRunTest, ResumeContinuesBitForBitWithTheDataPosition) {
  build(1);
  std::string ck = scratch.path("ck"), l = scratch.path("first.npy");
  // 3 steps: the resumed run starts on data row 1 of 2.
  std::string out = run("--steps 3 --losses " + l + " --save " + ck);
  EXPECT_NE(out.find("tessel-run: checkpoint of step 3 (2 states, 1 rank) -> " +
                     ck),
            std::string::npos)
      << out;
  std::string index = readText(ck + "/model.safetensors.index.json");
  EXPECT_NE(index.find("\"metadata\": {\"format\": \"tessel-checkpoint\", "
                       "\"step\": 3, \"data_position\": 3, \"ranks\": 1, "
                       "\"total_size\": 20}"),
            std::string::npos)
      << index;
  EXPECT_NE(index.find("\"s\": \"rank0.safetensors\""), std::string::npos)
      << index;
  EXPECT_NE(index.find("\"count\": \"rank0.safetensors\""), std::string::npos)
      << index;
  expectResumes(ck, 3, 7);
  // The first run's losses too.
  std::vector<float> full = straight(3);
  expectSameBits(readLosses(l), full);
  // --steps is counted from the start: at or below the checkpoint's step
  // is an error.
  expectResumeFails(ck, "error: --steps 3 is not above the checkpoint's step 3");
}

TEST_F(CheckpointRunTest, SaveEveryKeepsTheLatest) {
  build(1);
  std::string ck = scratch.path("ck");
  std::string out = run("--steps 5 --save " + ck + " --save-every 2");
  for (int step : {2, 4, 5})
    EXPECT_NE(out.find("checkpoint of step " + std::to_string(step) + " "),
              std::string::npos)
        << out;
  EXPECT_NE(readText(ck + "/model.safetensors.index.json")
                .find("\"step\": 5, \"data_position\": 5"),
            std::string::npos);
  auto saved = readSafetensors(ck + "/rank0.safetensors");
  EXPECT_EQ(saved["count"].values, std::vector<float>{5});
  EXPECT_EQ(listDir(scratch.path("")), std::vector<std::string>{"ck"});
}

TEST_F(CheckpointRunTest, KilledWhileWritingLeavesThePreviousCheckpoint) {
  build(1);
  std::string ck = scratch.path("ck");
  // The step-2 checkpoint, and the unfinished temporary beside it.
  const std::string tmp = killSaveLeaving(ck, "write", "ck");
  ASSERT_FALSE(tmp.empty());
  EXPECT_NE(readText(ck + "/model.safetensors.index.json").find("\"step\": 2,"),
            std::string::npos);
  // Resuming ignores and removes the temporary.
  std::string l = scratch.path("rest.npy");
  std::string out = run("--steps 4 --resume " + ck + " --save " + ck +
                        " --losses " + l);
  EXPECT_NE(out.find("tessel-run: removed " + scratch.path(tmp) +
                     ", an unfinished checkpoint save"),
            std::string::npos)
      << out;
  std::vector<float> rest = readLosses(l);
  std::vector<float> full = straight(4);
  expectSameBits(rest, std::vector<float>(full.begin() + 2, full.end()));
  for (const std::string &f : listDir(scratch.path("")))
    EXPECT_TRUE(f == "ck" || f == "rest.npy" || f == "straight.npy") << f;
}

TEST_F(CheckpointRunTest, KilledBetweenTheRenamesRestoresThePrevious) {
  build(1);
  std::string ck = scratch.path("ck");
  // The previous checkpoint is ck.old, the new one still a temporary.
  ASSERT_FALSE(killSaveLeaving(ck, "swap", "ck.old").empty());
  expectRecovers(ck, 3,
                 "tessel-run: restored " + ck + " from " + ck +
                     ".old (a save was interrupted)",
                 2, 4);
}

TEST_F(CheckpointRunTest, KilledBeforeRemovingTheOldOneKeepsTheNew) {
  build(1);
  std::string ck = scratch.path("ck");
  killSaveOfStep4(ck, "cleanup");
  EXPECT_EQ(listDir(scratch.path("")),
            (std::vector<std::string>{"ck", "ck.old"}));
  expectRecovers(ck, 5,
                 "tessel-run: removed " + ck + ".old, a replaced checkpoint",
                 4, 6);
}

TEST_F(CheckpointRunTest, FirstSaveKilledLeavesNothingToResume) {
  build(1);
  std::string ck = scratch.path("ck");
  run("--steps 2 --save " + ck, kKilled, "TESSEL_TEST_SAVE_KILL=write@2");
  expectResumeFails(ck, "error: --resume " + ck + ": " + ck +
                        ": not a checkpoint (no model.safetensors.index.json)");
  // A leftover temporary of a killed save is removed by the next save.
  run("--steps 2 --save " + ck);
  EXPECT_EQ(listDir(scratch.path("")), std::vector<std::string>{"ck"});
}

TEST_F(CheckpointRunTest, TwoRanksKilledMidSaveKeepThePrevious) {
  build(2);
  std::string ck = scratch.path("ck");
  std::string out = run("-n 2 --steps 4 --save " + ck + " --save-every 2", 1,
                        "TESSEL_TEST_SAVE_KILL=swap@4");
  EXPECT_NE(out.find("rank 0 was killed by signal 9"), std::string::npos)
      << out;
  std::string index = readText(ck + ".old/model.safetensors.index.json");
  EXPECT_NE(index.find("\"step\": 2, \"data_position\": 2, \"ranks\": 2"),
            std::string::npos)
      << index;
  EXPECT_NE(index.find("\"rank1/s\": \"rank1.safetensors\""),
            std::string::npos)
      << index;
  expectResumes(ck, 2, 5, "-n 2");
  // The resumed run's states: every rank's own.
  std::string ck2 = scratch.path("ck2");
  run("-n 2 --steps 3 --resume " + ck + " --save " + ck2);
  expectSavedStates(ck2, 3, 2);
  // A 2-rank checkpoint on one rank.
  build(1);
  expectResumeFails(ck, "a checkpoint of 2 ranks, but this run has 1");
}

TEST_F(CheckpointRunTest, MismatchAndCorruption) {
  build(1);
  std::string ck = scratch.path("ck");
  run("--steps 2 --save " + ck);
  // Another program: `s` of another shape.
  ArtifactBuilder b("other");
  ProgramBuilder &p = b.rank(0);
  int s = p.addState("s", DType::F32, {kN + 1}, nullptr);
  int z = p.addState("count", DType::F32, {}, nullptr);
  int x = p.addInput("x", DType::F32, {kN});
  int y = p.addBuffer(DType::F32, {kN});
  p.addOp("neg", {x}, {y});
  p.addOutput("loss", y);
  (void)s;
  (void)z;
  std::string other = scratch.path("other.tsl");
  ASSERT_TRUE(b.write(other).isOk());
  std::string l = scratch.path("never.npy");
  RunResult r = runTool(other + " --steps 3 --data x=" + xsPath +
                        " --resume " + ck + " --losses " + l);
  expectExit(r, 1, "error: --resume " + ck + ": the checkpoint does not fit "
                   "the program: state 's' is f32 [4] in " + ck +
                   "/rank0.safetensors, f32 [5] in the program");
  EXPECT_EQ(access(l.c_str(), F_OK), -1) << "nothing is written";

  // A truncated rank file; a corrupt index; a file the index does not list.
  std::string bytes = readText(ck + "/rank0.safetensors");
  std::string index = readText(ck + "/model.safetensors.index.json");
  ASSERT_TRUE(writeBytes(ck + "/rank0.safetensors",
                         bytes.substr(0, bytes.size() - 3))
                  .isOk());
  expectResumeFails(ck, "error: " + ck + "/rank0.safetensors: corrupted: its "
                        "size is " + std::to_string(bytes.size() - 3) +
                        " bytes, the index says " + std::to_string(bytes.size()));
  ASSERT_TRUE(writeBytes(ck + "/rank0.safetensors", bytes).isOk());
  ASSERT_TRUE(writeBytes(ck + "/model.safetensors.index.json",
                         index.substr(0, index.size() / 2))
                  .isOk());
  expectResumeFails(ck, "model.safetensors.index.json: a checkpoint written by "
                        "an older tessel-run (no checksums)");
  // An index edited, its checksum not: refused, naming both checksums.
  std::string renamed = index;
  renamed.replace(renamed.find("\"count\""), 7, "\"cnt\"");
  ASSERT_TRUE(writeBytes(ck + "/model.safetensors.index.json", renamed).isOk());
  expectResumeFails(ck, "model.safetensors.index.json: corrupted: its CRC-32C "
                        "is ");
  // Sealed again after the edit: the index and the rank file disagree.
  renamed = tessel::tooling::sealIndex(
      renamed.substr(0, renamed.rfind("\"index_crc32c\"")));
  ASSERT_TRUE(writeBytes(ck + "/model.safetensors.index.json", renamed).isOk());
  expectResumeFails(ck, "error: corrupt checkpoint: the index lists 'cnt' in " +
                        ck + "/rank0.safetensors, which does not hold it");
}

TEST_F(CheckpointRunTest, SaveRefusesADirectoryThatIsNoCheckpoint) {
  build(1);
  std::string dir = scratch.path("mine");
  ASSERT_EQ(mkdir(dir.c_str(), 0755), 0);
  ASSERT_TRUE(writeBytes(dir + "/notes.txt", "keep me").isOk());
  std::string out = run("--steps 2 --save " + dir, 1);
  EXPECT_NE(out.find("error: --save " + dir + ": exists and is not a "
                     "checkpoint"),
            std::string::npos)
      << out;
  EXPECT_EQ(readText(dir + "/notes.txt"), "keep me");
  // Usage errors.
  out = run("--steps 2 --save-every 2", 2);
  EXPECT_NE(out.find("--save-every needs --save DIR"), std::string::npos);
  RunResult r = runTool(art + " --resume " + dir);
  expectExit(r, 2, "need --steps N");
}

} // namespace
} // namespace tessel::runtime::test
