//===- TrainRunTest.cpp - tessel-run --steps, --data, --losses ------------===//
//
// Hand-built training-step artifacts run by tessel-run: state carried over
// steps, data fed a row per step, losses collected, states saved; on one
// rank and on two (an all_reduce in the step).
//
//===----------------------------------------------------------------------===//
#include "RunTool.h"
#include "TestUtil.h"

#include "tessel/runtime/Safetensors.h"

#include <fstream>
#include <map>
#include <sstream>
#include <cstring>
#include <dirent.h>

namespace tessel::runtime::test {
namespace {

/// `r` exited with `code` and said `message`.
void expectExit(const RunResult &r, int code, const std::string &message) {
  EXPECT_EQ(r.exitCode, code) << r.output;
  EXPECT_NE(r.output.find(message), std::string::npos) << r.output;
}

constexpr int64_t kN = 4;
const std::vector<float> kInit = {1, -2, 0.5f, 3};

/// loss = reduce_sum(s * x) [all_reduce(sum) over `ranks` ranks];
/// s <- s + x; a state `z` of zeros counts the steps (z <- z + 1).
/// Rank r's s starts at kInit + r.
void buildStep(ArtifactBuilder &b, int ranks) {
  if (ranks > 1)
    b.setMesh({{"dp", ranks}});
  for (int r = 0; r < ranks; ++r) {
    ProgramBuilder &p = b.rank(r);
    std::vector<float> init = kInit;
    for (float &v : init)
      v += static_cast<float>(r);
    int s = p.addState("s", DType::F32, {kN}, init.data());
    int z = p.addState("count", DType::F32, {}, nullptr);
    int x = p.addInput("x", DType::F32, {kN});
    const float one = 1;
    int c1 = p.addConstant(DType::F32, {}, &one);
    int sx = p.addBuffer(DType::F32, {kN}, "sx");
    int part = p.addBuffer(DType::F32, {}, "part");
    int loss = part;
    int s1 = p.addBuffer(DType::F32, {kN}, "s1");
    int z1 = p.addBuffer(DType::F32, {}, "z1");
    p.addOp("mul", {s, x}, {sx});
    p.addOp("reduce_sum", {sx}, {part},
            Attrs().is("dims", {}).i("keep_dims", 0));
    if (ranks > 1) {
      loss = p.addBuffer(DType::F32, {}, "loss");
      std::vector<int64_t> group;
      for (int k = 0; k < ranks; ++k)
        group.push_back(k);
      p.addOp("all_reduce", {part}, {loss},
              Attrs().s("kind", "sum").is("group", group));
    }
    p.addOp("add", {s, x}, {s1});
    p.addOp("add", {z, c1}, {z1});
    p.addOp("copy", {s1}, {s});
    p.addOp("copy", {z1}, {z});
    p.addOutput("loss", loss);
    p.addOutput("s1", s1);
  }
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

class TrainRunTest : public ::testing::Test {
protected:
  void SetUp() override {
    base = ::testing::TempDir() + "/tessel_train_" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    art = base + ".tsl";
    // Data: 2 rows, fed alternately.
    xs = Tensor::fromVector(DType::F32, {2, kN},
                            std::vector<float>{1, 2, 3, 4, -1, 0.5f, 2, -3});
    xsPath = base + ".xs.npy";
    ASSERT_TRUE(writeNpy(xsPath, xs).isOk());
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
  void expectLosses(const std::string &path, int steps, int ranks) {
    Tensor l;
    ASSERT_TRUE(readNpy(path, l).isOk());
    ASSERT_EQ(l.dtype(), DType::F32);
    ASSERT_EQ(l.shape(), (Shape{steps}));
    std::vector<float> want = expectedLosses(steps, ranks);
    for (int k = 0; k < steps; ++k)
      EXPECT_NEAR(l.data<float>()[k], want[k], 1e-5f) << "step " << k;
  }
  std::string base, art, xsPath;
  Tensor xs;
};

TEST_F(TrainRunTest, StepsDataLossesAndSavedState) {
  build(1);
  std::string losses = base + ".losses.npy", dir = base + ".ckpt/nested";
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
  EXPECT_NE(r.output.find("tessel-run: 2 states of rank 0 -> " + dir +
                          "/rank0.safetensors"),
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
  // Nothing but the file: no temporary is left behind.
  std::vector<std::string> files;
  if (DIR *d = opendir(dir.c_str())) {
    while (dirent *e = readdir(d))
      if (e->d_name[0] != '.')
        files.push_back(e->d_name);
    closedir(d);
  }
  EXPECT_EQ(files, std::vector<std::string>{"rank0.safetensors"});

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
  std::string losses = base + ".losses.npy", dir = base + ".ckpt";
  RunResult r = runTool(art + " -n 2 --steps 3 --data x=" + xsPath +
                        " --losses " + losses + " --save-state " + dir);
  ASSERT_EQ(r.exitCode, 0) << r.output;
  expectLosses(losses, 3, 2);
  // Rank 0 alone reports.
  EXPECT_NE(r.output.find("tessel-run: step 3/3 loss "), std::string::npos)
      << r.output;
  size_t first = r.output.find("step 1/3");
  EXPECT_EQ(r.output.find("step 1/3", first + 1), std::string::npos) << r.output;
  for (int rank = 0; rank < 2; ++rank) {
    auto saved = readSafetensors(dir + "/rank" + std::to_string(rank) +
                                 ".safetensors");
    std::vector<float> s = expectedState(3, rank);
    ASSERT_EQ(saved["s"].values.size(), static_cast<size_t>(kN));
    for (int i = 0; i < kN; ++i)
      EXPECT_NEAR(saved["s"].values[i], s[i], 1e-6f) << "rank " << rank;
    EXPECT_EQ(saved["count"].values, std::vector<float>{3});
  }
}

} // namespace
} // namespace tessel::runtime::test
