//===- CommTestUtil.h - What the communicator tests share -------*- C++ -*-===//
//
// CommTest.cpp (Gloo, local), ShmCommTest.cpp (shared memory) and
// NcclMockTest.cpp (NCCL over a host mock) compute every collective's
// expected result themselves, independently of the communicators: the
// inputs of each rank, the references of all_gather, reduce_scatter and
// all_to_all, bitwise comparison, and a fixture that runs ranks as threads
// around a store server.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_TEST_UNIT_RUNTIME_COMMTESTUTIL_H
#define TESSEL_TEST_UNIT_RUNTIME_COMMTESTUTIL_H

#include "TestUtil.h"
#include "tessel/runtime/HalfFloat.h"
#include "tessel/runtime/ArtifactBuilder.h"
#include "tessel/runtime/Communicator.h"
#include "tessel/runtime/Executor.h"
#include "tessel/runtime/Store.h"
#include "tessel/runtime/Tensor.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

namespace tessel::runtime::commtest {

/// Row-major multi-index of flat index `i` in shape `s` (TestUtil.h), and
/// back.
using tessel::runtime::test::unravel;
inline int64_t ravel(const std::vector<int64_t> &idx, const Shape &s) {
  int64_t f = 0;
  for (size_t d = 0; d < s.size(); ++d)
    f = f * s[d] + idx[d];
  return f;
}

/// Which member owns index `x` of a dim of `total` split over `n`
/// (Communicator.h's tensor_split convention).
inline int owner(int64_t x, int64_t total, int n) {
  for (int r = 0; r < n; ++r)
    if (x < chunkOffset(total, n, r) + chunkSize(total, n, r))
      return r;
  return n - 1;
}

/// 0, 1, ..., n-1.
inline std::vector<int> allWorld(int n) {
  std::vector<int> v(n);
  for (int i = 0; i < n; ++i)
    v[i] = i;
  return v;
}

inline TensorView view(Tensor &t) {
  return TensorView(t.data(), t.dtype(), t.shape());
}

/// The program `p` builds; null, the failure reported, when it does not.
inline std::shared_ptr<const Program> built(ProgramBuilder &p) {
  std::shared_ptr<const Program> prog;
  Status s = p.build(prog);
  EXPECT_TRUE(s.isOk()) << s.message();
  return s.isOk() ? prog : nullptr;
}

/// A CPU executor of `prog` over `comm`; null, the failure reported, when
/// it cannot be made.
inline std::unique_ptr<Executor>
cpuExecutor(std::shared_ptr<const Program> prog, Communicator *comm,
            CollectiveOverlap overlap = CollectiveOverlap::Auto) {
  ExecutorOptions eo;
  eo.comm = comm;
  eo.overlap = overlap;
  std::unique_ptr<Executor> e;
  Status s = createExecutor("cpu", std::move(prog), eo, e);
  EXPECT_TRUE(s.isOk()) << s.message();
  return s.isOk() ? std::move(e) : nullptr;
}

/// Rank `rank`'s input: small integer-valued entries, so that sums,
/// products (of up to 4) and means are exact in any order.
inline Tensor input(int rank, DType dtype, const Shape &shape, int salt = 0) {
  Tensor t(dtype, shape);
  for (int64_t i = 0; i < t.numElements(); ++i) {
    int64_t v = (i * 7 + rank * 13 + salt * 5) % 23 - 11;
    switch (dtype) {
    case DType::F32:
      t.data<float>()[i] = static_cast<float>(v);
      break;
    case DType::I32:
      t.data<int32_t>()[i] = static_cast<int32_t>(v % 7);
      break;
    case DType::I64:
      t.data<int64_t>()[i] = v % 7;
      break;
    case DType::Bool:
      t.data<uint8_t>()[i] = (i + rank + salt) % 3 == 0;
      break;
    case DType::BF16:
      t.data<uint16_t>()[i] = f32ToBf16(static_cast<float>(v));
      break;
    case DType::F16:
      t.data<uint16_t>()[i] = f32ToF16(static_cast<float>(v));
      break;
    }
  }
  return t;
}
inline Tensor input(int rank, const Shape &shape, int salt = 0) {
  return input(rank, DType::F32, shape, salt);
}

template <typename T> T combine(ReduceKind k, T a, T b) {
  switch (k) {
  case ReduceKind::Max:
    return std::max(a, b);
  case ReduceKind::Min:
    return std::min(a, b);
  case ReduceKind::Prod:
    return static_cast<T>(a * b);
  default:
    return static_cast<T>(a + b);
  }
}

/// want[i] = want[i] (k) x[i], by dtype.
inline void combineInto(ReduceKind k, Tensor &want, const Tensor &x) {
  auto each = [&](auto *w, const auto *v) {
    for (int64_t i = 0; i < want.numElements(); ++i)
      w[i] = combine(k, w[i], v[i]);
  };
  switch (want.dtype()) {
  case DType::F32:
    return each(want.data<float>(), x.data<float>());
  case DType::I32:
    return each(want.data<int32_t>(), x.data<int32_t>());
  case DType::I64:
    return each(want.data<int64_t>(), x.data<int64_t>());
  case DType::Bool:
    return each(want.data<uint8_t>(), x.data<uint8_t>());
  case DType::BF16: // halves are not reduced (checkReduceDType)
  case DType::F16:
    return;
  }
}

/// The reduction over ranks 0..n-1 of input(q, dtype, shape) (a mean
/// divides the f32 sum by n).
inline Tensor reduced(ReduceKind k, int n, DType dtype, const Shape &shape) {
  Tensor want = input(0, dtype, shape);
  for (int q = 1; q < n; ++q)
    combineInto(k, want, input(q, dtype, shape));
  if (k == ReduceKind::Mean)
    for (int64_t i = 0; i < want.numElements(); ++i)
      want.data<float>()[i] /= static_cast<float>(n);
  return want;
}

/// Bitwise equality, naming the first difference.
inline void expectSame(const Tensor &got, const Tensor &want,
                       const std::string &what) {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  ASSERT_EQ(got.dtype(), want.dtype()) << what;
  size_t es = dtypeSize(got.dtype());
  const char *g = static_cast<const char *>(got.data());
  const char *w = static_cast<const char *>(want.data());
  for (int64_t i = 0; i < got.numElements(); ++i)
    ASSERT_EQ(std::memcmp(g + i * es, w + i * es, es), 0)
        << what << ": differs at flat index " << i;
}

inline bool contains(const Status &s, const std::string &text) {
  return s.message().find(text) != std::string::npos;
}

/// all_gather along `dim` of a tensor whose dim has `full[dim]` entries
/// overall, each rank's piece its input.
inline void checkAllGather(Communicator &c, int r, int n, Shape full,
                           int64_t dim, DType dtype = DType::F32) {
  int64_t total = full[dim];
  Shape mine = full;
  mine[dim] = chunkSize(total, n, r);
  Tensor in = input(r, dtype, mine), out(dtype, full);
  Status s = c.allGather(view(in), view(out), dim);
  ASSERT_TRUE(s.isOk()) << s.message();
  Tensor want(dtype, full);
  size_t es = dtypeSize(dtype);
  for (int64_t i = 0; i < want.numElements(); ++i) {
    auto idx = unravel(i, full);
    int q = owner(idx[dim], total, n);
    Shape qs = full;
    qs[dim] = chunkSize(total, n, q);
    idx[dim] -= chunkOffset(total, n, q);
    Tensor x = input(q, dtype, qs);
    std::memcpy(static_cast<char *>(want.data()) + i * es,
                static_cast<const char *>(x.data()) + ravel(idx, qs) * es, es);
  }
  expectSame(out, want,
             "all_gather dim " + std::to_string(dim) + " of " +
                 shapeToString(full));
}

/// reduce_scatter along `dim` of every rank's input of shape `full`.
inline void checkReduceScatter(Communicator &c, int r, int n, Shape full,
                               int64_t dim, ReduceKind k,
                               DType dtype = DType::F32) {
  int64_t total = full[dim];
  Shape mine = full;
  mine[dim] = chunkSize(total, n, r);
  Tensor in = input(r, dtype, full), out(dtype, mine);
  Status s = c.reduceScatter(view(in), view(out), k, dim);
  ASSERT_TRUE(s.isOk()) << s.message();
  Tensor whole = reduced(k, n, dtype, full);
  Tensor want(dtype, mine);
  size_t es = dtypeSize(dtype);
  for (int64_t i = 0; i < want.numElements(); ++i) {
    auto idx = unravel(i, mine);
    idx[dim] += chunkOffset(total, n, r);
    std::memcpy(static_cast<char *>(want.data()) + i * es,
                static_cast<const char *>(whole.data()) + ravel(idx, full) * es,
                es);
  }
  expectSame(out, want,
             std::string("reduce_scatter ") + reduceKindName(k) + " dim " +
                 std::to_string(dim) + " of " + shapeToString(full));
}

/// An in-place i64 sum of values beyond 2^32.
inline void checkLargeI64Sum(Communicator &c, int r, int n) {
  Tensor t(DType::I64, {5});
  for (int i = 0; i < 5; ++i)
    t.data<int64_t>()[i] = (int64_t(1) << 40) + r * 10 + i;
  ASSERT_TRUE(c.allReduce(view(t), view(t), ReduceKind::Sum).isOk());
  for (int i = 0; i < 5; ++i)
    EXPECT_EQ(t.data<int64_t>()[i],
              n * ((int64_t(1) << 40) + i) + 10 * n * (n - 1) / 2);
}

/// A broadcast of [1000, 3] from `root`.
inline void checkBroadcastFrom(Communicator &c, int r, int root) {
  Shape s{1000, 3};
  Tensor in = input(r, s), out(DType::F32, s);
  ASSERT_TRUE(c.broadcast(view(in), view(out), root).isOk());
  expectSame(out, input(root, s), "broadcast root " + std::to_string(root));
}

/// Member i sends to member i + 1 (mod n).
inline std::vector<std::pair<int, int>> ring(int n) {
  std::vector<std::pair<int, int>> pairs;
  for (int i = 0; i < n; ++i)
    pairs.emplace_back(i, (i + 1) % n);
  return pairs;
}

/// all_to_all of every member's input of `inShape`, split along `split`,
/// concatenated along `concat`.
inline void checkAllToAll(Communicator &c, int r, int n, Shape inShape, int64_t split,
                   int64_t concat) {
  int64_t total = inShape[split];
  Shape outShape = inShape;
  if (split != concat) {
    outShape[split] = chunkSize(total, n, r);
    outShape[concat] *= n;
  }
  Tensor in = input(r, inShape), out(DType::F32, outShape);
  Status s = c.allToAll(view(in), view(out), split, concat);
  ASSERT_TRUE(s.isOk()) << s.message();
  // Piece j of sender q (chunk j along split) lands at j... by sender along
  // concat: out index -> sender q and the index in q's input.
  int64_t cw = split == concat ? total / n : inShape[concat];
  Tensor want(DType::F32, outShape);
  for (int64_t i = 0; i < want.numElements(); ++i) {
    auto idx = unravel(i, outShape);
    int q = static_cast<int>(idx[concat] / cw);
    idx[concat] -= q * cw;
    // Now idx indexes the piece (chunk r along split) of sender q.
    idx[split] += split == concat ? r * cw : chunkOffset(total, n, r);
    want.data<float>()[i] = input(q, inShape).data<float>()[ravel(idx, inShape)];
  }
  expectSame(out, want,
             "all_to_all split " + std::to_string(split) + " concat " +
                 std::to_string(concat) + " of " + shapeToString(inShape));
}

/// all_to_all over every pair of split and concat dims, and an uneven
/// split.
inline void checkAllToAlls(Communicator &c, int r, int n) {
  checkAllToAll(c, r, n, {2 * n, 3}, 0, 1);
  checkAllToAll(c, r, n, {3, 2 * n}, 1, 0);
  checkAllToAll(c, r, n, {3, 2 * n, 2}, 1, 1);
  checkAllToAll(c, r, n, {2, 3, n}, 2, 0);
  checkAllToAll(c, r, n, {2, n + 1, 3}, 1, 2); // uneven split
}

/// collective_permute: a ring, the same in place, and one pair (0 -> n-1)
/// where everybody else gets zeros.
inline void checkPermutes(Communicator &c, int r, int n) {
  Shape s{4, 3};
  Tensor in = input(r, s), out(DType::F32, s);
  ASSERT_TRUE(c.collectivePermute(view(in), view(out), ring(n)).isOk());
  expectSame(out, input((r + n - 1) % n, s), "ring shift");
  // In place.
  ASSERT_TRUE(c.collectivePermute(view(in), view(in), ring(n)).isOk());
  expectSame(in, input((r + n - 1) % n, s), "ring shift in place");
  // Only 0 -> n-1: everybody else gets zeros.
  Tensor x = input(r, s), y = input(r, s, 1);
  ASSERT_TRUE(c.collectivePermute(view(x), view(y), {{0, n - 1}}).isOk());
  expectSame(y, r == n - 1 ? input(0, s) : Tensor(DType::F32, s), "partial");
}

/// A hung rank: sleeps until `done`.
inline void hangUntil(const std::atomic<bool> &done) {
  while (!done.load())
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
}

/// An all_reduce(sum) of [64] f32 that a missing peer makes fail; how long
/// it took in `took`.
inline Status allReduceWithoutPeer(Communicator &c,
                                   std::chrono::steady_clock::duration &took) {
  Tensor t = input(0, {64});
  auto t0 = std::chrono::steady_clock::now();
  Status s = c.allReduce(view(t), view(t), ReduceKind::Sum);
  took = std::chrono::steady_clock::now() - t0;
  return s;
}

/// The subgroup tests' pairs in a world of 4: ranks {1, 3} and {2, 0}
/// (reversed order: 2 is index 0). This rank's.
inline std::vector<int> pairOf(int r) {
  return r % 2 ? std::vector<int>{1, 3} : std::vector<int>{2, 0};
}

/// Creates `groups` on `c`, then this rank's subgroup `g`, checking its
/// size, this rank's index and its world ranks.
inline void makeSubgroup(Communicator &c, int r,
                         std::vector<std::vector<int>> groups,
                         const std::vector<int> &g, Communicator *&sub) {
  Status s = c.createSubgroups(std::move(groups));
  ASSERT_TRUE(s.isOk()) << s.message();
  sub = nullptr;
  ASSERT_TRUE(c.subgroup(g, sub).isOk());
  EXPECT_EQ(sub->size(), static_cast<int>(g.size()));
  EXPECT_EQ(sub->rank(), std::find(g.begin(), g.end(), r) - g.begin());
  EXPECT_EQ(sub->worldRanks(), g);
}

/// all_gather along dim 1 of every member's input [2, cols] over the pair
/// `g` of c's ranks.
inline void checkPairAllGather(Communicator &c, int r,
                               const std::vector<int> &g, int64_t cols,
                               int salt = 0) {
  Shape s1{2, cols};
  Tensor in = input(r, s1, salt), out(DType::F32, {2, 2 * cols});
  Status s = c.allGather(view(in), view(out), 1, g);
  ASSERT_TRUE(s.isOk()) << s.message();
  Tensor want(DType::F32, {2, 2 * cols});
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 2 * cols; ++j)
      want.data<float>()[i * 2 * cols + j] =
          input(g[j / cols], s1, salt).data<float>()[i * cols + j % cols];
  expectSame(out, want,
             "all_gather over " + std::to_string(g[0]) + "," +
                 std::to_string(g[1]));
}

/// The subgroup `g` again is the cached `sub`, the whole world `c` itself;
/// a broadcast of `numel` entries from group index 1 within `g`.
inline void checkCachedAndBroadcast(Communicator &c, int r,
                                    const std::vector<int> &g,
                                    Communicator *sub, int64_t numel) {
  Communicator *again = nullptr;
  ASSERT_TRUE(c.subgroup(g, again).isOk());
  EXPECT_EQ(again, sub);
  Communicator *whole = nullptr;
  ASSERT_TRUE(c.subgroup(allWorld(c.size()), whole).isOk());
  EXPECT_EQ(whole, &c);
  Tensor b = input(r, {numel});
  ASSERT_TRUE(c.broadcast(view(b), view(b), 1, g).isOk());
  expectSame(b, input(g[1], {numel}), "broadcast in a subgroup");
}

/// A store server on a free loopback port, and rank 0's connection to it.
inline void startStore(std::unique_ptr<TcpStoreServer> &server,
                       std::shared_ptr<KVStore> &store) {
  ASSERT_TRUE(TcpStoreServer::start(0, true, server).isOk());
  std::unique_ptr<TcpStore> s;
  ASSERT_TRUE(TcpStore::connect("127.0.0.1", server->port(), 0,
                                std::chrono::milliseconds(2000), s)
                  .isOk());
  store = std::move(s);
}

/// Runs fn(options, rank) on `n` threads, each with `base`'s options, its
/// rank, the size `n` and a connection of its own to `server`.
inline void runConnected(TcpStoreServer &server, int n, const CommOptions &base,
                         const std::function<void(CommOptions &, int)> &fn) {
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r)
    threads.emplace_back([&, r] {
      std::unique_ptr<TcpStore> store;
      Status s = TcpStore::connect("127.0.0.1", server.port(), r,
                                   std::chrono::milliseconds(5000), store);
      ASSERT_TRUE(s.isOk()) << s.message();
      CommOptions o = base;
      o.rank = r;
      o.size = n;
      o.store = std::move(store);
      fn(o, r);
    });
  for (auto &t : threads)
    t.join();
}

/// Runs ranks as threads around a store server of its own.
class RankThreadsTest : public ::testing::Test {
protected:
  using Make = std::function<Status(const CommOptions &,
                                    std::unique_ptr<Communicator> &)>;

  void SetUp() override {
    ASSERT_TRUE(TcpStoreServer::start(0, true, server).isOk());
  }

  /// Runs fn(comm, rank) on `n` ranks, one thread each: `make` creates each
  /// rank's communicator from `options` with its rank, size, store,
  /// loopback and a key prefix of this world's own.
  void runWith(int n, const CommOptions &options, const Make &make,
               const std::function<void(Communicator &, int)> &fn) {
    CommOptions base = options;
    base.prefix =
        std::string(
            ::testing::UnitTest::GetInstance()->current_test_info()->name()) +
        "/" + std::to_string(worlds++) + "/";
    base.hostname = "127.0.0.1";
    runConnected(*server, n, base, [&](CommOptions &o, int r) {
      std::unique_ptr<Communicator> c;
      Status s = make(o, c);
      ASSERT_TRUE(s.isOk()) << s.message();
      EXPECT_EQ(c->rank(), r);
      EXPECT_EQ(c->size(), n);
      fn(*c, r);
    });
  }

  std::unique_ptr<TcpStoreServer> server;
  int worlds = 0;
};

} // namespace tessel::runtime::commtest

#endif // TESSEL_TEST_UNIT_RUNTIME_COMMTESTUTIL_H
