//===- NcclMockTest.cpp - The NCCL communicator on a host mock ------------===//
//
// runtime/comm/nccl/NcclCommunicator.cpp, compiled against mock_cuda/ (a host
// CUDA runtime and NCCL, MockGpu.h), on 2, 3 and 4 ranks that are threads
// around the runtime's TCP store: the ncclUniqueId exchange, communicator
// and subgroup ranks, every collective's piece layout (2D packing along
// inner dims, uneven pieces through grouped broadcasts/reduces, grouped
// send/recv), the device choice, and the failures (a bad id in the store,
// a missing or dead peer: timeout, async error, abort). Expected values
// come from CommTestUtil.h's references. After each test the mock must
// have seen no misuse and nothing may be left allocated.
//
// What only a machine with several GPUs can show: the real library's
// transports and kernels, and device memory.
//
//===----------------------------------------------------------------------===//
#include "tessel/runtime/Communicator.h"
#include "tessel/runtime/Store.h"
#include "tessel/runtime/Tensor.h"

#include "CommTestUtil.h"
#include "MockGpu.h"
#include "NcclCommunicator.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <functional>
#include <set>
#include <thread>

using namespace tessel::runtime;
using namespace tessel::runtime::commtest;
using std::chrono::milliseconds;
namespace mock = tessel::mockgpu;

namespace {

class NcclMockTest : public RankThreadsTest {
protected:
  void SetUp() override {
    RankThreadsTest::SetUp();
    mock::reset(8);
  }
  void TearDown() override {
    EXPECT_EQ(mock::takeViolations(), std::vector<std::string>());
    EXPECT_EQ(mock::liveAllocations(), 0u);
    EXPECT_EQ(mock::liveStreams(), 0u);
    EXPECT_EQ(mock::liveComms(), 0u);
  }

  /// Runs fn(comm, rank) on `n` ranks over NCCL, rank r asking for device
  /// r + `deviceOffset`. `prefix` gets the world's key prefix.
  void runRanks(int n, const std::function<void(Communicator &, int)> &fn,
                milliseconds timeout = milliseconds(10000),
                int deviceOffset = 0, std::string *prefix = nullptr) {
    CommOptions o;
    o.timeout = timeout;
    runWith(
        n, o,
        [&](const CommOptions &given, std::unique_ptr<Communicator> &out) {
          CommOptions d = given;
          d.device = given.rank + deviceOffset;
          if (prefix && given.rank == 0)
            *prefix = given.prefix;
          return nccl::createCommunicator(d, out);
        },
        fn);
  }
};

class NcclMockSizeTest : public NcclMockTest,
                         public ::testing::WithParamInterface<int> {};

/// `got` is within a few ulps of `want` (a mean over 3 is pre-multiplied
/// by 1/3 as NCCL does, not divided).
void expectNear(const Tensor &got, const Tensor &want,
                const std::string &what) {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  for (int64_t i = 0; i < got.numElements(); ++i)
    ASSERT_NEAR(got.data<float>()[i], want.data<float>()[i],
                1e-6f * (1 + std::fabs(want.data<float>()[i])))
        << what << " at flat index " << i;
}

TEST_P(NcclMockSizeTest, AllReduceEveryKindF32AndI64) {
  int n = GetParam();
  runRanks(n, [n](Communicator &c, int r) {
    EXPECT_STREQ(c.backend(), "nccl");
    for (ReduceKind k : {ReduceKind::Sum, ReduceKind::Max, ReduceKind::Min,
                         ReduceKind::Mean, ReduceKind::Prod}) {
      Shape shape{3, 37};
      Tensor in = input(r, shape), out(DType::F32, shape);
      Status s = c.allReduce(view(in), view(out), k);
      ASSERT_TRUE(s.isOk()) << s.message();
      std::string what = std::string("f32 all_reduce ") + reduceKindName(k);
      Tensor want = reduced(k, n, DType::F32, shape);
      if (k == ReduceKind::Mean && n == 3)
        expectNear(out, want, what);
      else
        expectSame(out, want, what);
      if (k == ReduceKind::Mean)
        continue; // f32 only
      Tensor i64 = input(r, DType::I64, {5, 7});
      s = c.allReduce(view(i64), view(i64), k); // in place
      ASSERT_TRUE(s.isOk()) << s.message();
      expectSame(i64, reduced(k, n, DType::I64, {5, 7}),
                 std::string("i64 all_reduce ") + reduceKindName(k));
    }
    checkLargeI64Sum(c, r, n);
    Tensor i32 = input(r, DType::I32, {9}), b = input(r, DType::Bool, {6});
    ASSERT_TRUE(c.allReduce(view(i32), view(i32), ReduceKind::Sum).isOk());
    expectSame(i32, reduced(ReduceKind::Sum, n, DType::I32, {9}), "i32 sum");
    ASSERT_TRUE(c.allReduce(view(b), view(b), ReduceKind::Max).isOk());
    expectSame(b, reduced(ReduceKind::Max, n, DType::Bool, {6}), "bool max");
  });
}

TEST_P(NcclMockSizeTest, AllGatherEvenAndUnevenOnOuterAndInnerDims) {
  int n = GetParam();
  runRanks(n, [n](Communicator &c, int r) {
    checkAllGather(c, r, n, {2 * n, 3}, 0);    // one ncclAllGather
    checkAllGather(c, r, n, {3, 2 * n, 2}, 1); // outer 3: packed, unpacked
    checkAllGather(c, r, n, {3, 5, 2 * n}, 2, DType::I64);
    checkAllGather(c, r, n, {7, 3}, 0);        // uneven: grouped broadcasts
    checkAllGather(c, r, n, {2, 7, 3}, 1);     // uneven, outer 2
    checkAllGather(c, r, n, {2, 3, n - 1}, 2); // member n-1 holds nothing
  });
}

TEST_P(NcclMockSizeTest, ReduceScatterEvenAndUnevenOnOuterAndInnerDims) {
  int n = GetParam();
  runRanks(n, [n](Communicator &c, int r) {
    checkReduceScatter(c, r, n, {2 * n, 3}, 0, ReduceKind::Sum);
    checkReduceScatter(c, r, n, {3, 2 * n, 5}, 1, ReduceKind::Max);
    checkReduceScatter(c, r, n, {3, 5, n}, 2, ReduceKind::Min, DType::I64);
    if (n != 3) // a mean over 3 is not bitwise the reference's
      checkReduceScatter(c, r, n, {4, 2 * n}, 1, ReduceKind::Mean);
    checkReduceScatter(c, r, n, {7, 3}, 0, ReduceKind::Prod); // grouped reduces
    checkReduceScatter(c, r, n, {3, 7}, 1, ReduceKind::Sum);  // uneven, outer 3
    checkReduceScatter(c, r, n, {2, 7, 2}, 1, ReduceKind::Max, DType::I64);
  });
}

TEST_P(NcclMockSizeTest, AllToAllEveryDimPair) {
  int n = GetParam();
  runRanks(n, [n](Communicator &c, int r) { checkAllToAlls(c, r, n); });
}

TEST_P(NcclMockSizeTest, CollectivePermute) {
  int n = GetParam();
  runRanks(n, [n](Communicator &c, int r) {
    checkPermutes(c, r, n);
    // Every member to itself: a local copy; in place, nothing.
    std::vector<std::pair<int, int>> self;
    for (int i = 0; i < n; ++i)
      self.emplace_back(i, i);
    Tensor x = input(r, {5}), y(DType::F32, {5});
    ASSERT_TRUE(c.collectivePermute(view(x), view(y), self).isOk());
    expectSame(y, input(r, {5}), "identity");
    ASSERT_TRUE(c.collectivePermute(view(x), view(x), self).isOk());
    expectSame(x, input(r, {5}), "identity in place");
    // In place, one pair: the source gets zeros after sending.
    Tensor z = input(r, {6});
    ASSERT_TRUE(c.collectivePermute(view(z), view(z), {{n - 1, 0}}).isOk());
    expectSame(z, r == 0 ? input(n - 1, {6}) : Tensor(DType::F32, {6}),
               "one pair in place");
  });
}

TEST_P(NcclMockSizeTest, BroadcastFromEveryRoot) {
  int n = GetParam();
  runRanks(n, [](Communicator &c, int r) {
    for (int root = 0; root < c.size(); ++root)
      checkBroadcastFrom(c, r, root);
    Tensor t = input(r, DType::I64, {4});
    ASSERT_TRUE(c.broadcast(view(t), view(t), c.size() - 1).isOk());
    expectSame(t, input(c.size() - 1, DType::I64, {4}), "in place");
  });
}

TEST_P(NcclMockSizeTest, SendRecvPairsMatchInOrder) {
  int n = GetParam();
  runRanks(n, [n](Communicator &c, int r) {
    // Pairs (0, 1), (2, 3): NCCL matches by order, so two messages one way
    // arrive in the order sent whatever their tags; then one back.
    int peer = r ^ 1;
    if (peer >= n) {
      ASSERT_TRUE(c.barrier().isOk());
      return;
    }
    Shape s{17};
    Tensor a(DType::F32, s), b(DType::F32, s);
    Tensor first = input(r, s, 1), second = input(r, s, 2),
           reply = input(r, s, 3);
    if (r % 2 == 0) {
      ASSERT_TRUE(c.send(view(first), peer, 5).isOk());
      ASSERT_TRUE(c.send(view(second), peer, 9).isOk());
      Status st = c.recv(view(a), peer, 3);
      ASSERT_TRUE(st.isOk()) << st.message();
      expectSame(a, input(peer, s, 3), "reply");
    } else {
      ASSERT_TRUE(c.recv(view(a), peer, 9).isOk());
      ASSERT_TRUE(c.recv(view(b), peer, 5).isOk());
      expectSame(a, input(peer, s, 1), "first message");
      expectSame(b, input(peer, s, 2), "second message");
      ASSERT_TRUE(c.send(view(reply), peer, 3).isOk());
    }
    ASSERT_TRUE(c.barrier().isOk());
  });
}

TEST_P(NcclMockSizeTest, BarrierWaitsForTheLastRank) {
  int n = GetParam();
  std::atomic<bool> lastArrived{false};
  runRanks(n, [&](Communicator &c, int r) {
    if (r == n - 1) {
      std::this_thread::sleep_for(milliseconds(100));
      lastArrived = true;
    }
    ASSERT_TRUE(c.barrier().isOk());
    EXPECT_TRUE(lastArrived.load())
        << "rank " << r << " left the barrier early";
  });
}

INSTANTIATE_TEST_SUITE_P(Ranks, NcclMockSizeTest, ::testing::Values(2, 3, 4),
                         [](const auto &info) {
                           return std::to_string(info.param) + "Ranks";
                         });

//===----------------------------------------------------------------------===//
// Bootstrap: unique ids, subgroups, devices
//===----------------------------------------------------------------------===//

/// The value of `key` in the store of `server`.
std::string stored(TcpStoreServer &server, const std::string &key) {
  std::unique_ptr<TcpStore> store;
  EXPECT_TRUE(TcpStore::connect("127.0.0.1", server.port(), -1,
                                milliseconds(2000), store)
                  .isOk());
  std::string v;
  Status s = store->get(key, v, milliseconds(2000));
  EXPECT_TRUE(s.isOk()) << s.message();
  return v;
}

TEST_F(NcclMockTest, EachCommunicatorInitsWithItsOwnIdFromTheStore) {
  std::string prefix;
  runRanks(
      4,
      [](Communicator &c, int r) {
        std::vector<int> g = pairOf(r);
        Communicator *sub = nullptr;
        makeSubgroup(c, r, {{2, 0}, {1, 3}, {0, 1, 2, 3}}, g, sub);
        ASSERT_TRUE(sub);
        EXPECT_STREQ(sub->backend(), "nccl");
        checkPairAllGather(c, r, g, 3);
        checkCachedAndBroadcast(c, r, g, sub, 5);
      },
      milliseconds(10000), 0, &prefix);
  // Member 0 of each communicator stored a fresh id; every member inited
  // with it, as rank = its index, on its own device (= its world rank).
  std::vector<mock::InitRecord> inits = mock::inits();
  std::set<std::string> ids;
  for (std::vector<int> members :
       {std::vector<int>{0, 1, 2, 3}, {1, 3}, {2, 0}}) {
    std::string key = "[";
    for (size_t i = 0; i < members.size(); ++i)
      key += (i ? ", " : "") + std::to_string(members[i]);
    std::string id = stored(*server, prefix + "nccl/id" + key + "]");
    ASSERT_EQ(id.size(), 128u);
    ids.insert(id);
    std::vector<int> deviceOfRank(members.size(), -1);
    for (const mock::InitRecord &i : inits)
      if (i.id == id) {
        EXPECT_EQ(i.nranks, static_cast<int>(members.size()));
        ASSERT_GE(i.rank, 0);
        ASSERT_LT(i.rank, i.nranks);
        EXPECT_EQ(deviceOfRank[i.rank], -1) << "rank " << i.rank << " twice";
        deviceOfRank[i.rank] = i.device;
      }
    EXPECT_EQ(deviceOfRank, members) << key;
  }
  EXPECT_EQ(ids.size(), 3u);
  EXPECT_EQ(inits.size(), 8u);
}

TEST_F(NcclMockTest, DeviceIsTheOptionModuloTheDeviceCount) {
  mock::reset(2);
  // Ranks ask for devices 2 and 3 of 2: they get 0 and 1.
  runRanks(
      2,
      [](Communicator &c, int r) {
        EXPECT_EQ(mock::currentDevice(), r);
        checkBroadcastFrom(c, r, 1);
      },
      milliseconds(10000), 2);
  std::vector<mock::InitRecord> inits = mock::inits();
  ASSERT_EQ(inits.size(), 2u);
  for (const mock::InitRecord &i : inits)
    EXPECT_EQ(i.device, i.rank);
  // One device: a world of one on device 5 % 1 = 0.
  mock::reset(1);
  runRanks(
      1,
      [](Communicator &c, int r) {
        EXPECT_EQ(mock::currentDevice(), 0);
        Tensor t = input(r, {3}), out(DType::F32, {3});
        ASSERT_TRUE(c.allReduce(view(t), view(out), ReduceKind::Sum).isOk());
        expectSame(out, t, "all_reduce of one");
      },
      milliseconds(10000), 5);
}

TEST_F(NcclMockTest, TwoRanksOnOneDeviceAreRefused) {
  mock::reset(1);
  CommOptions base;
  base.prefix = "one-device/";
  runConnected(*server, 2, base, [](CommOptions &o, int r) {
    o.device = r; // both 0 modulo 1
    std::unique_ptr<Communicator> c;
    Status s = nccl::createCommunicator(o, c);
    ASSERT_FALSE(s.isOk());
    EXPECT_EQ(s.message(),
              "rank " + std::to_string(r) +
                  ": ncclCommInitRank over ranks [0, 1]: invalid usage (run "
                  "with NCCL_DEBUG=WARN for details)");
  });
}

TEST_F(NcclMockTest, NoDeviceIsReported) {
  mock::reset(0);
  std::unique_ptr<TcpStoreServer> own;
  CommOptions o;
  ASSERT_NO_FATAL_FAILURE(startStore(own, o.store));
  std::unique_ptr<Communicator> c;
  Status s = nccl::createCommunicator(o, c);
  ASSERT_FALSE(s.isOk());
  EXPECT_EQ(s.message(), "nccl: no CUDA device (no CUDA-capable device is "
                         "detected)");
}

TEST_F(NcclMockTest, AnIdOfTheWrongSizeInTheStoreIsRefused) {
  std::unique_ptr<TcpStoreServer> own;
  std::shared_ptr<KVStore> store;
  ASSERT_NO_FATAL_FAILURE(startStore(own, store));
  ASSERT_TRUE(store->set("wrong/nccl/id[0, 1]", "short").isOk());
  CommOptions o;
  o.rank = 1;
  o.size = 2;
  o.device = 1;
  o.store = store;
  o.prefix = "wrong/";
  std::unique_ptr<Communicator> c;
  Status s = nccl::createCommunicator(o, c);
  ASSERT_FALSE(s.isOk());
  EXPECT_EQ(s.message(),
            "store: wrong/nccl/id[0, 1] holds 5 bytes, not an ncclUniqueId");
}

//===----------------------------------------------------------------------===//
// Failures: every wait ends
//===----------------------------------------------------------------------===//

/// Rank 1 of 2 never starts: rank 0's non-blocking init gives up after the
/// timeout (a blocking ncclCommInitRank would wait forever), aborting its
/// communicator.
TEST_F(NcclMockTest, InitGivesUpOnAMemberThatNeverJoins) {
  std::unique_ptr<TcpStoreServer> own;
  CommOptions o;
  ASSERT_NO_FATAL_FAILURE(startStore(own, o.store));
  o.rank = 0;
  o.size = 2;
  o.prefix = "lonely/";
  o.timeout = milliseconds(300);
  std::unique_ptr<Communicator> c;
  const auto start = std::chrono::steady_clock::now();
  Status s = nccl::createCommunicator(o, c);
  const auto took = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(s.isOk());
  EXPECT_EQ(s.message(), "rank 0: ncclCommInitRank over ranks [0, 1] timed "
                         "out after 0.300000 s (a member never joined)");
  EXPECT_GE(took, milliseconds(300));
  EXPECT_LT(took, milliseconds(3000));
  EXPECT_EQ(mock::aborts(), 1);
  EXPECT_EQ(mock::inits().size(), 0u);
}

class NcclMockFailureTest : public NcclMockTest {
protected:
  /// Rank 0 runs `op` while rank 1 hangs (alive, never calling it) until
  /// it is done: the timeout names the op, the communicator is aborted, and
  /// a later call fails cleanly.
  void missing(const std::function<Status(Communicator &)> &op,
               const std::string &name) {
    std::atomic<bool> done{false};
    runRanks(2, [&](Communicator &c, int r) {
      if (r == 1)
        return hangUntil(done);
      c.setTimeout(milliseconds(300)); // created with the default
      auto t0 = std::chrono::steady_clock::now();
      Status s = op(c);
      auto took = std::chrono::steady_clock::now() - t0;
      done = true;
      ASSERT_FALSE(s.isOk());
      EXPECT_EQ(s.message(), "rank 0: " + name +
                                 " over ranks [0, 1] timed out after "
                                 "0.300000 s");
      EXPECT_GE(took, milliseconds(300));
      EXPECT_LT(took, std::chrono::seconds(3));
      EXPECT_EQ(mock::aborts(), 1);
      // The communicator is gone: a later call fails, naming itself.
      Tensor x = input(0, {4});
      s = c.allReduce(view(x), view(x), ReduceKind::Sum);
      EXPECT_EQ(s.message(), "rank 0: all_reduce over ranks [0, 1]: "
                             "invalid argument (run with NCCL_DEBUG=WARN "
                             "for details)");
    });
  }
};

TEST_F(NcclMockFailureTest, MissingPeerInAllReduceTimesOut) {
  missing(
      [](Communicator &c) {
        Tensor t = input(0, {64});
        return c.allReduce(view(t), view(t), ReduceKind::Sum);
      },
      "all_reduce");
}

TEST_F(NcclMockFailureTest, MissingPeerInAGroupedAllGatherTimesOut) {
  missing(
      [](Communicator &c) {
        Tensor in = input(0, {2, 4}), out(DType::F32, {2, 7});
        return c.allGather(view(in), view(out), 1);
      },
      "all_gather");
}

TEST_F(NcclMockFailureTest, MissingReceiverTimesOut) {
  missing(
      [](Communicator &c) {
        Tensor t = input(0, {8});
        return c.send(view(t), 1, 0);
      },
      "send");
}

TEST_F(NcclMockFailureTest, SendsWaitForTheirReceive) {
  // NCCL's send is "blocking for the GPU" until the peer's recv: both ranks
  // sending first (fine on Gloo) fails here, naming the send. The first
  // to time out aborts; the other then sees its peer gone (or times out).
  std::atomic<int> timedOut{0};
  runRanks(2, [&](Communicator &c, int r) {
    c.setTimeout(milliseconds(300));
    Tensor t = input(r, {8});
    Status s = c.send(view(t), 1 - r, 0);
    ASSERT_FALSE(s.isOk());
    std::string head = "rank " + std::to_string(r) + ": send over ranks [0, 1]";
    if (s.message() == head + " timed out after 0.300000 s")
      ++timedOut;
    else
      EXPECT_EQ(s.message(), head + ": remote process exited or there "
                                    "was a network error");
  });
  EXPECT_GE(timedOut.load(), 1);
  EXPECT_EQ(mock::aborts(), 2);
}

TEST_F(NcclMockFailureTest, DeadPeerIsAnAsyncError) {
  runRanks(
      2,
      [&](Communicator &c, int r) {
        if (r == 1)
          return; // its communicator is destroyed: ncclRemoteError
        std::chrono::steady_clock::duration took;
        Status s = allReduceWithoutPeer(c, took);
        ASSERT_FALSE(s.isOk());
        EXPECT_EQ(s.message(), "rank 0: all_reduce over ranks [0, 1]: remote "
                               "process exited or there was a network error");
        EXPECT_LT(took, std::chrono::seconds(3)); // not the timeout
        EXPECT_EQ(mock::aborts(), 1);
      },
      milliseconds(5000));
}

TEST_F(NcclMockFailureTest, MembersThatDisagreeGetAnAsyncError) {
  // Counts differ: NCCL would hang or corrupt; the mock flags it, and the
  // communicator reports the async error and aborts.
  runRanks(2, [](Communicator &c, int r) {
    Tensor t = input(r, {r ? 32 : 64});
    Status s = c.allReduce(view(t), view(t), ReduceKind::Sum);
    ASSERT_FALSE(s.isOk());
    EXPECT_EQ(s.message(), "rank " + std::to_string(r) +
                               ": all_reduce over ranks [0, 1]: invalid usage "
                               "(run with NCCL_DEBUG=WARN for details)");
  });
  std::vector<std::string> v = mock::takeViolations();
  ASSERT_EQ(v.size(), 1u);
  EXPECT_NE(v[0].find("passes count"), std::string::npos) << v[0];
  EXPECT_EQ(mock::aborts(), 2);
}

} // namespace
