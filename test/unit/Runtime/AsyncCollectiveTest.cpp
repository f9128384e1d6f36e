//===- AsyncCollectiveTest.cpp - Gradient buckets' asynchronous path
//-------===//
//
// The executors' communication thread (comm/CommThread.h): work runs in
// submission order, after submit has returned (so the executor computes
// meanwhile), and its status reaches the wait. Then whole programs on 2
// ranks over Gloo and over shared memory, overlapped and in place
// (ExecutorOptions::overlap): a collective that a `wait` names runs while
// the next instructions compute, or where it stands, and the result equals
// the sums computed here; when Auto overlaps; bad waits are refused when
// the executor is created.
//
//===----------------------------------------------------------------------===//
#include "tessel/runtime/CommThread.h"

#include "tessel/runtime/ArtifactBuilder.h"
#include "tessel/runtime/Communicator.h"
#include "tessel/runtime/Executor.h"
#include "tessel/runtime/Tensor.h"

#include "CommTestUtil.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <future>
#include <vector>

using namespace tessel::runtime;
using namespace tessel::runtime::commtest;
using tessel::runtime::CommThread;

namespace {

TEST(CommThread, RunsInOrderAfterSubmitReturns) {
  CommThread t;
  std::promise<void> released;
  std::shared_future<void> release = released.get_future().share();
  std::vector<int> order;
  // The first work waits for the submitting thread: a submit that ran it in
  // place would time out here instead of returning.
  uint64_t a = t.submit([&] {
    if (release.wait_for(std::chrono::seconds(10)) != std::future_status::ready)
      return Status::error("submit did not return before its work ran");
    order.push_back(1);
    return Status::ok();
  });
  uint64_t b = t.submit([&] {
    order.push_back(2);
    return Status::ok();
  });
  released.set_value();
  // Waited for out of order: b ran after a all the same.
  Status sb = t.wait(b);
  ASSERT_TRUE(sb.isOk()) << sb.message();
  Status sa = t.wait(a);
  ASSERT_TRUE(sa.isOk()) << sa.message();
  EXPECT_EQ(order, (std::vector<int>{1, 2}));
}

TEST(CommThread, AFailureReachesItsWait) {
  CommThread t;
  uint64_t bad = t.submit([] { return Status::error("rank 1 died"); });
  uint64_t good = t.submit([] { return Status::ok(); });
  Status s = t.wait(bad);
  ASSERT_FALSE(s.isOk());
  EXPECT_EQ(s.message(), "rank 1 died");
  EXPECT_TRUE(t.wait(good).isOk());
  // A ticket is waited for once.
  EXPECT_FALSE(t.wait(good).isOk());
  // drain returns with nothing left queued.
  std::atomic<int> ran{0};
  for (int i = 0; i < 50; ++i)
    t.submit([&] {
      ++ran;
      return Status::ok();
    });
  t.drain();
  EXPECT_EQ(ran.load(), 50);
}

/// Rank `rank`'s program: y = all_reduce(a) issued asynchronously (the
/// bucket's), z = a * a computed meanwhile, the wait, then out = y + z and
/// a synchronous all_reduce of out, queued behind.
std::shared_ptr<const Program> bucketProgram(int rank) {
  ArtifactBuilder b;
  ProgramBuilder &p = b.rank(rank);
  const Shape shape{1000};
  int a = p.addInput("a", DType::F32, shape);
  int y = p.addBuffer(DType::F32, shape);
  int z = p.addBuffer(DType::F32, shape);
  int o = p.addBuffer(DType::F32, shape);
  int s = p.addBuffer(DType::F32, shape);
  Attrs sum = Attrs().s("kind", "sum").is("group", {0, 1});
  p.addOp("all_reduce", {a}, {y}, sum);
  p.addOp("mul", {a, a}, {z});
  p.addOp("wait", {a, y}, {});
  p.addOp("add", {y, z}, {o});
  p.addOp("all_reduce", {o}, {s}, sum);
  p.addOutput("out", o);
  p.addOutput("sum", s);
  return built(p);
}

class AsyncCollectiveTest : public RankThreadsTest {
protected:
  /// Runs rank r's `program(r)` on 2 ranks, twice (the second run reuses the
  /// tickets of the first), with input `a` of `n` floats, and hands each
  /// run's inputs of both ranks to `check`: over Gloo overlapped, over
  /// shared memory (with Gloo's fallback where built) overlapped and in
  /// place.
  void runTwice(std::shared_ptr<const Program> (*program)(int), int64_t n,
                const std::function<void(Executor &, int, const Tensor *)>
                    &check) {
    auto shm = [](const CommOptions &o, std::unique_ptr<Communicator> &c) {
      std::unique_ptr<Communicator> gloo;
      if (haveGlooCommunicator())
        TSL_RETURN_IF_ERROR(createGlooCommunicator(o, gloo));
      return createShmCommunicator(o, std::move(gloo), c);
    };
    for (CollectiveOverlap overlap :
         {CollectiveOverlap::On, CollectiveOverlap::Off}) {
      SCOPED_TRACE(overlap == CollectiveOverlap::On ? "overlapped"
                                                    : "in place");
      if (overlap == CollectiveOverlap::On)
        runOn(createGlooCommunicator, overlap, program, n, check);
      runOn(shm, overlap, program, n, check);
    }
  }

  template <typename Make>
  void
  runOn(const Make &make, CollectiveOverlap overlap,
        std::shared_ptr<const Program> (*program)(int), int64_t n,
        const std::function<void(Executor &, int, const Tensor *)> &check) {
    runWith(2, CommOptions(), make, [&](Communicator &comm, int r) {
      std::shared_ptr<const Program> prog = program(r);
      ASSERT_TRUE(prog);
      std::unique_ptr<Executor> e = cpuExecutor(prog, &comm, overlap);
      ASSERT_TRUE(e);
      for (int run = 0; run < 2; ++run) {
        Tensor in[2] = {input(0, DType::F32, {n}, run),
                        input(1, DType::F32, {n}, run)};
        ASSERT_TRUE(e->setInput("a", in[r]).isOk());
        Status s = e->run();
        ASSERT_TRUE(s.isOk()) << s.message();
        check(*e, r, in);
      }
    });
  }
};

TEST_F(AsyncCollectiveTest, ABucketsAllReduceOverlapsTheNextInstructions) {
  runTwice(bucketProgram, 1000, [](Executor &e, int r, const Tensor *in) {
    const Tensor &mine = in[r];
    Tensor out, total;
    ASSERT_TRUE(e.getOutput("out", out).isOk());
    ASSERT_TRUE(e.getOutput("sum", total).isOk());
    for (int64_t i = 0; i < 1000; ++i) {
      float a0 = in[0].data<float>()[i], a1 = in[1].data<float>()[i];
      float a = mine.data<float>()[i];
      float want = (a0 + a1) + a * a;
      ASSERT_EQ(out.data<float>()[i], want) << "rank " << r << " at " << i;
      float want0 = (a0 + a1) + a0 * a0, want1 = (a0 + a1) + a1 * a1;
      ASSERT_EQ(total.data<float>()[i], want0 + want1)
          << "rank " << r << " at " << i;
    }
  });
}

/// Rank `rank`'s program: w = `collective`(a) (`attrs`, group {0, 1}) of an
/// input of `in` elements into `out`, issued asynchronously, z = a * a
/// computed meanwhile, the wait, then out = w + w.
std::shared_ptr<const Program> overlapProgram(int rank, const char *collective,
                                              Attrs attrs, int64_t in,
                                              int64_t out) {
  ArtifactBuilder b;
  ProgramBuilder &p = b.rank(rank);
  int a = p.addInput("a", DType::F32, {in});
  int w = p.addBuffer(DType::F32, {out});
  int z = p.addBuffer(DType::F32, {in});
  int o = p.addBuffer(DType::F32, {out});
  p.addOp(collective, {a}, {w}, attrs.is("group", {0, 1}));
  p.addOp("mul", {a, a}, {z});
  p.addOp("wait", {a, w}, {});
  p.addOp("add", {w, w}, {o});
  p.addOutput("out", o);
  p.addOutput("z", z);
  return built(p);
}

/// FSDP's prefetch: an all_gather along dim 0, 500 -> 1000.
std::shared_ptr<const Program> prefetchProgram(int rank) {
  return overlapProgram(rank, "all_gather", Attrs().i("dim", 0), 500, 1000);
}

TEST_F(AsyncCollectiveTest, APrefetchedAllGatherOverlapsTheNextInstructions) {
  runTwice(prefetchProgram, 500, [](Executor &e, int r, const Tensor *in) {
    Tensor out;
    ASSERT_TRUE(e.getOutput("out", out).isOk());
    for (int64_t i = 0; i < 1000; ++i)
      ASSERT_EQ(out.data<float>()[i], in[i / 500].data<float>()[i % 500] * 2)
          << "rank " << r << " at " << i;
  });
}

/// ZeRO's gradients: a reduce_scatter (sum) along dim 0, 1000 -> 500.
std::shared_ptr<const Program> reduceScatterProgram(int rank) {
  return overlapProgram(rank, "reduce_scatter",
                        Attrs().s("kind", "sum").i("dim", 0), 1000, 500);
}

TEST_F(AsyncCollectiveTest, AGradientsReduceScatterOverlapsTheNextInstructions) {
  runTwice(reduceScatterProgram, 1000, [](Executor &e, int r, const Tensor *in) {
    Tensor out;
    ASSERT_TRUE(e.getOutput("out", out).isOk());
    for (int64_t i = 0; i < 500; ++i) {
      float sum = in[0].data<float>()[r * 500 + i] +
                  in[1].data<float>()[r * 500 + i];
      ASSERT_FLOAT_EQ(out.data<float>()[i], sum * 2)
          << "rank " << r << " at " << i;
    }
  });
}

/// A one-rank program: y = all_reduce(a), z = a * a, then a wait of
/// `waitOperands` (buffers by name: a, y, z) with `waitResults`; the error
/// of building it, then of creating its executor ("" for none).
std::string waitError(std::vector<char> waitOperands,
                      std::vector<char> waitResults) {
  ArtifactBuilder b;
  ProgramBuilder &p = b.rank(0);
  int ids[3];
  ids[0] = p.addInput("a", DType::F32, {4});
  ids[1] = p.addBuffer(DType::F32, {4});
  ids[2] = p.addBuffer(DType::F32, {4});
  auto id = [&](char c) { return ids[c == 'a' ? 0 : c == 'y' ? 1 : 2]; };
  p.addOp("all_reduce", {ids[0]}, {ids[1]}, Attrs().s("kind", "sum"));
  p.addOp("mul", {ids[0], ids[0]}, {ids[2]});
  std::vector<int> operands, results;
  for (char c : waitOperands)
    operands.push_back(id(c));
  for (char c : waitResults)
    results.push_back(id(c));
  p.addOp("wait", operands, results);
  p.addOutput("y", ids[1]);
  std::shared_ptr<const Program> prog;
  Status s = p.build(prog);
  if (!s.isOk())
    return s.message();
  std::unique_ptr<Executor> e;
  s = createExecutor("cpu", prog, ExecutorOptions(), e);
  return s.isOk() ? "" : s.message();
}

TEST(CollectiveOverlapChoice, AutoOverlapsUnlessTheRanksCoresMoveTheBytes) {
  // Shared memory: the calling thread copies; a spare core or none.
  EXPECT_FALSE(overlapsCollectives(CollectiveOverlap::Auto, "shm", 1, 1));
  EXPECT_FALSE(overlapsCollectives(CollectiveOverlap::Auto, "shm", 4, 4));
  EXPECT_TRUE(overlapsCollectives(CollectiveOverlap::Auto, "shm", 2, 1));
  EXPECT_TRUE(overlapsCollectives(CollectiveOverlap::Auto, "shm", 16, 8));
  // Gloo (the kernel and the NIC move the bytes), a single rank.
  EXPECT_TRUE(overlapsCollectives(CollectiveOverlap::Auto, "gloo", 1, 1));
  EXPECT_TRUE(overlapsCollectives(CollectiveOverlap::Auto, "local", 1, 1));
  // Asked for.
  EXPECT_TRUE(overlapsCollectives(CollectiveOverlap::On, "shm", 1, 1));
  EXPECT_FALSE(overlapsCollectives(CollectiveOverlap::Off, "gloo", 8, 1));
  EXPECT_GE(getAllowedCores(), 1);
}

TEST(AsyncCollectiveValidation, AWaitNamesAnEarlierAllReduce) {
  EXPECT_EQ(waitError({'a', 'y'}, {}), "");
  // Operand 0 is not what the all_reduce reads.
  std::string e = waitError({'z', 'y'}, {});
  EXPECT_NE(e.find("instruction 2 (wait): no all_reduce, all_gather or "
                   "reduce_scatter before it reads buffer"),
            std::string::npos)
      << e;
}

TEST(AsyncCollectiveValidation, AWaitHasTwoOperandsAndNoResults) {
  std::string e = waitError({'a', 'y'}, {'z'});
  EXPECT_NE(e.find("instruction 2 (wait): expects no results, got 1"),
            std::string::npos)
      << e;
  e = waitError({'y'}, {});
  EXPECT_NE(e.find("instruction 2 (wait): expects 2 operands, got 1"),
            std::string::npos)
      << e;
}

} // namespace
