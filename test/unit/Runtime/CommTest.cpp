//===- CommTest.cpp - Communicators against naive references --------------===//
//
// Every collective on 2 and 4 ranks, each rank a thread with its own Gloo
// context and its own store connection, against a reference computed from
// every rank's (deterministic) input: non-zero dims, uneven pieces, groups
// that are subsets of the world, in-place calls, the store itself, and the
// failure messages when a rank dies or hangs.
//
//===----------------------------------------------------------------------===//
#include "tessel/runtime/ArtifactBuilder.h"
#include "tessel/runtime/Communicator.h"
#include "tessel/runtime/Executor.h"
#include "tessel/runtime/Store.h"
#include "tessel/runtime/Tensor.h"

#include "CommTestUtil.h"

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <atomic>
#include <functional>
#include <netinet/in.h>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>

using namespace tessel::runtime;
using namespace tessel::runtime::commtest;
using std::chrono::milliseconds;

namespace {

class CommTest : public RankThreadsTest {
protected:
  /// Runs fn(comm, rank) on `n` ranks over Gloo, one thread each.
  void runRanks(int n, const std::function<void(Communicator &, int)> &fn,
                milliseconds timeout = milliseconds(10000)) {
    CommOptions o;
    o.timeout = timeout;
    runWith(n, o, createGlooCommunicator, fn);
  }
};

//===----------------------------------------------------------------------===//
// The store
//===----------------------------------------------------------------------===//

TEST_F(CommTest, StoreSetGetCheckAdd) {
  std::unique_ptr<TcpStore> a, b;
  ASSERT_TRUE(TcpStore::connect("127.0.0.1", server->port(), 0, milliseconds(2000), a).isOk());
  ASSERT_TRUE(TcpStore::connect("localhost", server->port(), 1, milliseconds(2000), b).isOk());
  ASSERT_TRUE(a->set("k", std::string("v\0w", 3)).isOk());
  std::string v;
  ASSERT_TRUE(b->get("k", v, milliseconds(1000)).isOk());
  EXPECT_EQ(v, std::string("v\0w", 3));
  bool found = true;
  ASSERT_TRUE(b->check("missing", v, found).isOk());
  EXPECT_FALSE(found);
  int64_t x = 0;
  ASSERT_TRUE(a->add("n", 5, x).isOk());
  ASSERT_TRUE(b->add("n", -2, x).isOk());
  EXPECT_EQ(x, 3);
  // A get waits for a later set.
  std::thread setter([&] {
    std::this_thread::sleep_for(milliseconds(100));
    EXPECT_TRUE(a->set("late", "yes").isOk());
  });
  ASSERT_TRUE(b->get("late", v, milliseconds(5000)).isOk());
  EXPECT_EQ(v, "yes");
  setter.join();
  a->goodbye();
  b->goodbye();
}

TEST_F(CommTest, StoreGetTimesOut) {
  std::unique_ptr<TcpStore> a;
  ASSERT_TRUE(TcpStore::connect("127.0.0.1", server->port(), -1, milliseconds(2000), a).isOk());
  std::string v;
  Status s = a->get("never", v, milliseconds(100));
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("timed out after 100 ms waiting for key 'never'"),
            std::string::npos)
      << s.message();
}

TEST_F(CommTest, StoreNamesRanksThatLeaveWithoutGoodbye) {
  std::unique_ptr<TcpStore> a, b, c;
  ASSERT_TRUE(TcpStore::connect("127.0.0.1", server->port(), 0, milliseconds(2000), a).isOk());
  ASSERT_TRUE(TcpStore::connect("127.0.0.1", server->port(), 1, milliseconds(2000), b).isOk());
  ASSERT_TRUE(TcpStore::connect("127.0.0.1", server->port(), 2, milliseconds(2000), c).isOk());
  b.reset(); // dies
  c->goodbye();
  std::vector<int> lost;
  for (int i = 0; i < 100; ++i) {
    ASSERT_TRUE(a->lostRanks(lost).isOk());
    if (!lost.empty())
      break;
    std::this_thread::sleep_for(milliseconds(10));
  }
  EXPECT_EQ(lost, std::vector<int>{1});
  server->waitForGoodbyes(2, milliseconds(2000));
}

// The local launcher's handoff: rank 0 serves on a socket that was
// listening before it started (its port never free in between).
TEST_F(CommTest, StoreServesOnAnAdoptedSocket) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr *>(&a), sizeof(a)), 0);
  ASSERT_EQ(::listen(fd, 16), 0);
  ASSERT_EQ(getsockname(fd, reinterpret_cast<sockaddr *>(&a), &len), 0);
  const int port = ntohs(a.sin_port);
  // A client may connect before the server starts: the backlog holds it.
  std::unique_ptr<TcpStore> early, late;
  std::thread client([&] {
    EXPECT_TRUE(
        TcpStore::connect("127.0.0.1", port, 1, milliseconds(5000), early)
            .isOk());
  });
  std::this_thread::sleep_for(milliseconds(50));
  std::unique_ptr<TcpStoreServer> adopted;
  Status s = TcpStoreServer::adopt(fd, adopted);
  ASSERT_TRUE(s.isOk()) << s.message();
  EXPECT_EQ(adopted->port(), port);
  client.join();
  ASSERT_TRUE(early);
  ASSERT_TRUE(
      TcpStore::connect("127.0.0.1", port, 0, milliseconds(2000), late).isOk());
  ASSERT_TRUE(early->set("k", "v").isOk());
  std::string v;
  ASSERT_TRUE(late->get("k", v, milliseconds(1000)).isOk());
  EXPECT_EQ(v, "v");
  early->goodbye();
  late->goodbye();
}

TEST_F(CommTest, StoreRefusesToAdoptWhatIsNotAListeningSocket) {
  std::unique_ptr<TcpStoreServer> adopted;
  Status s = TcpStoreServer::adopt(-1, adopted);
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("descriptor -1 is not a socket"),
            std::string::npos)
      << s.message();
  int pipeFds[2];
  ASSERT_EQ(::pipe(pipeFds), 0);
  s = TcpStoreServer::adopt(pipeFds[0], adopted);
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("descriptor " + std::to_string(pipeFds[0]) +
                             " is not a socket"),
            std::string::npos)
      << s.message();
  ::close(pipeFds[0]);
  ::close(pipeFds[1]);
  // Bound but not listening.
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  s = TcpStoreServer::adopt(fd, adopted);
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("is not a listening TCP socket"),
            std::string::npos)
      << s.message();
  ::close(fd);
}

TEST_F(CommTest, StoreConnectFailsWithoutServer) {
  int port = server->port();
  server.reset();
  std::unique_ptr<TcpStore> a;
  Status s = TcpStore::connect("127.0.0.1", port, 0, milliseconds(200), a);
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("cannot connect to 127.0.0.1:" + std::to_string(port)),
            std::string::npos)
      << s.message();
}

TEST_F(CommTest, StoreReportsLostServer) {
  std::unique_ptr<TcpStore> a;
  ASSERT_TRUE(TcpStore::connect("127.0.0.1", server->port(), 3, milliseconds(2000), a).isOk());
  server.reset();
  Status s = a->set("k", "v");
  std::string v;
  if (s.isOk())
    s = a->get("k", v, milliseconds(100));
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("lost the connection to the store"), std::string::npos)
      << s.message();
  EXPECT_NE(s.message().find("rank 0, which hosts it, is gone"), std::string::npos)
      << s.message();
}

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

class CommSizeTest : public CommTest, public ::testing::WithParamInterface<int> {};

TEST_P(CommSizeTest, AllReduceEveryKind) {
  int n = GetParam();
  runRanks(n, [n](Communicator &c, int r) {
    for (ReduceKind k : {ReduceKind::Sum, ReduceKind::Max, ReduceKind::Min,
                         ReduceKind::Mean, ReduceKind::Prod}) {
      Shape shape{3, 337}; // odd sizes: uneven ring segments
      Tensor in = input(r, shape), out(DType::F32, shape);
      ASSERT_TRUE(c.allReduce(view(in), view(out), k).isOk());
      expectSame(out, reduced(k, n, DType::F32, shape),
                 std::string("all_reduce ") + reduceKindName(k));
    }
  });
}

TEST_P(CommSizeTest, AllReduceInPlaceAndIntegers) {
  int n = GetParam();
  runRanks(n, [n](Communicator &c, int r) {
    checkLargeI64Sum(c, r, n);
    Tensor b(DType::Bool, {2});
    b.data<uint8_t>()[0] = r == 1;
    b.data<uint8_t>()[1] = 1;
    ASSERT_TRUE(c.allReduce(view(b), view(b), ReduceKind::Max).isOk());
    EXPECT_EQ(b.data<uint8_t>()[0], 1);
    ASSERT_TRUE(c.allReduce(view(b), view(b), ReduceKind::Min).isOk());
    EXPECT_EQ(b.data<uint8_t>()[0], 1);
  });
}

TEST_P(CommSizeTest, AllGatherEveryDim) {
  int n = GetParam();
  runRanks(n, [n](Communicator &c, int r) {
    for (int64_t d = 0; d < 3; ++d) {
      Shape full{3, 5, 7};
      full[d] = 2 * n; // even
      checkAllGather(c, r, n, full, d);
    }
  });
}

TEST_P(CommSizeTest, AllGatherUnevenPieces) {
  int n = GetParam();
  runRanks(n, [n](Communicator &c, int r) {
    checkAllGather(c, r, n, {2 * n + 1, 3}, 0);
    checkAllGather(c, r, n, {2, n + 1, 3}, 1);
    checkAllGather(c, r, n, {2, 3, n - 1}, 2); // member n-1 holds nothing
  });
}

TEST_P(CommSizeTest, ReduceScatterEveryDim) {
  int n = GetParam();
  runRanks(n, [n](Communicator &c, int r) {
    checkReduceScatter(c, r, n, {2 * n, 3, 5}, 0, ReduceKind::Sum);
    checkReduceScatter(c, r, n, {3, 2 * n, 5}, 1, ReduceKind::Max);
    checkReduceScatter(c, r, n, {3, 5, n}, 2, ReduceKind::Mean);
  });
}

TEST_P(CommSizeTest, ReduceScatterUnevenPieces) {
  int n = GetParam();
  runRanks(n, [n](Communicator &c, int r) {
    checkReduceScatter(c, r, n, {2 * n + 1, 3}, 0, ReduceKind::Sum);
    checkReduceScatter(c, r, n, {4, n + 1}, 1, ReduceKind::Sum);
  });
}

TEST_P(CommSizeTest, AllToAllEveryDimPair) {
  int n = GetParam();
  runRanks(n, [n](Communicator &c, int r) { checkAllToAlls(c, r, n); });
}

TEST_P(CommSizeTest, CollectivePermuteRingAndPartial) {
  int n = GetParam();
  runRanks(n, [n](Communicator &c, int r) { checkPermutes(c, r, n); });
}

TEST_P(CommSizeTest, BroadcastFromEveryRoot) {
  int n = GetParam();
  runRanks(n, [n](Communicator &c, int r) {
    for (int root = 0; root < n; ++root) {
      checkBroadcastFrom(c, r, root);
    }
  });
}

TEST_P(CommSizeTest, SendRecvBothWaysSendFirst) {
  int n = GetParam();
  runRanks(n, [n](Communicator &c, int r) {
    // Everyone sends to the right, then receives from the left: sends must
    // not wait for the matching receive.
    Shape s{17};
    Tensor in = input(r, s), out(DType::F32, s);
    Status st = c.send(view(in), (r + 1) % n, 7);
    ASSERT_TRUE(st.isOk()) << st.message();
    st = c.recv(view(out), (r + n - 1) % n, 7);
    ASSERT_TRUE(st.isOk()) << st.message();
    expectSame(out, input((r + n - 1) % n, s), "send/recv");
    ASSERT_TRUE(c.barrier().isOk());
  });
}

TEST_F(CommTest, SubsetGroupsRunSideBySide) {
  runRanks(4, [](Communicator &c, int r) {
    std::vector<int> g = pairOf(r);
    Communicator *sub = nullptr;
    makeSubgroup(c, r, {{2, 0}, {1, 3}, {0, 1, 2, 3}}, g, sub);
    ASSERT_TRUE(sub);
    checkPairAllGather(c, r, g, 3);
    checkCachedAndBroadcast(c, r, g, sub, 5);
  });
}

TEST_F(CommTest, GroupErrorsAreReported) {
  runRanks(2, [](Communicator &c, int r) {
    Communicator *sub = nullptr;
    Status s = c.subgroup({1 - r}, sub);
    ASSERT_FALSE(s.isOk());
    EXPECT_NE(s.message().find("does not include this rank"), std::string::npos)
        << s.message();
    s = c.subgroup({0, 2}, sub);
    ASSERT_FALSE(s.isOk());
    EXPECT_NE(s.message().find("rank 2 is out of range for 2 ranks"), std::string::npos)
        << s.message();
    s = c.subgroup({r, r}, sub);
    ASSERT_FALSE(s.isOk());
    EXPECT_NE(s.message().find("twice"), std::string::npos) << s.message();
  });
}

TEST_F(CommTest, ShapeMismatchesAreRefusedBeforeAnyTransfer) {
  runRanks(2, [](Communicator &c, int r) {
    Tensor in = input(r, {4, 3}), bad(DType::F32, {5, 6});
    Status s = c.allGather(view(in), view(bad), 1);
    ASSERT_FALSE(s.isOk());
    EXPECT_NE(s.message().find("result has shape [5, 6], expected [4, 6]"),
              std::string::npos)
        << s.message();
    Tensor wide(DType::F32, {4, 9});
    s = c.allGather(view(in), view(wide), 1);
    ASSERT_FALSE(s.isOk());
    EXPECT_NE(s.message().find("operand [4, 3] has 3 along dim 1, but member " +
                               std::to_string(r) + " of 2 owns " +
                               std::to_string(5 - r) + " of the result's 9"),
              std::string::npos)
        << s.message();
    Tensor i64(DType::I64, {4, 3});
    s = c.allReduce(view(i64), view(i64), ReduceKind::Mean);
    ASSERT_FALSE(s.isOk());
    EXPECT_NE(s.message().find("a mean needs f32 or f64, got i64"),
              std::string::npos);
    Tensor out(DType::F32, {4, 3});
    s = c.collectivePermute(view(in), view(out), {{0, 1}, {1, 1}});
    ASSERT_FALSE(s.isOk());
    EXPECT_NE(s.message().find("index 1 is a destination twice"), std::string::npos);
    s = c.allToAll(view(in), view(out), 1, 1);
    ASSERT_FALSE(s.isOk());
    EXPECT_NE(s.message().find("not a multiple of 2"), std::string::npos);
  });
}

TEST_F(CommTest, DeadRankIsNamed) {
  runRanks(2, [&](Communicator &c, int r) {
    if (r == 1)
      return; // leaves: its sockets and store connection close
    std::chrono::steady_clock::duration took;
    Status s = allReduceWithoutPeer(c, took);
    ASSERT_FALSE(s.isOk());
    EXPECT_LT(took, std::chrono::seconds(4));
    EXPECT_NE(s.message().find("rank 0: all_reduce over ranks [0, 1] failed"),
              std::string::npos)
        << s.message();
    EXPECT_NE(s.message().find("rank 1 died"), std::string::npos) << s.message();
  }, milliseconds(3000));
}

TEST_F(CommTest, HungRankIsNamedAfterTheTimeout) {
  std::atomic<bool> done{false};
  runRanks(
      2,
      [&](Communicator &c, int r) {
        if (r == 1)
          return hangUntil(done);
        std::chrono::steady_clock::duration took;
        Status s = allReduceWithoutPeer(c, took);
        done = true;
        ASSERT_FALSE(s.isOk());
        EXPECT_LT(took, std::chrono::seconds(5));
        EXPECT_NE(s.message().find("rank 1 did not fail here and is alive"),
                  std::string::npos)
            << s.message();
      },
      milliseconds(500));
}

INSTANTIATE_TEST_SUITE_P(Ranks, CommSizeTest, ::testing::Values(2, 4),
                         [](const auto &info) {
                           return std::to_string(info.param) + "Ranks";
                         });

//===----------------------------------------------------------------------===//
// The local communicator, and backends this build may lack
//===----------------------------------------------------------------------===//

TEST(LocalCommTest, EveryCollectiveIsACopy) {
  auto c = createLocalCommunicator();
  EXPECT_EQ(c->size(), 1);
  Tensor in = input(0, {3, 4}), out(DType::F32, {3, 4});
  ASSERT_TRUE(c->allReduce(view(in), view(out), ReduceKind::Mean).isOk());
  expectSame(out, in, "all_reduce");
  ASSERT_TRUE(c->allGather(view(in), view(out), 1).isOk());
  ASSERT_TRUE(c->reduceScatter(view(in), view(out), ReduceKind::Sum, 0).isOk());
  ASSERT_TRUE(c->allToAll(view(in), view(out), 0, 1).isOk());
  ASSERT_TRUE(c->broadcast(view(in), view(out), 0).isOk());
  expectSame(out, in, "broadcast");
  ASSERT_TRUE(c->collectivePermute(view(in), view(out), {}).isOk());
  expectSame(out, Tensor(DType::F32, {3, 4}), "permute without pairs");
  EXPECT_FALSE(c->send(view(in), 1, 0).isOk());
  Communicator *sub = nullptr;
  EXPECT_TRUE(c->subgroup({0}, sub).isOk());
  EXPECT_FALSE(c->subgroup({0, 1}, sub).isOk());
}

//===----------------------------------------------------------------------===//
// Collective instructions: every message of CollectiveAttrs.cpp and of the
// executor's group checks
//===----------------------------------------------------------------------===//

/// Builds rank `rank`'s one-instruction program; returns the error.
std::string buildError(int rank, const std::string &op, Shape in, Shape out,
                       Attrs attrs, bool withOperand = true,
                       bool withResult = true) {
  ArtifactBuilder b;
  ProgramBuilder &p = b.rank(rank);
  std::vector<int> operands, results;
  if (withOperand)
    operands.push_back(p.addInput("a", DType::F32, in));
  if (withResult)
    results.push_back(p.addBuffer(DType::F32, out));
  p.addOp(op, operands, results, attrs);
  if (withResult)
    p.addOutput("r", results[0]);
  std::shared_ptr<const Program> prog;
  Status s = p.build(prog);
  return s.isOk() ? "" : s.message();
}

TEST(CollectiveValidation, RefusesBadAttributes) {
  struct Case {
    int rank;
    const char *op;
    Shape in, out;
    Attrs attrs;
    const char *error;
  };
  std::vector<int64_t> g01{0, 1};
  const Case cases[] = {
      {0, "all_reduce", {4}, {4}, Attrs().is("group", g01), "missing attribute 'kind'"},
      {0, "all_reduce", {4}, {4}, Attrs().s("kind", "avg").is("group", g01),
       "attribute 'kind' = 'avg' is not one of sum, max, min, mean, prod"},
      {0, "all_reduce", {4}, {4}, Attrs().i("kind", 1), "attribute 'kind' must be a string"},
      {2, "all_reduce", {4}, {4}, Attrs().s("kind", "sum").is("group", g01),
       "attribute 'group' does not include this program's rank 2"},
      {0, "all_reduce", {4}, {4}, Attrs().s("kind", "sum").is("group", {0, 1, 0}),
       "attribute 'group' lists rank 0 twice"},
      {0, "all_reduce", {4}, {4}, Attrs().s("kind", "sum").is("group", {}),
       "attribute 'group' is empty"},
      {0, "all_reduce", {4}, {4}, Attrs().s("kind", "sum").is("group", {0, -1}),
       "attribute 'group' holds rank -1, out of range"},
      {0, "all_reduce", {4}, {4}, Attrs().s("kind", "sum").s("group", "tp"),
       "attribute 'group' must be an int list"},
      {0, "all_reduce", {4}, {5}, Attrs().s("kind", "sum").is("group", g01),
       "result has shape [5], expected [4]"},
      {0, "all_gather", {4}, {6}, Attrs().i("dim", 0).is("group", g01),
       "operand [4] has 4 along dim 0, but member 0 of 2 owns 3 of the result's 6"},
      {1, "all_gather", {2, 4}, {2, 8}, Attrs().i("dim", 2).is("group", g01),
       "attribute 'dim' = 2 is out of range for rank 2"},
      {0, "all_gather", {4}, {8}, Attrs().is("group", g01), "missing attribute 'dim'"},
      {0, "reduce_scatter", {4, 2}, {4, 2},
       Attrs().s("kind", "sum").i("dim", 0).is("group", g01),
       "result has shape [4, 2], expected [2, 2]"},
      {0, "all_to_all", {3, 4}, {3, 4},
       Attrs().i("split_dim", 0).i("concat_dim", 0).is("group", g01),
       "split_dim = concat_dim = 0 has 3 entries, not a multiple of 2"},
      {0, "all_to_all", {4, 4}, {2, 8},
       Attrs().i("split_dim", 0).i("concat_dim", -1).is("group", {1, 0}),
       ""},
      {0, "collective_permute", {4}, {4}, Attrs().is("pairs", {0}).is("group", g01),
       "attribute 'pairs' must hold [src, dst] pairs, got 1 integers"},
      {0, "collective_permute", {4}, {4}, Attrs().is("pairs", {0, 2}).is("group", g01),
       "attribute 'pairs' holds (0, 2), out of range for a group of 2"},
      {0, "collective_permute", {4}, {4},
       Attrs().is("pairs", {0, 1, 0, 0}).is("group", g01), "index 0 is a source twice"},
      {0, "broadcast", {4}, {4}, Attrs().i("root", 2).is("group", g01),
       "attribute 'root' = 2 is out of range for a group of 2"},
  };
  for (const Case &c : cases) {
    std::string e = buildError(c.rank, c.op, c.in, c.out, c.attrs);
    if (!*c.error) {
      EXPECT_EQ(e, "") << c.op;
      continue;
    }
    EXPECT_NE(e.find(c.error), std::string::npos)
        << c.op << ": expected '" << c.error << "', got '" << e << "'";
  }
}

TEST(CollectiveValidation, PointToPoint) {
  EXPECT_NE(buildError(0, "send", {4}, {4}, Attrs().i("peer", 0).i("tag", 1), true, false)
                .find("attribute 'peer' = 0 is not another rank (this program is rank 0)"),
            std::string::npos);
  EXPECT_NE(buildError(0, "send", {4}, {4}, Attrs().i("peer", 1).i("tag", -1), true, false)
                .find("attribute 'tag' = -1 is out of range [0, 2^48)"),
            std::string::npos);
  EXPECT_NE(buildError(0, "send", {4}, {4}, Attrs().i("peer", 1), true, false)
                .find("missing attribute 'tag'"),
            std::string::npos);
  EXPECT_NE(buildError(0, "send", {4}, {4}, Attrs().i("peer", 1).i("tag", 0))
                .find("expects 1 operand(s) and 0 result(s), got 1 and 1"),
            std::string::npos);
  EXPECT_NE(buildError(0, "recv", {4}, {4}, Attrs().i("peer", 1).i("tag", 0))
                .find("expects 0 operand(s) and 1 result(s), got 1 and 1"),
            std::string::npos);
  EXPECT_EQ(buildError(0, "recv", {4}, {4}, Attrs().i("peer", 1).i("tag", 0), false), "");
}

/// Creates a cpu executor of a one-instruction program on a world of one.
std::string executorError(const std::string &op, Attrs attrs, bool send = false) {
  ProgramBuilder p;
  int a = p.addInput("a", DType::F32, {4});
  if (send) {
    p.addOp(op, {a}, {}, attrs);
  } else {
    int r = p.addBuffer(DType::F32, {4});
    p.addOp(op, {a}, {r}, attrs);
    p.addOutput("r", r);
  }
  std::shared_ptr<const Program> prog;
  Status s = p.build(prog);
  if (!s.isOk())
    return "build: " + s.message();
  std::unique_ptr<Executor> e;
  s = createExecutor("cpu", prog, ExecutorOptions(), e);
  return s.isOk() ? "" : s.message();
}

TEST(CollectiveValidation, TheExecutorMatchesGroupsToTheWorld) {
  // A world of one runs the single-device form and groups of its one rank.
  EXPECT_EQ(executorError("all_reduce", Attrs().s("kind", "sum")), "");
  EXPECT_EQ(executorError("all_reduce", Attrs().s("kind", "sum").is("group", {0})), "");
  std::string e = executorError("all_reduce", Attrs().s("kind", "sum").is("group", {0, 1}));
  EXPECT_NE(e.find("instruction 0 (all_reduce): group holds rank 1, but the world "
                   "has 1 ranks"),
            std::string::npos)
      << e;
  e = executorError("send", Attrs().i("peer", 3).i("tag", 0), true);
  EXPECT_NE(e.find("instruction 0 (send): peer rank 3 does not exist in a world of 1 "
                   "ranks"),
            std::string::npos)
      << e;
}

TEST(CollectiveValidation, AWorldOfSeveralRanksNeedsGroups) {
  std::unique_ptr<TcpStoreServer> server;
  ASSERT_TRUE(TcpStoreServer::start(0, true, server).isOk());
  CommOptions base;
  base.hostname = "127.0.0.1";
  runConnected(*server, 2, base, [&](CommOptions &o, int r) {
    std::unique_ptr<Communicator> c;
    ASSERT_TRUE(createGlooCommunicator(o, c).isOk());
    ArtifactBuilder b;
    ProgramBuilder &p = b.rank(r);
    int a = p.addInput("a", DType::F32, {4});
    int y = p.addBuffer(DType::F32, {4});
    p.addOp("all_reduce", {a}, {y}, Attrs().s("kind", "sum"));
    std::shared_ptr<const Program> prog;
    ASSERT_TRUE(p.build(prog).isOk());
    ExecutorOptions eo;
    eo.comm = c.get();
    std::unique_ptr<Executor> e;
    Status s = createExecutor("cpu", prog, eo, e);
    ASSERT_FALSE(s.isOk());
    EXPECT_NE(s.message().find("instruction 0 (all_reduce): has no 'group' "
                               "attribute, which a world of 2 ranks needs"),
              std::string::npos)
        << s.message();
  });
}

TEST(NcclCommTest, NeedsADevice) {
  if (!haveNcclCommunicator())
    GTEST_SKIP() << "this build has no NCCL backend";
  std::unique_ptr<TcpStoreServer> server;
  CommOptions o;
  ASSERT_NO_FATAL_FAILURE(startStore(server, o.store));
  std::unique_ptr<Communicator> c;
  Status s = createNcclCommunicator(o, c);
  if (!s.isOk() && s.message().find("no CUDA device") != std::string::npos)
    GTEST_SKIP() << "no GPU here: " << s.message();
  ASSERT_TRUE(s.isOk()) << s.message();
  EXPECT_EQ(c->size(), 1);
}

} // namespace
