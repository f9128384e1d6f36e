//===- ShmCommTest.cpp - The shm communicator against naive references ----===//
//
// Every collective of the shm backend on 2 and 4 ranks, each rank a thread
// with its own store connection, Gloo fallback and mapping of the segment,
// with slots of 4 KiB so that most tensors go through in several chunks:
// every reduce kind, f32, i32, i64 and bool, uneven pieces, in-place calls,
// subgroups, the collectives it hands to Gloo. References are computed here
// from every rank's (deterministic) input. Then: sums in member order and
// bitwise identical on every rank; send/recv through the segment's rings
// (any tag order, streamed, without Gloo); members at different collectives; a
// hung rank, a rank that leaves and a killed rank process (fork), each
// named; nothing left in /dev/shm. ShmCommBench prints timings of Gloo and
// shm between 2 processes (with TESSEL_COMM_BENCH=1; TESSEL_SHM_SLOT_KB sets
// the slot of the process tests) and checks none.
//
//===----------------------------------------------------------------------===//
#include "tessel/runtime/Communicator.h"
#include "tessel/runtime/Store.h"
#include "tessel/runtime/Tensor.h"

#include "CommTestUtil.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <csignal>
#include <cstring>
#include <dirent.h>
#include <functional>
#include <mutex>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

using namespace tessel::runtime;
using namespace tessel::runtime::commtest;
using std::chrono::milliseconds;

namespace {

constexpr size_t kSlot = 4096;

/// Entries of /dev/shm made by this process's communicators.
std::vector<std::string> ourSegments() {
  std::vector<std::string> found;
  std::string mark = "-" + std::to_string(::getpid()) + "-";
  if (DIR *d = ::opendir("/dev/shm")) {
    while (dirent *e = ::readdir(d)) {
      std::string name = e->d_name;
      if (name.rfind("tessel-", 0) == 0 && name.find(mark) != std::string::npos)
        found.push_back(name);
    }
    ::closedir(d);
  }
  return found;
}

struct RunOptions {
  milliseconds timeout = milliseconds(10000);
  size_t slot = kSlot;
  bool fallback = true;
};

class ShmCommTest : public RankThreadsTest {
protected:
  /// Runs fn(comm, rank) on `n` ranks over shm (and Gloo's fallback), one
  /// thread each.
  void runRanks(int n, const std::function<void(Communicator &, int)> &fn,
                RunOptions ro = RunOptions()) {
    CommOptions options;
    options.timeout = ro.timeout;
    options.shmSlotBytes = ro.slot;
    options.sharedCore = sharedCore;
    auto make = [&](const CommOptions &o, std::unique_ptr<Communicator> &c) {
      std::unique_ptr<Communicator> gloo;
      if (ro.fallback && haveGlooCommunicator())
        TSL_RETURN_IF_ERROR(createGlooCommunicator(o, gloo));
      TSL_RETURN_IF_ERROR(createShmCommunicator(o, std::move(gloo), c));
      EXPECT_STREQ(c->backend(), "shm");
      return Status::ok();
    };
    runWith(n, options, make, fn);
  }
  /// CommOptions::sharedCore: waits yield and sleep without spinning.
  bool sharedCore = false;
};

struct Ranks {
  int ranks;
  bool sharedCore;
};

class ShmSizeTest : public ShmCommTest,
                    public ::testing::WithParamInterface<Ranks> {
protected:
  void SetUp() override {
    ShmCommTest::SetUp();
    sharedCore = GetParam().sharedCore;
  }
};

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

void checkAllReduce(Communicator &c, int r, int n, DType dtype, Shape shape,
                    ReduceKind k, bool inPlace = false) {
  Tensor in = input(r, dtype, shape), out(dtype, shape);
  Tensor &res = inPlace ? in : out;
  Status s = c.allReduce(view(in), view(res), k);
  ASSERT_TRUE(s.isOk()) << s.message();
  expectSame(res, reduced(k, n, dtype, shape),
             std::string("all_reduce ") + reduceKindName(k) + " of " +
                 dtypeName(dtype) + " " + shapeToString(shape) +
                 (inPlace ? " in place" : ""));
}

TEST_P(ShmSizeTest, AllReduceEveryKindAndDtype) {
  int n = GetParam().ranks;
  runRanks(n, [n](Communicator &c, int r) {
    // 3 * 1337 f32: four 4 KiB chunks and a ragged last one.
    for (ReduceKind k : {ReduceKind::Sum, ReduceKind::Max, ReduceKind::Min,
                         ReduceKind::Mean, ReduceKind::Prod}) {
      checkAllReduce(c, r, n, DType::F32, {3, 1337}, k);
      checkAllReduce(c, r, n, DType::F32, {5}, k); // fewer entries than... n
    }
    for (ReduceKind k : {ReduceKind::Sum, ReduceKind::Max, ReduceKind::Min,
                         ReduceKind::Prod}) {
      checkAllReduce(c, r, n, DType::I32, {2501}, k);
      checkAllReduce(c, r, n, DType::I64, {3, 259}, k);
    }
    checkAllReduce(c, r, n, DType::Bool, {5003}, ReduceKind::Max);
    checkAllReduce(c, r, n, DType::Bool, {5003}, ReduceKind::Min);
    checkAllReduce(c, r, n, DType::F32, {3, 1337}, ReduceKind::Sum, true);
    checkAllReduce(c, r, n, DType::I64, {1500}, ReduceKind::Max, true);
    // Large i64 values.
    checkLargeI64Sum(c, r, n);
  });
}

TEST_P(ShmSizeTest, SumsInMemberOrderBitwiseIdenticalOnEveryRank) {
  int n = GetParam().ranks;
  Shape shape{7, 1031};
  // Inexact values: the order of the sum shows in the low bits.
  auto value = [](int rank, int64_t i) {
    return static_cast<float>(std::sin(0.37 * i + rank) *
                              std::pow(10.0, i % 7 - 3));
  };
  std::vector<Tensor> sums(n), means(n);
  runRanks(n, [&](Communicator &c, int r) {
    Tensor in(DType::F32, shape);
    for (int64_t i = 0; i < in.numElements(); ++i)
      in.data<float>()[i] = value(r, i);
    sums[r] = Tensor(DType::F32, shape);
    means[r] = Tensor(DType::F32, shape);
    ASSERT_TRUE(c.allReduce(view(in), view(sums[r]), ReduceKind::Sum).isOk());
    ASSERT_TRUE(c.allReduce(view(in), view(means[r]), ReduceKind::Mean).isOk());
  });
  Tensor want(DType::F32, shape), wantMean(DType::F32, shape);
  for (int64_t i = 0; i < want.numElements(); ++i) {
    float acc = value(0, i);
    for (int q = 1; q < n; ++q)
      acc += value(q, i);
    want.data<float>()[i] = acc;
    wantMean.data<float>()[i] = acc / static_cast<float>(n);
  }
  for (int r = 0; r < n; ++r) {
    expectSame(sums[r], want, "sum on rank " + std::to_string(r));
    expectSame(means[r], wantMean, "mean on rank " + std::to_string(r));
  }
}

TEST_P(ShmSizeTest, AllGatherEveryDimUnevenAndChunked) {
  int n = GetParam().ranks;
  runRanks(n, [n](Communicator &c, int r) {
    checkAllGather(c, r, n, {2 * n + 1, 700}, 0);
    checkAllGather(c, r, n, {3, n + 1, 500}, 1);
    checkAllGather(c, r, n, {4, 3, 100 * n - 1}, 2);
    checkAllGather(c, r, n, {2, 3, n - 1}, 2); // member n-1 holds nothing
    checkAllGather(c, r, n, {2, 3 * n}, 1);
    checkAllGather(c, r, n, {1001, n}, 1, DType::I32);
    checkAllGather(c, r, n, {5, 2 * n + 1}, 1, DType::Bool);
  });
}

TEST_P(ShmSizeTest, ReduceScatterEveryDimKindUnevenAndChunked) {
  int n = GetParam().ranks;
  runRanks(n, [n](Communicator &c, int r) {
    checkReduceScatter(c, r, n, {2 * n + 1, 700}, 0, ReduceKind::Sum);
    checkReduceScatter(c, r, n, {3, n + 1, 500}, 1, ReduceKind::Max);
    checkReduceScatter(c, r, n, {3, 500, n}, 2, ReduceKind::Mean);
    checkReduceScatter(c, r, n, {4, 1001}, 1, ReduceKind::Min);
    checkReduceScatter(c, r, n, {4, 1001}, 1, ReduceKind::Prod);
    checkReduceScatter(c, r, n, {2, n - 1}, 1, ReduceKind::Sum); // a piece of 0
    checkReduceScatter(c, r, n, {300 * n + 1, 7}, 0, ReduceKind::Sum,
                       DType::I32);
    checkReduceScatter(c, r, n, {3, 999}, 1, ReduceKind::Max, DType::I64);
    checkReduceScatter(c, r, n, {3, 999}, 1, ReduceKind::Min, DType::Bool);
  });
}

TEST_P(ShmSizeTest, BroadcastFromEveryRootChunked) {
  int n = GetParam().ranks;
  runRanks(n, [n](Communicator &c, int r) {
    for (int root = 0; root < n; ++root) {
      checkBroadcastFrom(c, r, root);
      Tensor t = input(r, DType::I64, {777});
      ASSERT_TRUE(c.broadcast(view(t), view(t), root).isOk());
      expectSame(t, input(root, DType::I64, {777}), "in-place broadcast");
    }
    Tensor bad = input(r, {4});
    Status s = c.broadcast(view(bad), view(bad), n);
    ASSERT_FALSE(s.isOk());
    EXPECT_TRUE(contains(s, "root " + std::to_string(n) + " is out of range"))
        << s.message();
  });
}

TEST_P(ShmSizeTest, FallbackCollectivesAndBarriers) {
  int n = GetParam().ranks;
  if (!haveGlooCommunicator())
    GTEST_SKIP() << "no Gloo in this build";
  runRanks(n, [n](Communicator &c, int r) {
    // all_to_all and collective_permute go to Gloo (send/recv: the rings).
    Shape is{2 * n, 3};
    Tensor in = input(r, is), out(DType::F32, {2, 3 * n});
    ASSERT_TRUE(c.allToAll(view(in), view(out), 0, 1).isOk());
    for (int q = 0; q < n; ++q)
      for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 3; ++j)
          EXPECT_EQ(out.data<float>()[i * 3 * n + q * 3 + j],
                    input(q, is).data<float>()[(2 * r + i) * 3 + j]);
    Tensor x = input(r, {4, 3}), y(DType::F32, {4, 3});
    ASSERT_TRUE(c.collectivePermute(view(x), view(y), ring(n)).isOk());
    expectSame(y, input((r + n - 1) % n, {4, 3}), "ring shift");
    ASSERT_TRUE(c.barrier().isOk());
    // Only some members send: the barrier still agrees.
    Tensor p = input(r, {17}), q(DType::F32, {17});
    if (r == 0) {
      ASSERT_TRUE(c.send(view(p), 1, 3).isOk());
    }
    if (r == 1) {
      ASSERT_TRUE(c.recv(view(q), 0, 3).isOk());
      expectSame(q, input(0, {17}), "send/recv");
    }
    ASSERT_TRUE(c.barrier().isOk());
    ASSERT_TRUE(c.barrier().isOk());
    checkAllReduce(c, r, n, DType::F32, {3, 1337}, ReduceKind::Sum);
  });
}

//===----------------------------------------------------------------------===//
// send/recv through the segment's rings
//===----------------------------------------------------------------------===//

/// Every rank sends every other rank a small message, one larger than its
/// ring (streamed while the receiver reads) and one that wraps, from a
/// thread of its own (as the CPU executor's communication thread does),
/// while it receives them in the reverse order of their tags: the
/// receiver reads the earlier tags aside. Without Gloo: the rings alone.
TEST_P(ShmSizeTest, SendRecvThroughTheRingsInAnyTagOrder) {
  int n = GetParam().ranks;
  RunOptions ro;
  ro.fallback = false;
  const std::vector<Shape> shapes = {{17}, {3, 40000}, {50000}};
  runRanks(
      n,
      [&](Communicator &c, int r) {
        Status sent = Status::ok();
        std::thread sender([&] {
          for (int round = 0; round < 2 && sent.isOk(); ++round)
            for (int peer = 0; peer < n && sent.isOk(); ++peer)
              for (size_t k = 0; k < shapes.size() && sent.isOk(); ++k) {
                if (peer == r)
                  continue;
                Tensor t = input(r * 100 + int(k) + 10 * round, shapes[k]);
                sent = c.send(view(t), peer, int64_t(10 * round + k));
              }
        });
        for (int round = 0; round < 2; ++round)
          for (int peer = 0; peer < n; ++peer)
            for (size_t k = shapes.size(); k-- > 0;) {
              if (peer == r)
                continue;
              Tensor got(DType::F32, shapes[k]);
              Status s = c.recv(view(got), peer, int64_t(10 * round + k));
              ASSERT_TRUE(s.isOk()) << s.message();
              expectSame(got, input(peer * 100 + int(k) + 10 * round, shapes[k]),
                         "message " + std::to_string(k) + " of round " +
                             std::to_string(round) + " from rank " +
                             std::to_string(peer));
            }
        sender.join();
        ASSERT_TRUE(sent.isOk()) << sent.message();
        ASSERT_TRUE(c.barrier().isOk());
      },
      ro);
}

/// trySend (the CPU executor's eager sends): a message the ring has room
/// for goes at once; one larger than the free space is refused and nothing
/// of it is written, so that send() after it delivers it whole; the
/// receiver gets both by tag, in any order.
TEST_F(ShmCommTest, TrySendTakesWhatFitsAndRefusesTheRest) {
  RunOptions ro;
  ro.fallback = false;
  runRanks(
      2,
      [](Communicator &c, int r) {
        const Shape small = {1000}, large = {100000}; // 4 KB; 400 KB > ring
        if (r == 0) {
          Tensor a = input(1, small), b = input(2, large);
          EXPECT_TRUE(c.trySend(view(a), 1, 1));
          EXPECT_FALSE(c.trySend(view(b), 1, 2));
          EXPECT_FALSE(c.trySend(view(a), 5, 3)); // no such member
          ASSERT_TRUE(c.send(view(b), 1, 2).isOk());
          ASSERT_TRUE(c.barrier().isOk());
          return;
        }
        Tensor gotB(DType::F32, large), gotA(DType::F32, small);
        ASSERT_TRUE(c.recv(view(gotB), 0, 2).isOk());
        ASSERT_TRUE(c.recv(view(gotA), 0, 1).isOk());
        expectSame(gotA, input(1, small), "the eager message");
        expectSame(gotB, input(2, large), "the refused one, sent after");
        ASSERT_TRUE(c.barrier().isOk());
      },
      ro);
}

TEST_F(ShmCommTest, RecvOfTheWrongSizeIsNamed) {
  RunOptions ro;
  ro.fallback = false;
  runRanks(
      2,
      [](Communicator &c, int r) {
        Tensor t = input(r, {17}), small(DType::F32, {16});
        if (r == 0) {
          ASSERT_TRUE(c.send(view(t), 1, 5).isOk());
          return;
        }
        Status s = c.recv(view(small), 0, 5);
        ASSERT_FALSE(s.isOk());
        EXPECT_TRUE(contains(s, "rank 1: recv from rank 0 over ranks [0, 1]: "
                                "the message of tag 5 holds 68 bytes, the "
                                "recv expects 64"))
            << s.message();
      },
      ro);
}

/// A receive from a rank that never sends ends at the timeout, naming it;
/// one from a rank that sent and then left gets what it sent, and the next
/// says that it left.
TEST_F(ShmCommTest, RecvFromAHungOrDepartedRankEnds) {
  RunOptions ro;
  ro.fallback = false;
  ro.timeout = milliseconds(500);
  std::atomic<bool> done{false};
  runRanks(
      2,
      [&](Communicator &c, int r) {
        if (r == 1)
          return hangUntil(done);
        Tensor got(DType::F32, {4});
        const auto start = std::chrono::steady_clock::now();
        Status s = c.recv(view(got), 1, 0);
        const auto took = std::chrono::steady_clock::now() - start;
        done = true;
        ASSERT_FALSE(s.isOk());
        EXPECT_GE(took, milliseconds(450));
        EXPECT_LT(took, milliseconds(3000));
        EXPECT_TRUE(contains(s, "rank 0: recv from rank 1 over ranks [0, 1] "
                                "failed: Timed out after 500 ms waiting for "
                                "rank 1 (pid " +
                                    std::to_string(::getpid()) +
                                    "); rank 1 did not fail here and is alive"))
            << s.message();
      },
      ro);
  runRanks(
      2,
      [&](Communicator &c, int r) {
        Tensor t = input(1, {4}), got(DType::F32, {4});
        if (r == 1) {
          ASSERT_TRUE(c.send(view(t), 0, 7).isOk());
          return; // destroys its communicator
        }
        std::this_thread::sleep_for(milliseconds(200));
        Status s = c.recv(view(got), 1, 7);
        ASSERT_TRUE(s.isOk()) << s.message();
        expectSame(got, t, "sent before leaving");
        s = c.recv(view(got), 1, 8);
        ASSERT_FALSE(s.isOk());
        EXPECT_TRUE(contains(s, "rank 1 left (its communicator was destroyed)"))
            << s.message();
      },
      ro);
}

TEST_P(ShmSizeTest, BigSlotsAndSmallTensors) {
  int n = GetParam().ranks;
  RunOptions ro;
  ro.slot = 0; // the default
  runRanks(
      n,
      [n](Communicator &c, int r) {
        checkAllReduce(c, r, n, DType::F32, {128, 768}, ReduceKind::Sum);
        checkAllReduce(c, r, n, DType::F32, {1}, ReduceKind::Max);
        checkAllGather(c, r, n, {3, 2 * n}, 1);
        checkReduceScatter(c, r, n, {2 * n + 1, 3}, 0, ReduceKind::Sum);
        ASSERT_TRUE(c.barrier().isOk());
      },
      ro);
}

TEST_F(ShmCommTest, SubgroupsRunSideBySide) {
  runRanks(4, [](Communicator &c, int r) {
    std::vector<int> g = pairOf(r);
    Communicator *sub = nullptr;
    makeSubgroup(c, r, {{2, 0}, {1, 3}, {0, 1, 2, 3}, {0, 1, 2}}, g, sub);
    ASSERT_TRUE(sub);
    EXPECT_STREQ(sub->backend(), "shm");
    int index = sub->rank();
    for (int round = 0; round < 3; ++round) {
      // A subgroup all_gather, a world all_reduce, a subgroup reduce.
      checkPairAllGather(c, r, g, 700, round);
      checkAllReduce(c, r, 4, DType::F32, {3, 1337}, ReduceKind::Sum);
      Tensor a = input(r, {2000}, round);
      ASSERT_TRUE(c.allReduce(view(a), view(a), ReduceKind::Max, g).isOk());
      Tensor wa = input(g[0], {2000}, round);
      combineInto(ReduceKind::Max, wa, input(g[1], {2000}, round));
      expectSame(a, wa, "all_reduce in a subgroup");
      Tensor rs(DType::F32, {1000});
      Tensor rin = input(r, {2000}, round);
      ASSERT_TRUE(
          c.reduceScatter(view(rin), view(rs), ReduceKind::Sum, 0, g).isOk());
      Tensor ws = input(g[0], {2000}, round);
      combineInto(ReduceKind::Sum, ws, input(g[1], {2000}, round));
      for (int i = 0; i < 1000; ++i)
        ASSERT_EQ(rs.data<float>()[i], ws.data<float>()[index * 1000 + i]);
    }
    // A group of three, where rank 3 takes no part.
    if (r != 3) {
      Tensor t = input(r, {1500});
      ASSERT_TRUE(
          c.allReduce(view(t), view(t), ReduceKind::Sum, {0, 1, 2}).isOk());
      Tensor w3 = input(0, {1500});
      combineInto(ReduceKind::Sum, w3, input(1, {1500}));
      combineInto(ReduceKind::Sum, w3, input(2, {1500}));
      expectSame(t, w3, "all_reduce over [0, 1, 2]");
    }
    checkCachedAndBroadcast(c, r, g, sub, 5000);
    ASSERT_TRUE(c.barrier().isOk());
    EXPECT_TRUE(ourSegments().empty());
  });
}

TEST_F(ShmCommTest, GroupAndShapeErrorsAreReported) {
  runRanks(2, [](Communicator &c, int r) {
    Communicator *sub = nullptr;
    Status s = c.subgroup({1 - r}, sub);
    ASSERT_FALSE(s.isOk());
    EXPECT_TRUE(contains(s, "does not include this rank")) << s.message();
    Tensor in = input(r, {4, 3}), bad(DType::F32, {5, 6});
    s = c.allGather(view(in), view(bad), 1);
    ASSERT_FALSE(s.isOk());
    EXPECT_TRUE(contains(s, "result has shape [5, 6], expected [4, 6]"))
        << s.message();
    Tensor i64(DType::I64, {4, 3});
    s = c.allReduce(view(i64), view(i64), ReduceKind::Mean);
    ASSERT_FALSE(s.isOk());
    EXPECT_TRUE(contains(s, "a mean needs f32 or f64, got i64")) << s.message();
    // Refused before any transfer: the communicator still works.
    checkAllReduce(c, r, 2, DType::F32, {33}, ReduceKind::Sum);
  });
}

TEST_F(ShmCommTest, MembersAtDifferentCollectivesAreNamed) {
  runRanks(2, [](Communicator &c, int r) {
    Tensor t = input(r, {64});
    Status s = r == 0 ? c.allReduce(view(t), view(t), ReduceKind::Sum)
                      : c.broadcast(view(t), view(t), 0);
    ASSERT_FALSE(s.isOk());
    std::string want =
        r == 0 ? "rank 0: all_reduce over ranks [0, 1] failed: rank 1 is at "
                 "broadcast from 0 of f32 [64], this rank at all_reduce (sum) "
                 "of f32 [64]"
               : "rank 0 is at all_reduce (sum) of f32 [64]";
    EXPECT_TRUE(contains(s, want)) << s.message();
    s = c.allReduce(view(t), view(t), ReduceKind::Sum);
    ASSERT_FALSE(s.isOk());
    EXPECT_TRUE(contains(s, "not run, an earlier collective over these ranks "
                            "failed"))
        << s.message();
  });
}

TEST_F(ShmCommTest, DifferentShapesAreNamed) {
  runRanks(2, [](Communicator &c, int r) {
    Tensor t = input(r, {64 + r});
    Status s = c.allReduce(view(t), view(t), ReduceKind::Sum);
    ASSERT_FALSE(s.isOk());
    EXPECT_TRUE(contains(s, "rank " + std::to_string(1 - r) +
                                " is at all_reduce (sum) of f32 [" +
                                std::to_string(65 - r) + "]"))
        << s.message();
  });
}

TEST_P(ShmSizeTest, HungRankIsNamedAfterTheTimeout) {
  int n = GetParam().ranks;
  std::atomic<bool> done{false};
  RunOptions ro;
  ro.timeout = milliseconds(500);
  std::atomic<int> failed{0};
  runRanks(
      n,
      [&](Communicator &c, int r) {
        if (r == n - 1)
          return hangUntil(done);
        std::chrono::steady_clock::duration took;
        Status s = allReduceWithoutPeer(c, took);
        if (++failed == n - 1)
          done = true;
        ASSERT_FALSE(s.isOk());
        EXPECT_GE(took, milliseconds(450));
        EXPECT_LT(took, milliseconds(3000));
        std::string last = std::to_string(n - 1);
        EXPECT_TRUE(contains(s, "Timed out after 500 ms waiting for rank " +
                                    last + " (pid " +
                                    std::to_string(::getpid()) + ")"))
            << s.message();
        EXPECT_TRUE(
            contains(s, "rank " + last + " did not fail here and is alive"))
            << s.message();
      },
      ro);
}

TEST_F(ShmCommTest, RankThatLeavesIsNamed) {
  runRanks(2, [&](Communicator &c, int r) {
    if (r == 1)
      return; // destroys its communicator
    std::chrono::steady_clock::duration took;
    Status s = allReduceWithoutPeer(c, took);
    ASSERT_FALSE(s.isOk());
    EXPECT_LT(took, milliseconds(2000));
    EXPECT_TRUE(contains(s,
                         "rank 0: all_reduce over ranks [0, 1] failed: rank 1 "
                         "left (its communicator was destroyed)"))
        << s.message();
  });
}

TEST_F(ShmCommTest, NoSegmentIsLeftBehind) {
  runRanks(2, [](Communicator &c, int r) {
    // Every member has mapped the segment once creation returns.
    EXPECT_TRUE(ourSegments().empty());
    checkAllReduce(c, r, 2, DType::F32, {10}, ReduceKind::Sum);
  });
  EXPECT_TRUE(ourSegments().empty());
}

TEST_F(ShmCommTest, ShmIsUsableWhenEveryRankWantsIt) {
  for (bool secondWants : {true, false}) {
    CommOptions base;
    base.prefix = std::string("usable/") + (secondWants ? "1/" : "0/");
    runConnected(*server, 2, base, [&](CommOptions &o, int r) {
      bool usable = !secondWants;
      Status s = shmUsable(o, r == 0 || secondWants, usable);
      ASSERT_TRUE(s.isOk()) << s.message();
      EXPECT_EQ(usable, secondWants);
    });
  }
}

TEST(ShmCommSetup, AFailedSetupGivesTheFallbackBack) {
  auto local = createLocalCommunicator();
  Communicator *raw = local.get();
  CommOptions o;
  o.rank = 0;
  o.size = 2; // the fallback has 1
  std::unique_ptr<TcpStoreServer> server;
  ASSERT_NO_FATAL_FAILURE(startStore(server, o.store));
  std::unique_ptr<Communicator> out;
  Status s = createShmCommunicator(o, std::move(local), out);
  ASSERT_FALSE(s.isOk());
  EXPECT_TRUE(
      contains(s, "the fallback communicator is rank 0 of 1, not 0 of 2"))
      << s.message();
  EXPECT_EQ(out.get(), raw);
}

//===----------------------------------------------------------------------===//
// Rank processes
//===----------------------------------------------------------------------===//

/// Which communicator forkRanks makes.
enum class Kind { Shm, ShmOverGloo, Gloo };

/// Forks ranks 1..n-1 (children) before any thread exists; this process is
/// rank 0 and hosts the store. Each runs body(rank, comm); a child exits
/// with 0 when its body returns true. Returns the children's pids.
std::vector<pid_t>
forkRanks(int n, Kind kind, milliseconds timeout,
          const std::function<bool(int, Communicator &)> &body,
          std::unique_ptr<TcpStoreServer> &server,
          std::unique_ptr<Communicator> &comm0) {
  int fds[2];
  if (::pipe(fds) != 0)
    return {};
  std::vector<pid_t> pids;
  auto join = [&](int r, int port, std::unique_ptr<Communicator> &c) {
    std::unique_ptr<TcpStore> store;
    Status s =
        TcpStore::connect("127.0.0.1", port, r, milliseconds(5000), store);
    if (!s)
      return s;
    CommOptions o;
    o.rank = r;
    o.size = n;
    o.store = std::move(store);
    o.hostname = "127.0.0.1";
    o.timeout = timeout;
    if (const char *kb = std::getenv("TESSEL_SHM_SLOT_KB"))
      o.shmSlotBytes = static_cast<size_t>(std::atoi(kb)) << 10;
    std::unique_ptr<Communicator> fb;
    if (kind != Kind::Shm)
      TSL_RETURN_IF_ERROR(createGlooCommunicator(o, fb));
    if (kind == Kind::Gloo) {
      c = std::move(fb);
      return Status::ok();
    }
    return createShmCommunicator(o, std::move(fb), c);
  };
  for (int r = 1; r < n; ++r) {
    pid_t pid = ::fork();
    if (pid == 0) {
      ::close(fds[1]);
      int port = 0;
      if (::read(fds[0], &port, sizeof(port)) != sizeof(port))
        ::_exit(2);
      std::unique_ptr<Communicator> c;
      Status s = join(r, port, c);
      if (!s) {
        std::fprintf(stderr, "rank %d: %s\n", r, s.message().c_str());
        ::_exit(3);
      }
      ::_exit(body(r, *c) ? 0 : 1);
    }
    pids.push_back(pid);
  }
  ::close(fds[0]);
  if (!TcpStoreServer::start(0, true, server).isOk())
    return pids;
  int port = server->port();
  for (int r = 1; r < n; ++r)
    if (::write(fds[1], &port, sizeof(port)) != sizeof(port))
      return pids;
  ::close(fds[1]);
  Status s = join(0, port, comm0);
  EXPECT_TRUE(s.isOk()) << s.message();
  return pids;
}

/// forkRanks on 2 ranks: rank 0's communicator in `comm`, rank 1's pid in
/// `child`.
void forkPair(Kind kind, milliseconds timeout,
              const std::function<bool(int, Communicator &)> &body,
              std::unique_ptr<TcpStoreServer> &server,
              std::unique_ptr<Communicator> &comm, pid_t &child) {
  std::vector<pid_t> pids = forkRanks(2, kind, timeout, body, server, comm);
  ASSERT_EQ(pids.size(), 1u);
  ASSERT_TRUE(comm);
  child = pids[0];
}

/// Waits for `child`; its wait status.
int waitStatus(pid_t child) {
  int status = 0;
  EXPECT_EQ(::waitpid(child, &status, 0), child);
  return status;
}

/// Runs body on 2 ranks, rank 1 in a child process; both must succeed.
void runPair(Kind kind, milliseconds timeout,
             const std::function<bool(int, Communicator &)> &body) {
  std::unique_ptr<TcpStoreServer> server;
  std::unique_ptr<Communicator> c;
  pid_t child = -1;
  ASSERT_NO_FATAL_FAILURE(forkPair(kind, timeout, body, server, c, child));
  EXPECT_TRUE(body(0, *c));
  int status = waitStatus(child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
}

TEST(ShmCommProcesses, CollectivesAcrossProcesses) {
  auto body = [](int r, Communicator &c) {
    Tensor in = input(r, {3, 1337}), out(DType::F32, {3, 1337});
    if (!c.allReduce(view(in), view(out), ReduceKind::Sum).isOk())
      return false;
    Tensor want = input(0, {3, 1337});
    combineInto(ReduceKind::Sum, want, input(1, {3, 1337}));
    return std::memcmp(out.data(), want.data(), want.byteSize()) == 0 &&
           c.barrier().isOk();
  };
  runPair(Kind::Shm, milliseconds(10000), body);
}

TEST(ShmCommProcesses, KilledPeerIsNamed) {
  // Rank 1 runs one all_reduce, then is killed; rank 0's second one fails
  // long before the timeout, naming it. The child stays a zombie until
  // waited for, which must count as dead too.
  auto body = [](int r, Communicator &c) {
    Tensor t = input(r, {1000});
    if (!c.allReduce(view(t), view(t), ReduceKind::Sum).isOk())
      return false;
    ::raise(SIGKILL);
    return true;
  };
  std::unique_ptr<TcpStoreServer> server;
  std::unique_ptr<Communicator> c;
  pid_t child = -1;
  ASSERT_NO_FATAL_FAILURE(
      forkPair(Kind::Shm, milliseconds(20000), body, server, c, child));
  Tensor t = input(0, {1000});
  ASSERT_TRUE(c->allReduce(view(t), view(t), ReduceKind::Sum).isOk());
  auto t0 = std::chrono::steady_clock::now();
  Status s = c->allReduce(view(t), view(t), ReduceKind::Sum);
  ASSERT_FALSE(s.isOk());
  EXPECT_LT(std::chrono::steady_clock::now() - t0, milliseconds(3000));
  EXPECT_TRUE(contains(s, "rank 0: all_reduce over ranks [0, 1] failed: rank 1 "
                          "(pid " +
                              std::to_string(child) +
                              ") exited during all_reduce"))
      << s.message();
  int status = waitStatus(child);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << status;
}

/// Median milliseconds per all_reduce(sum) of `numel` f32 on `c`.
double timeAllReduce(Communicator &c, int r, int64_t numel, int iters) {
  Tensor in = input(r, {numel}), out(DType::F32, {numel});
  std::vector<double> ms;
  for (int i = 0; i < iters + 2; ++i) {
    if (!c.barrier().isOk())
      return -1;
    auto t0 = std::chrono::steady_clock::now();
    if (!c.allReduce(view(in), view(out), ReduceKind::Sum).isOk())
      return -1;
    auto t1 = std::chrono::steady_clock::now();
    if (i >= 2)
      ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

TEST(ShmCommBench, AllReduceGlooVersusShm) {
  const char *on = std::getenv("TESSEL_COMM_BENCH");
  if (!on || std::string(on) != "1")
    GTEST_SKIP() << "set TESSEL_COMM_BENCH=1 to time all_reduce on 2 processes";
  if (!haveGlooCommunicator())
    GTEST_SKIP() << "no Gloo in this build";
  struct Case {
    const char *name;
    int64_t numel;
    int iters;
  };
  const Case cases[] = {{"393 KB ([128, 768] f32)", 128 * 768, 300},
                        {"64 MiB", 16 << 20, 15}};
  auto run = [&](int r, Communicator &c) {
    for (const Case &k : cases) {
      double ms = timeAllReduce(c, r, k.numel, k.iters);
      if (r == 0)
        std::printf("[ bench    ] all_reduce %-24s %-4s %9.3f ms  %7.2f GB/s\n",
                    k.name, c.backend(), ms, k.numel * 4.0 / ms / 1e6);
      if (ms < 0)
        return false;
    }
    return true;
  };
  for (Kind kind : {Kind::Gloo, Kind::ShmOverGloo})
    runPair(kind, milliseconds(60000), run);
}

// Each on 2 and 4 ranks, and on 4 that share cores (no spinning).
INSTANTIATE_TEST_SUITE_P(Ranks, ShmSizeTest,
                         ::testing::Values(Ranks{2, false}, Ranks{4, false},
                                           Ranks{4, true}),
                         [](const auto &info) {
                           return std::to_string(info.param.ranks) + "Ranks" +
                                  (info.param.sharedCore ? "SharedCore" : "");
                         });

} // namespace
