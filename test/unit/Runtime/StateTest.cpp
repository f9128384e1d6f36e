//===- StateTest.cpp - STATE buffers: persistent across runs --------------===//
//
// A STATE buffer outlives a run of its executor: initialised from its
// Weight entry's bytes (or zeros), read like a weight, written as an
// instruction's result (docs/training.md "Variables").
//
//===----------------------------------------------------------------------===//
#include "TestUtil.h"
#include "../ScratchDir.h"

#include "artifact.pb.h"
#include "tessel/runtime/Safetensors.h"

#include <fstream>
#include <functional>
#include <sstream>

namespace tessel::runtime::test {
namespace {


const std::vector<float> kInit = {1, 2, 3, 4};
const std::vector<float> kX = {0.5f, -1, 2, 10};

/// s <- s + x for a state `s` initialised from kInit and a state `z` of
/// zeros; outputs the new values of both ("s1", "z1") and their sum's
/// reduce_sum ("loss"). Both states are written with a final `copy`, as the
/// compiler writes them.
void buildAccumulate(ProgramBuilder &pb) {
  int s = pb.addState("s", DType::F32, {4}, kInit.data());
  int z = pb.addState("z", DType::F32, {4}, nullptr);
  int x = pb.addInput("x", DType::F32, {4});
  int s1 = pb.addBuffer(DType::F32, {4}, "s1");
  int z1 = pb.addBuffer(DType::F32, {4}, "z1");
  int sz = pb.addBuffer(DType::F32, {4}, "sz");
  int loss = pb.addBuffer(DType::F32, {}, "loss");
  pb.addOp("add", {s, x}, {s1});
  pb.addOp("add", {z, x}, {z1});
  pb.addOp("mul", {s, z}, {sz});
  pb.addOp("reduce_sum", {sz}, {loss}, Attrs().is("dims", {}).i("keep_dims", 0));
  pb.addOp("copy", {s1}, {s});
  pb.addOp("copy", {z1}, {z});
  pb.addOutput("s1", s1);
  pb.addOutput("z1", z1);
  pb.addOutput("loss", loss);
}

std::vector<float> values(const Tensor &t) {
  return std::vector<float>(t.data<float>(), t.data<float>() + t.numElements());
}

/// The executor's state `name` holds `want` (f32).
void expectState(Executor &exec, const std::string &name,
                 const std::vector<float> &want) {
  Tensor t;
  ASSERT_TRUE(exec.getState(name, t).isOk()) << name;
  EXPECT_EQ(values(t), want) << name;
}

TEST(State, StepRunThreeTimesAccumulates) {
  ProgramBuilder pb;
  buildAccumulate(pb);
  std::shared_ptr<const Program> prog;
  ASSERT_TRUE(pb.build(prog).isOk());
  ASSERT_EQ(prog->states.size(), 2u);
  EXPECT_EQ(prog->states[0].first, "s");
  EXPECT_EQ(prog->states[1].first, "z");
  EXPECT_EQ(prog->buffers[prog->findState("s")].kind, BufferInfo::Kind::State);
  EXPECT_EQ(prog->buffers[prog->findState("z")].data, nullptr); // zeros

  std::unique_ptr<Executor> exec;
  ASSERT_TRUE(createExecutor("cpu", prog, {}, exec).isOk());
  Tensor t;
  expectState(*exec, "s", kInit);
  expectState(*exec, "z", std::vector<float>(4, 0.0f));

  Tensor x = Tensor::fromVector(DType::F32, {4}, kX);
  for (int step = 1; step <= 3; ++step) {
    ASSERT_TRUE(exec->setInput("x", x).isOk());
    ASSERT_TRUE(exec->run().isOk());
    // loss reads the states before this step's update.
    float loss = 0;
    for (int i = 0; i < 4; ++i)
      loss += (kInit[i] + (step - 1) * kX[i]) * ((step - 1) * kX[i]);
    ASSERT_TRUE(exec->getOutput("loss", t).isOk());
    EXPECT_FLOAT_EQ(t.data<float>()[0], loss) << "step " << step;
    ASSERT_TRUE(exec->getState("s", t).isOk());
    for (int i = 0; i < 4; ++i)
      EXPECT_FLOAT_EQ(t.data<float>()[i], kInit[i] + step * kX[i]);
    Tensor s1;
    ASSERT_TRUE(exec->getOutput("s1", s1).isOk());
    EXPECT_EQ(values(s1), values(t));
    ASSERT_TRUE(exec->getState("z", t).isOk());
    for (int i = 0; i < 4; ++i)
      EXPECT_FLOAT_EQ(t.data<float>()[i], step * kX[i]);
  }

  // A second executor of the same program starts from the initial values:
  // the states are each executor's own.
  std::unique_ptr<Executor> fresh;
  ASSERT_TRUE(createExecutor("cpu", prog, {}, fresh).isOk());
  expectState(*fresh, "s", kInit);

  // setState overwrites (a checkpoint's values); checked like an input.
  ASSERT_TRUE(exec->setState("s", Tensor::fromVector(DType::F32, {4},
                                                     std::vector<float>{9, 9, 9, 9}))
                  .isOk());
  expectState(*exec, "s", std::vector<float>(4, 9.0f));
  Status s = exec->setState("s", Tensor(DType::F32, {3}));
  EXPECT_NE(s.message().find("state 's': expected f32 [4], got f32 [3]"),
            std::string::npos)
      << s.message();
  s = exec->getState("nope", t);
  EXPECT_NE(s.message().find("unknown state 'nope' (the program's states: s, z)"),
            std::string::npos)
      << s.message();
}

TEST(State, InPlaceUpdateAndStateAsWeightOfAMatMul) {
  // w <- w - 0.5 * (x^T @ (x @ w)) written in place by an elementwise op;
  // the matmul reads w as a (changing) weight: never prepacked.
  ProgramBuilder pb;
  const std::vector<float> w0 = {1, 0, 0, 1, 1, 1}; // [3, 2]
  int w = pb.addState("w", DType::F32, {3, 2}, w0.data());
  int x = pb.addInput("x", DType::F32, {1, 3});
  int y = pb.addBuffer(DType::F32, {1, 2}, "y");
  int g = pb.addBuffer(DType::F32, {3, 2}, "g");
  int xt = pb.addBuffer(DType::F32, {3, 1}, "xt");
  const float half = 0.5f;
  int c = pb.addConstant(DType::F32, {}, &half);
  int gs = pb.addBuffer(DType::F32, {3, 2}, "gs");
  pb.addOp("matmul", {x, w}, {y});
  pb.addOp("transpose", {x}, {xt}, Attrs().is("perm", {1, 0}));
  pb.addOp("matmul", {xt, y}, {g});
  pb.addOp("mul", {g, c}, {gs});
  pb.addOp("sub", {w, gs}, {w}); // in place on the state
  pb.addOutput("y", y);
  std::shared_ptr<const Program> prog;
  Status st = pb.build(prog);
  ASSERT_TRUE(st.isOk()) << st.message();
  std::unique_ptr<Executor> exec;
  ASSERT_TRUE(createExecutor("cpu", prog, {}, exec).isOk());
  const std::vector<float> xv = {1, 2, 0.5f};
  std::vector<float> ref = w0;
  for (int step = 0; step < 3; ++step) {
    ASSERT_TRUE(exec->setInput("x", Tensor::fromVector(DType::F32, {1, 3}, xv))
                    .isOk());
    ASSERT_TRUE(exec->run().isOk());
    float yr[2] = {0, 0};
    for (int k = 0; k < 3; ++k)
      for (int j = 0; j < 2; ++j)
        yr[j] += xv[k] * ref[k * 2 + j];
    Tensor yt;
    ASSERT_TRUE(exec->getOutput("y", yt).isOk());
    EXPECT_NEAR(yt.data<float>()[0], yr[0], 1e-5);
    EXPECT_NEAR(yt.data<float>()[1], yr[1], 1e-5);
    for (int k = 0; k < 3; ++k)
      for (int j = 0; j < 2; ++j)
        ref[k * 2 + j] -= 0.5f * xv[k] * yr[j];
  }
  Tensor wt;
  ASSERT_TRUE(exec->getState("w", wt).isOk());
  for (int i = 0; i < 6; ++i)
    EXPECT_NEAR(wt.data<float>()[i], ref[i], 1e-5) << i;
}

TEST(State, StateWeightsAreReadAtEveryRunNeverPrepacked) {
  // gelu(x @ w + b) (oneDNN's fused matmul when w is a weight) and a conv
  // (oneDNN's prepacked conv when its filter is a weight), with w and the
  // filter states that each run updates: the second run must see the update.
  std::mt19937 rng(3);
  Tensor x = randomF32({8, 16}, rng), w0 = randomF32({16, 32}, rng),
         b = randomF32({32}, rng), dw = randomF32({16, 32}, rng);
  Tensor xc = randomF32({1, 16, 6, 6}, rng), f0 = randomF32({16, 16, 3, 3}, rng),
         df = randomF32({16, 16, 3, 3}, rng);
  auto build = [&](bool states, std::shared_ptr<const Program> &out) {
    ProgramBuilder pb;
    int xi = pb.addInput("x", DType::F32, {8, 16});
    int xci = pb.addInput("xc", DType::F32, {1, 16, 6, 6});
    int w = states ? pb.addState("w", DType::F32, {16, 32}, w0.data())
                   : pb.addInput("w", DType::F32, {16, 32});
    int f = states ? pb.addState("f", DType::F32, {16, 16, 3, 3}, f0.data())
                   : pb.addInput("f", DType::F32, {16, 16, 3, 3});
    int bi = pb.addConstant(DType::F32, {32}, b.data());
    int mm = pb.addBuffer(DType::F32, {8, 32});
    int sum = pb.addBuffer(DType::F32, {8, 32});
    int y = pb.addBuffer(DType::F32, {8, 32});
    int yc = pb.addBuffer(DType::F32, {1, 16, 6, 6});
    pb.addOp("matmul", {xi, w}, {mm});
    pb.addOp("add", {mm, bi}, {sum});
    pb.addOp("gelu", {sum}, {y});
    pb.addOp("conv2d", {xci, f}, {yc}, Attrs().is("pads", {1, 1, 1, 1}));
    if (states) {
      int dwi = pb.addConstant(DType::F32, {16, 32}, dw.data());
      int dfi = pb.addConstant(DType::F32, {16, 16, 3, 3}, df.data());
      pb.addOp("add", {w, dwi}, {w});
      pb.addOp("add", {f, dfi}, {f});
    }
    pb.addOutput("y", y);
    pb.addOutput("yc", yc);
    return pb.build(out);
  };
  std::shared_ptr<const Program> withStates, reference;
  ASSERT_TRUE(build(true, withStates).isOk());
  ASSERT_TRUE(build(false, reference).isOk());
  std::unique_ptr<Executor> e, r;
  ASSERT_TRUE(createExecutor("cpu", withStates, {}, e).isOk());
  ASSERT_TRUE(createExecutor("cpu", reference, {}, r).isOk());
  for (Executor *ex : {e.get(), r.get()}) {
    ASSERT_TRUE(ex->setInput("x", x).isOk());
    ASSERT_TRUE(ex->setInput("xc", xc).isOk());
  }
  ASSERT_TRUE(e->run().isOk());
  ASSERT_TRUE(e->run().isOk()); // with w0 + dw, f0 + df
  Tensor w1(DType::F32, {16, 32}), f1(DType::F32, {16, 16, 3, 3});
  for (int64_t i = 0; i < w1.numElements(); ++i)
    w1.data<float>()[i] = w0.data<float>()[i] + dw.data<float>()[i];
  for (int64_t i = 0; i < f1.numElements(); ++i)
    f1.data<float>()[i] = f0.data<float>()[i] + df.data<float>()[i];
  ASSERT_TRUE(r->setInput("w", w1).isOk());
  ASSERT_TRUE(r->setInput("f", f1).isOk());
  ASSERT_TRUE(r->run().isOk());
  for (const char *name : {"y", "yc"}) {
    Tensor a, want;
    ASSERT_TRUE(e->getOutput(name, a).isOk());
    ASSERT_TRUE(r->getOutput(name, want).isOk());
    for (int64_t i = 0; i < a.numElements(); ++i)
      ASSERT_NEAR(a.data<float>()[i], want.data<float>()[i],
                  1e-4 + 1e-4 * std::fabs(want.data<float>()[i]))
          << name << " at " << i;
  }
}

/// finish() then Program::create on the (possibly edited) protobuf.
Status create(ProgramBuilder &pb, std::shared_ptr<const Program> &out,
              const std::function<void(artifact::Program &)> &edit = {}) {
  ProgramData data;
  TSL_RETURN_IF_ERROR(pb.finish(data));
  if (edit)
    edit(*data.proto);
  return Program::create(*data.proto, data.weightData, data.keep, "p", out,
                         &data.fileBacked);
}

TEST(State, ValidationKeepsArenaChecksForArenaBuffers) {
  std::shared_ptr<const Program> prog;
  {
    // A STATE result validates (above); an ARENA result that partly
    // overlaps its operand still fails.
    ProgramBuilder pb;
    int a = pb.addBuffer(DType::F32, {4}, "a", 0);
    int b = pb.addBuffer(DType::F32, {4}, "b", 8);
    pb.addOp("exp", {a}, {b});
    Status s = create(pb, prog);
    EXPECT_NE(s.message().find("result buffer 1 overlaps operand buffer 0 in "
                               "the arena"),
              std::string::npos)
        << s.message();
  }
  {
    // A state that a non-elementwise op both reads and writes.
    ProgramBuilder pb;
    int w = pb.addState("w", DType::F32, {2, 2}, nullptr);
    int x = pb.addInput("x", DType::F32, {2, 2});
    pb.addOp("matmul", {x, w}, {w});
    Status s = create(pb, prog);
    EXPECT_NE(s.message().find("result buffer 0 overlaps operand buffer 0"),
              std::string::npos)
        << s.message();
  }
  {
    // States never overlap arena buffers, whatever their offset says.
    ProgramBuilder pb;
    int a = pb.addBuffer(DType::F32, {4}, "a", 0);
    int s = pb.addState("s", DType::F32, {4}, nullptr);
    pb.addOp("exp", {a}, {s});
    EXPECT_TRUE(create(pb, prog).isOk());
  }
  {
    // Weights and constants stay read-only.
    ProgramBuilder pb;
    const float one[4] = {1, 1, 1, 1};
    int w = pb.addWeight("w", DType::F32, {4}, one);
    int x = pb.addInput("x", DType::F32, {4});
    pb.addOp("exp", {x}, {w});
    Status s = create(pb, prog);
    EXPECT_NE(s.message().find("is read-only (not an ARENA or STATE buffer)"),
              std::string::npos)
        << s.message();
  }
  // Two states ("s" from data, "t" zeros), corrupted by `edit`: the load
  // fails with `message`.
  auto expectStateError = [&](auto edit, const std::string &message) {
    ProgramBuilder pb;
    const float one[4] = {1, 1, 1, 1};
    pb.addState("s", DType::F32, {4}, one);
    pb.addState("t", DType::F32, {4}, nullptr);
    Status s = create(pb, prog, edit);
    EXPECT_NE(s.message().find(message), std::string::npos) << s.message();
  };
  expectStateError(
      [](artifact::Program &p) { p.mutable_buffers(1)->set_name(""); },
      "buffer 1: a STATE buffer needs a name");
  expectStateError(
      [](artifact::Program &p) { p.mutable_buffers(1)->set_name("s"); },
      "another STATE buffer is named 's'");
  expectStateError(
      [](artifact::Program &p) { p.mutable_weights(0)->set_name("other"); },
      "weight 'other': initialises STATE buffer 0 's', whose weight entry "
      "must bear its name");
  // A state is not an input.
  expectStateError(
      [](artifact::Program &p) {
        artifact::Binding *b = p.add_inputs();
        b->set_name("s");
        b->set_buffer(0);
      },
      "input 's' is not an ARENA buffer");
  // Host memory (Gemini's host chunks) is for states only: loads as a
  // state, refused on an arena buffer.
  expectStateError(
      [](artifact::Program &p) {
        artifact::Buffer *b = p.add_buffers();
        b->set_id(2);
        b->set_dtype(artifact::F32);
        b->add_shape(4);
        b->set_host(true);
      },
      "buffer 2: only a STATE buffer can be kept in host memory (Buffer.host)");
  {
    ProgramBuilder pb;
    int s = pb.addState("s", DType::F32, {4}, nullptr);
    int a = pb.addBuffer(DType::F32, {4}, "a");
    pb.setHostMemory(s);
    pb.addOp("exp", {s}, {a});
    ASSERT_TRUE(create(pb, prog).isOk());
    EXPECT_TRUE(prog->buffers[s].host);
    EXPECT_FALSE(prog->buffers[a].host);
  }
}

TEST(State, AddStateRoundTripsThroughAnArtifact) {
  tessel::test::ScratchDir scratch;
  std::string dir = scratch.path("state.tsl");
  const std::vector<float> w = {1, 2, 3, 4, 5, 6};
  const std::vector<int64_t> steps = {7};
  ArtifactBuilder b("state-test");
  ProgramBuilder &pb = b.rank(0);
  int sw = pb.addState("layer.weight", DType::F32, {2, 3}, w.data());
  int sm = pb.addState("layer.weight.exp_avg", DType::F32, {2, 3}, nullptr);
  int sc = pb.addState("step", DType::I64, {}, steps.data());
  int x = pb.addInput("x", DType::F32, {2, 3});
  pb.addOp("add", {sm, x}, {sm});
  pb.addOutput("w", sw);
  ASSERT_TRUE(b.write(dir).isOk());

  std::unique_ptr<Artifact> a;
  ASSERT_TRUE(Artifact::open(dir, a).isOk());
  std::shared_ptr<const Program> prog;
  Status st = a->loadProgram(0, prog);
  ASSERT_TRUE(st.isOk()) << st.message();
  using P = std::pair<std::string, int>;
  EXPECT_EQ(prog->states, (std::vector<P>{{"layer.weight", sw},
                                          {"layer.weight.exp_avg", sm},
                                          {"step", sc}}));
  for (auto &[name, id] : prog->states)
    EXPECT_EQ(prog->buffers[id].kind, BufferInfo::Kind::State) << name;
  EXPECT_EQ(prog->buffers[sm].data, nullptr);
  ASSERT_NE(prog->buffers[sw].data, nullptr);

  // The weights file holds the initialised states only, by name.
  std::ifstream f(dir + "/rank0.weights.safetensors", std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  std::string bytes = ss.str();
  SafetensorsIndex idx;
  ASSERT_TRUE(parseSafetensors(reinterpret_cast<const unsigned char *>(bytes.data()),
                               bytes.size(), "w", idx)
                  .isOk());
  EXPECT_EQ(idx.tensors.size(), 2u);
  EXPECT_EQ(idx.tensors.count("layer.weight"), 1u);
  EXPECT_EQ(idx.tensors.count("step"), 1u);

  std::unique_ptr<Executor> exec;
  ASSERT_TRUE(createExecutor("cpu", prog, {}, exec).isOk());
  Tensor t;
  expectState(*exec, "layer.weight", w);
  ASSERT_TRUE(exec->getState("step", t).isOk());
  EXPECT_EQ(t.dtype(), DType::I64);
  EXPECT_EQ(t.data<int64_t>()[0], 7);
  Tensor xv = Tensor::fromVector(DType::F32, {2, 3}, w);
  for (int r = 0; r < 2; ++r) {
    ASSERT_TRUE(exec->setInput("x", xv).isOk());
    ASSERT_TRUE(exec->run().isOk());
  }
  ASSERT_TRUE(exec->getState("layer.weight.exp_avg", t).isOk());
  for (int i = 0; i < 6; ++i)
    EXPECT_FLOAT_EQ(t.data<float>()[i], 2 * w[i]);
  // An output bound to a state reads its current value.
  ASSERT_TRUE(exec->getOutput("w", t).isOk());
  EXPECT_EQ(values(t), w);
}

} // namespace
} // namespace tessel::runtime::test
