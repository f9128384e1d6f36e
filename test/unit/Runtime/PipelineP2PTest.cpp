//===- PipelineP2PTest.cpp - Pipelined programs' asynchronous p2p ----------===//
//
// Hand-built per-rank pipelined programs (test/Runtime/Inputs/
// PipelineProgram.h: GPipe and 1F1B over 2 and 3 stages) run on ranks as
// threads over Gloo, where sends return at once and receives are posted
// before their instruction: every rank's outputs equal the one-rank
// program's bitwise, and a naive reference computed here within 1e-5. A
// receive posted early never overwrites bytes still in use; a send whose
// transport blocks does not block its instruction; p2p and an asynchronous
// all_reduce share the communication thread (dp x pp); the executor
// reports the time blocked in receives; a bad pipeline action is refused
// when the program is loaded.
//
//===----------------------------------------------------------------------===//
#include "PipelineProgram.h"

#include "tessel/runtime/ArtifactBuilder.h"
#include "tessel/runtime/Communicator.h"
#include "tessel/runtime/Executor.h"
#include "tessel/runtime/Tensor.h"

#include "CommTestUtil.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>

using namespace tessel::runtime;
using namespace tessel::runtime::commtest;
using namespace tessel::runtime::pipetest;

namespace {

std::shared_ptr<const Program> pipelineProgram(const PipelineSpec &p, int rank,
                                               bool oneRank) {
  ArtifactBuilder a;
  ProgramBuilder &b = a.rank(rank);
  buildPipelineRank(p, rank, oneRank, b);
  return built(b);
}

/// Runs `prog` `runs` times; its outputs by name after the last.
std::map<std::string, Tensor> runProgram(std::shared_ptr<const Program> prog,
                                         Communicator *comm, int runs = 1,
                                         RunStats *stats = nullptr) {
  std::map<std::string, Tensor> out;
  std::unique_ptr<Executor> e = cpuExecutor(prog, comm);
  if (!e)
    return out;
  for (int r = 0; r < runs; ++r) {
    Status s = e->run();
    EXPECT_TRUE(s.isOk()) << s.message();
  }
  if (stats)
    *stats = e->lastRunStats();
  for (const auto &[name, id] : prog->outputs)
    EXPECT_TRUE(e->getOutput(name, out[name]).isOk());
  return out;
}

/// The model's gradients computed here, in double: dw<s> and dx.
std::map<std::string, std::vector<double>> naiveGradients(const PipelineSpec &p) {
  const int64_t R = p.rows, D = p.width;
  std::vector<std::vector<float>> w;
  for (int s = 0; s < p.stages; ++s)
    w.push_back(pipelineValues(D * D, s + 1));
  std::vector<float> x = pipelineValues(p.microbatches * R * D, 0);
  std::map<std::string, std::vector<double>> g;
  for (int s = 0; s < p.stages; ++s)
    g["dw" + std::to_string(s)].assign(D * D, 0.0);
  g["dx"].assign(R * D, 0.0);
  for (int k = 0; k < p.microbatches; ++k) {
    std::vector<std::vector<double>> h(p.stages + 1);
    h[0].assign(x.begin() + k * R * D, x.begin() + (k + 1) * R * D);
    for (int s = 0; s < p.stages; ++s) {
      h[s + 1].assign(R * D, 0.0);
      for (int64_t i = 0; i < R; ++i)
        for (int64_t j = 0; j < D; ++j) {
          double z = 0;
          for (int64_t l = 0; l < D; ++l)
            z += h[s][i * D + l] * w[s][l * D + j];
          h[s + 1][i * D + j] = std::tanh(z);
        }
    }
    std::vector<double> grad = h[p.stages]; // d(0.5|a|^2)/da
    for (int s = p.stages - 1; s >= 0; --s) {
      std::vector<double> gz(R * D), gh(R * D, 0.0);
      for (int64_t i = 0; i < R * D; ++i)
        gz[i] = grad[i] * (1 - h[s + 1][i] * h[s + 1][i]);
      std::vector<double> &dw = g["dw" + std::to_string(s)];
      for (int64_t l = 0; l < D; ++l)
        for (int64_t j = 0; j < D; ++j)
          for (int64_t i = 0; i < R; ++i)
            dw[l * D + j] += h[s][i * D + l] * gz[i * D + j];
      for (int64_t i = 0; i < R; ++i)
        for (int64_t l = 0; l < D; ++l)
          for (int64_t j = 0; j < D; ++j)
            gh[i * D + l] += gz[i * D + j] * w[s][l * D + j];
      grad = gh;
    }
    for (int64_t i = 0; i < R * D; ++i)
      g["dx"][i] += grad[i];
  }
  return g;
}

void expectBitwise(const Tensor &got, const Tensor &want,
                   const std::string &what) {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  ASSERT_EQ(std::memcmp(got.data(), want.data(),
                        got.numElements() * sizeof(float)),
            0)
      << what << " differs from the one-rank run";
}

class PipelineP2PTest : public RankThreadsTest {
protected:
  void checkAgainstOneRank(const PipelineSpec &p) {
    std::map<std::string, Tensor> one =
        runProgram(pipelineProgram(p, 0, true), nullptr);
    ASSERT_EQ(one.size(), static_cast<size_t>(p.stages + 1));
    // The one-rank run against the naive reference.
    for (const auto &[name, want] : naiveGradients(p)) {
      const Tensor &t = one[name];
      ASSERT_EQ(t.numElements(), static_cast<int64_t>(want.size())) << name;
      for (size_t i = 0; i < want.size(); ++i)
        ASSERT_NEAR(t.data<float>()[i], want[i], 1e-5 * (1 + std::fabs(want[i])))
            << name << " at " << i;
    }
    std::mutex mu;
    std::map<std::string, Tensor> got;
    runWith(p.stages, CommOptions(), createGlooCommunicator,
            [&](Communicator &comm, int r) {
              // Three runs: the receives of a run are posted afresh.
              auto out = runProgram(pipelineProgram(p, r, false), &comm, 3);
              std::lock_guard<std::mutex> lock(mu);
              for (auto &[name, t] : out)
                got[name] = std::move(t);
            });
    ASSERT_EQ(got.size(), one.size());
    for (const auto &[name, t] : one)
      expectBitwise(got[name], t,
                    name + " (" + std::to_string(p.stages) + " stages, " +
                        (p.oneF1B ? "1F1B" : "GPipe") + ")");
  }
};

TEST_F(PipelineP2PTest, OneF1BOnTwoStagesEqualsTheOneRankRunBitwise) {
  PipelineSpec p;
  checkAgainstOneRank(p);
}

TEST_F(PipelineP2PTest, GPipeAndOneF1BOnThreeStagesEqualTheOneRankRun) {
  PipelineSpec p;
  p.stages = 3;
  p.microbatches = 5;
  p.rows = 3;
  p.width = 16;
  checkAgainstOneRank(p);
  p.oneF1B = false;
  checkAgainstOneRank(p);
}

/// Rank 1 computes t into arena bytes [0, 64) and reads it after a first
/// receive and a matmul; a second receive's result reuses those bytes.
/// Rank 0 sends both messages at once, so the second arrives during the
/// matmul if its receive is posted: one posted before t's last reader would
/// overwrite t.
TEST_F(PipelineP2PTest, AReceivePostedEarlyWaitsForItsBytesToBeFree) {
  runWith(2, CommOptions(), createGlooCommunicator,
          [&](Communicator &comm, int r) {
    ArtifactBuilder a;
    ProgramBuilder &b = a.rank(r);
    std::vector<float> one(16, 1.0f), two(16, 2.0f), three(16, 3.0f);
    if (r == 0) {
      int c2 = b.addConstant(DType::F32, {16}, two.data());
      int c3 = b.addConstant(DType::F32, {16}, three.data());
      b.addOp("send", {c3}, {}, Attrs().i("peer", 1).i("tag", 2));
      b.addOp("send", {c2}, {}, Attrs().i("peer", 1).i("tag", 1));
      int out = b.addBuffer(DType::F32, {16}, "out");
      b.addOp("add", {c2, c3}, {out});
      b.addOutput("out", out);
    } else {
      int c1 = b.addConstant(DType::F32, {16}, one.data());
      int t = b.addBuffer(DType::F32, {16}, "t", 0);
      int u = b.addBuffer(DType::F32, {16}, "u", 64);
      int v = b.addBuffer(DType::F32, {16}, "v", 128);
      int late = b.addBuffer(DType::F32, {16}, "late", 0);
      int out = b.addBuffer(DType::F32, {16}, "out", 192);
      b.addOp("add", {c1, c1}, {t});  // t = 2
      b.addOp("recv", {}, {u}, Attrs().i("peer", 0).i("tag", 1)); // u = 2
      // Time for the second message to arrive while t is still live.
      const int64_t n = 320;
      std::vector<float> m = pipelineValues(n * n, 5);
      int w = b.addWeight("w", DType::F32, {n, n}, m.data());
      int y = b.addBuffer(DType::F32, {n, n}, "y", 256);
      b.addOp("matmul", {w, w}, {y});
      b.addOp("add", {t, u}, {v});    // v = 4
      b.addOp("recv", {}, {late}, Attrs().i("peer", 0).i("tag", 2)); // 3
      b.addOp("add", {v, late}, {out}); // 7
      b.addOutput("out", out);
    }
    auto got = runProgram([&] {
      return built(b);
    }(), &comm, 2);
    const float want = r == 0 ? 5.0f : 7.0f;
    for (int i = 0; i < 16; ++i)
      ASSERT_EQ(got["out"].data<float>()[i], want) << "rank " << r;
  });
}

/// Rank 0 computes a large matmul before it sends; rank 1's receive
/// blocks meanwhile, which its run's statistics show as idle time.
TEST_F(PipelineP2PTest, TimeBlockedInAReceiveIsIdle) {
  runWith(2, CommOptions(), createGlooCommunicator,
          [&](Communicator &comm, int r) {
    ArtifactBuilder a;
    ProgramBuilder &b = a.rank(r);
    const int64_t n = 256;
    std::vector<float> m = pipelineValues(n * n, 3);
    int out = b.addBuffer(DType::F32, {n, n}, "out");
    if (r == 0) {
      int w = b.addWeight("w", DType::F32, {n, n}, m.data());
      int y = b.addBuffer(DType::F32, {n, n});
      b.addOp("matmul", {w, w}, {y});
      b.addOp("matmul", {y, w}, {out});
      b.addOp("send", {out}, {}, Attrs().i("peer", 1).i("tag", 0));
    } else {
      b.addOp("recv", {}, {out}, Attrs().i("peer", 0).i("tag", 0));
    }
    b.addOutput("out", out);
    std::shared_ptr<const Program> prog = built(b);
    ASSERT_TRUE(prog);
    RunStats stats;
    runProgram(prog, &comm, 1, &stats);
    EXPECT_GT(stats.wallUs, 0.0);
    EXPECT_LE(stats.idleUs, stats.wallUs);
    if (r == 1)
      EXPECT_GT(stats.idleUs, 0.5 * stats.wallUs)
          << "rank 1 only waits: idle " << stats.idleUs << " us of "
          << stats.wallUs;
    else
      EXPECT_EQ(stats.idleUs, 0.0);
  });
}

/// Gloo's communicator, whose sends take `delay` in the transport (a socket
/// the receiver does not drain).
class SlowSends : public Communicator {
public:
  SlowSends(Communicator &inner, std::chrono::milliseconds delay)
      : c(inner), delay(delay) {}
  const char *backend() const override { return c.backend(); }
  int rank() const override { return c.rank(); }
  int size() const override { return c.size(); }
  const std::vector<int> &worldRanks() const override { return c.worldRanks(); }
  Status subgroup(const std::vector<int> &r, Communicator *&out) override {
    return c.subgroup(r, out);
  }
  Status allReduce(const TensorView &i, const TensorView &o, ReduceKind k) override {
    return c.allReduce(i, o, k);
  }
  Status allGather(const TensorView &i, const TensorView &o, int64_t d) override {
    return c.allGather(i, o, d);
  }
  Status reduceScatter(const TensorView &i, const TensorView &o, ReduceKind k,
                       int64_t d) override {
    return c.reduceScatter(i, o, k, d);
  }
  Status allToAll(const TensorView &i, const TensorView &o, int64_t s,
                  int64_t d) override {
    return c.allToAll(i, o, s, d);
  }
  Status collectivePermute(const TensorView &i, const TensorView &o,
                           const std::vector<std::pair<int, int>> &p) override {
    return c.collectivePermute(i, o, p);
  }
  Status broadcast(const TensorView &i, const TensorView &o, int r) override {
    return c.broadcast(i, o, r);
  }
  Status send(const TensorView &in, int peer, int64_t tag) override {
    std::this_thread::sleep_for(delay);
    return c.send(in, peer, tag);
  }
  Status recv(const TensorView &out, int peer, int64_t tag) override {
    return c.recv(out, peer, tag);
  }
  Status irecv(const TensorView &out, int peer, int64_t tag,
               std::unique_ptr<P2PRequest> &req) override {
    return c.irecv(out, peer, tag, req);
  }
  Status barrier() override { return c.barrier(); }
  void setTimeout(std::chrono::milliseconds t) override { c.setTimeout(t); }

private:
  Communicator &c;
  std::chrono::milliseconds delay;
};

/// Rank 0 sends a, then overwrites a's bytes (the planner reuses them once
/// the send has run) while the transport still holds the send for 300 ms:
/// the send instruction returns at once and rank 1 receives the bytes a had
/// when it was sent.
TEST_F(PipelineP2PTest, ASendDoesNotWaitForItsTransport) {
  runWith(2, CommOptions(), createGlooCommunicator,
          [&](Communicator &gloo, int r) {
    SlowSends comm(gloo, std::chrono::milliseconds(300));
    ArtifactBuilder a;
    ProgramBuilder &b = a.rank(r);
    std::vector<float> one(64, 1.0f), two(64, 2.0f);
    int out = b.addBuffer(DType::F32, {64}, "out", 0);
    if (r == 0) {
      int c1 = b.addConstant(DType::F32, {64}, one.data());
      int c2 = b.addConstant(DType::F32, {64}, two.data());
      int x = b.addBuffer(DType::F32, {64}, "x", 256);
      b.addOp("add", {c1, c1}, {x}); // x = 2
      b.addOp("send", {x}, {}, Attrs().i("peer", 1).i("tag", 7));
      int again = b.addBuffer(DType::F32, {64}, "again", 256);
      b.addOp("add", {c2, c2}, {again}); // the same bytes: 4
      b.addOp("add", {again, c1}, {out}); // 5
    } else {
      b.addOp("recv", {}, {out}, Attrs().i("peer", 0).i("tag", 7));
    }
    b.addOutput("out", out);
    std::shared_ptr<const Program> prog = built(b);
    ASSERT_TRUE(prog);
    std::unique_ptr<Executor> e = cpuExecutor(prog, &comm);
    ASSERT_TRUE(e);
    e->setTracing(true);
    Status s = e->run();
    ASSERT_TRUE(s.isOk()) << s.message();
    Tensor got;
    ASSERT_TRUE(e->getOutput("out", got).isOk());
    for (int i = 0; i < 64; ++i)
      ASSERT_EQ(got.data<float>()[i], r == 0 ? 5.0f : 2.0f) << "rank " << r;
    if (r == 0)
      for (const TraceEvent &t : e->lastTrace())
        if (prog->ops[t.op].kind == OpKind::Send)
          EXPECT_LT(t.durUs, 100000.0) << "the send waited for its transport";
  });
}

/// dp x pp: a gradient bucket's asynchronous all_reduce and the stages'
/// p2p share the communication thread. Each rank starts an all_reduce of
/// a, sends a to the other, receives the other's a (posted at the start)
/// and waits for the all_reduce: out = (a0 + a1) + a_other, three runs.
TEST_F(PipelineP2PTest, P2PAndAnAsynchronousAllReduceShareTheCommThread) {
  runWith(2, CommOptions(), createGlooCommunicator,
          [&](Communicator &comm, int r) {
    ArtifactBuilder a;
    ProgramBuilder &b = a.rank(r);
    const Shape shape{1000};
    int in = b.addInput("a", DType::F32, shape);
    int y = b.addBuffer(DType::F32, shape);
    int other = b.addBuffer(DType::F32, shape);
    int out = b.addBuffer(DType::F32, shape);
    b.addOp("all_reduce", {in}, {y}, Attrs().s("kind", "sum").is("group", {0, 1}));
    b.addOp("send", {in}, {}, Attrs().i("peer", 1 - r).i("tag", 3));
    b.addOp("recv", {}, {other}, Attrs().i("peer", 1 - r).i("tag", 3));
    b.addOp("wait", {in, y}, {});
    b.addOp("add", {y, other}, {out});
    b.addOutput("out", out);
    std::shared_ptr<const Program> prog = built(b);
    ASSERT_TRUE(prog);
    std::unique_ptr<Executor> e = cpuExecutor(prog, &comm);
    ASSERT_TRUE(e);
    for (int run = 0; run < 3; ++run) {
      Tensor mine = input(r, DType::F32, shape, run);
      Tensor theirs = input(1 - r, DType::F32, shape, run);
      ASSERT_TRUE(e->setInput("a", mine).isOk());
      Status s = e->run();
      ASSERT_TRUE(s.isOk()) << s.message();
      Tensor got;
      ASSERT_TRUE(e->getOutput("out", got).isOk());
      for (int64_t i = 0; i < 1000; ++i) {
        float a0 = input(0, DType::F32, shape, run).data<float>()[i];
        float a1 = input(1, DType::F32, shape, run).data<float>()[i];
        ASSERT_EQ(got.data<float>()[i], (a0 + a1) + theirs.data<float>()[i])
            << "rank " << r << " run " << run << " at " << i;
      }
    }
  });
}

TEST(PipelineAction, ABadPhaseIsRefusedWhenLoaded) {
  ArtifactBuilder a;
  ProgramBuilder &b = a.rank(0);
  int x = b.addInput("x", DType::F32, {4});
  int y = b.addBuffer(DType::F32, {4});
  b.addOp("neg", {x}, {y}, {}, "n");
  b.setAction("G", 0, 1);
  b.addOutput("y", y);
  std::shared_ptr<const Program> prog;
  Status s = b.build(prog);
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("instruction 0 (neg 'n'): pipeline action "
                             "phase 'G' is not one of F, B, W, BW, STEP, "
                             "SEND, RECV"),
            std::string::npos)
      << s.message();
}

TEST(PipelineAction, ActionsAreReadIntoTheProgram) {
  PipelineSpec p;
  auto prog = pipelineProgram(p, 1, false);
  ASSERT_TRUE(prog);
  EXPECT_TRUE(prog->pipelined);
  ASSERT_FALSE(prog->ops.empty());
  // Stage 1's first action is RECV 1.0 (of F 1.0).
  EXPECT_EQ(prog->ops[0].action.label(), "RECV 1.0");
  EXPECT_EQ(prog->ops[1].action.label(), "F 1.0");
}

} // namespace
