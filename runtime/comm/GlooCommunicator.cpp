//===- GlooCommunicator.cpp - Collectives on CPU over Gloo's TCP transport ===//
//
// One gloo::Context per communicator (the world and each subgroup), all on
// one TCP device per rank, rendezvous through our KVStore. Gloo's own
// algorithms do all_reduce (ring), all_gather(v), all_to_all(v), broadcast
// and barrier on flat buffers; reduce_scatter is a ring over unbound
// buffers (reduce-scatter half of a ring all-reduce), collective_permute
// and send/recv are unbound-buffer sends. Tensors split along a dim are
// (un)packed around the flat transfers (Layout.h).
//
// Gloo reports failures by exceptions; they stop here and become a Status
// whose message says which rank is to blame when the store can tell: the
// store server notes connections that closed without a goodbye (a rank
// died), and each failing rank leaves a mark (a rank that never fails while
// the others time out is hung).
//
//===----------------------------------------------------------------------===//
#include "CommunicatorBase.h"
#include "DTypeDispatch.h"
#include "Layout.h"
#include "tessel/runtime/Store.h"

#ifdef TESSEL_RUNTIME_HAVE_GLOO
#include <gloo/allgather.h>
#include <gloo/allgatherv.h>
#include <gloo/allreduce.h>
#include <gloo/alltoall.h>
#include <gloo/alltoallv.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/store.h>
#include <gloo/transport/tcp/device.h>
#include <gloo/transport/unbound_buffer.h>
#endif

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstring>
#include <stdexcept>
#include <thread>

namespace tessel::runtime {

#ifndef TESSEL_RUNTIME_HAVE_GLOO

bool haveGlooCommunicator() { return false; }
Status createGlooCommunicator(const CommOptions &,
                              std::unique_ptr<Communicator> &) {
  return Status::error("this build has no Gloo (install libgloo-dev and "
                       "reconfigure): multi-rank CPU runs are unavailable");
}

#else

bool haveGlooCommunicator() { return true; }

namespace {

using namespace comm;

/// gloo's view of our store: errors become exceptions, caught by our caller.
class GlooStore : public gloo::rendezvous::Store {
public:
  GlooStore(KVStore &store, std::string prefix, milliseconds timeout)
      : store(store), prefix(std::move(prefix)), timeout(timeout) {}
  void set(const std::string &key, const std::vector<char> &data) override {
    Status s = store.set(prefix + key, std::string(data.begin(), data.end()));
    if (!s)
      throw std::runtime_error(s.message());
  }
  std::vector<char> get(const std::string &key) override {
    std::string v;
    Status s = store.get(prefix + key, v, timeout);
    if (!s)
      throw std::runtime_error(s.message());
    return std::vector<char>(v.begin(), v.end());
  }
  void wait(const std::vector<std::string> &keys) override {
    wait(keys, timeout);
  }
  void wait(const std::vector<std::string> &keys,
            const milliseconds &t) override {
    for (const std::string &k : keys) {
      std::string v;
      Status s = store.get(prefix + k, v, t);
      if (!s)
        throw std::runtime_error(s.message());
    }
  }

private:
  KVStore &store;
  std::string prefix;
  milliseconds timeout;
};

struct GlooWorld : World {
  using World::World;
  std::shared_ptr<gloo::transport::Device> device;
  /// Some operation of this world failed: its staged sends may never be
  /// received (a peer died, or gave up), so nobody waits for them.
  std::atomic<bool> broken{false};
};

// Slots of our own unbound-buffer transfers; gloo's algorithms use top
// bytes 0x01-0x08.
constexpr uint64_t kRingSlot = uint64_t(0x40) << 56;
constexpr uint64_t kPermuteSlot = uint64_t(0x41) << 56;
constexpr uint64_t kP2PSlot = uint64_t(0x42) << 56;

class GlooCommunicator : public HostCommunicator<GlooCommunicator> {
public:
  using HostCommunicator::HostCommunicator;
  ~GlooCommunicator() override {
    while (!pending.empty() && !static_cast<GlooWorld *>(world)->broken)
      if (!waitOldestSend())
        pending.clear();
  }

  Status connect() {
    auto ctx = std::make_shared<gloo::rendezvous::Context>(
        me, static_cast<int>(members.size()));
    ctx->setTimeout(world->timeout);
    GlooStore store(*world->store,
                    world->prefix + "group" + listToString(members) + "/",
                    world->timeout);
    TSL_RETURN_IF_ERROR(guarded("connecting", [&] {
      ctx->connectFullMesh(store, static_cast<GlooWorld *>(world)->device);
      // A member returns from connectFullMesh once its own pairs connect;
      // the barrier makes sure every member's have, so that a member that
      // leaves right away does not break a peer's handshake.
      if (members.size() > 1) {
        gloo::BarrierOptions o(ctx);
        gloo::barrier(o);
      }
    }));
    context = std::move(ctx);
    return Status::ok();
  }

  const char *backend() const override { return "gloo"; }

  Status runAllReduce(const TensorView &in, const TensorView &out,
                      ReduceKind kind) {
    return guarded("all_reduce", [&] {
      visitDType(in.dtype, [&](auto tag) {
        allReduceTyped<typename decltype(tag)::type>(in, out, kind);
      });
    });
  }

  Status runAllGather(const TensorView &in, const TensorView &out,
                      int64_t dim) {
    int n = size();
    DimSplit os = splitAt(out.shape, dim, dtypeSize(in.dtype));
    Pieces p = pieces(os, n);
    char *dst = static_cast<char *>(out.data);
    if (os.outer > 1)
      dst = scratch(0, out.bytes());
    return unpacked("all_gather", dst, os, out, [&] {
      if (os.size % n == 0) {
        gloo::AllgatherOptions o(context);
        o.setInput(static_cast<char *>(in.data), p.bytes(me));
        o.setOutput(dst, out.bytes());
        o.setTag(nextTag());
        gloo::allgather(o);
      } else {
        std::vector<size_t> bytes(n);
        for (int r = 0; r < n; ++r)
          bytes[r] = p.bytes(r);
        gloo::AllgathervOptions o(context);
        o.setInput(static_cast<char *>(in.data), p.bytes(me));
        o.setOutput(dst, std::move(bytes));
        o.setTag(nextTag());
        gloo::allgatherv(o);
      }
    });
  }

  Status runReduceScatter(const TensorView &in, const TensorView &out,
                          ReduceKind kind, int64_t dim) {
    int n = size();
    size_t es = dtypeSize(in.dtype);
    DimSplit is = splitAt(in.shape, dim, es);
    Pieces p = pieces(is, n);
    const std::vector<size_t> &off = p.off;
    // acc holds every member's piece contiguously, in member order.
    char *acc = scratch(0, in.bytes());
    if (is.outer == 1)
      std::memcpy(acc, in.data, in.bytes());
    else
      packPieces(in.data, is, n, acc);
    size_t maxPiece = p.most();
    char *tmp = scratch(1, maxPiece);
    uint64_t base = kRingSlot | (nextTag() << 16);
    TSL_RETURN_IF_ERROR(guarded("reduce_scatter", [&] {
      auto accBuf = context->createUnboundBuffer(acc, in.bytes());
      auto tmpBuf = context->createUnboundBuffer(tmp, std::max<size_t>(maxPiece, 1));
      int right = (me + 1) % n, left = (me + n - 1) % n;
      for (int s = 0; s + 1 < n; ++s) {
        int cs = ((me - s - 1) % n + n) % n;
        int cr = ((me - s - 2) % n + n) % n;
        size_t sendBytes = off[cs + 1] - off[cs];
        size_t recvBytes = off[cr + 1] - off[cr];
        if (recvBytes)
          tmpBuf->recv(left, base + s, 0, recvBytes);
        if (sendBytes)
          accBuf->send(right, base + s, off[cs], sendBytes);
        if (recvBytes)
          awaitRecv(*tmpBuf);
        if (sendBytes)
          awaitSend(*accBuf);
        if (recvBytes)
          reduceInto(kind, in.dtype, acc + off[cr], tmp,
                     static_cast<int64_t>(recvBytes / es));
      }
    }));
    std::memcpy(out.data, acc + off[me], p.bytes(me));
    return Status::ok();
  }

  Status allToAll(const TensorView &in, const TensorView &out, int64_t splitDim,
                  int64_t concatDim) override {
    TSL_RETURN_IF_ERROR(
        checkAllToAllShapes(in, out, splitDim, concatDim, size(), me));
    if (trivial(in))
      return copyHost(in, out);
    int n = size();
    size_t es = dtypeSize(in.dtype);
    DimSplit is = splitAt(in.shape, splitDim, es);
    // Pieces to send: piece j is chunk j along splitDim; every piece
    // received is as large as this member's.
    Pieces p = pieces(is, n);
    std::vector<int64_t> sendBytes(n), recvBytes(n, p.bytes(me));
    for (int j = 0; j < n; ++j)
      sendBytes[j] = static_cast<int64_t>(p.bytes(j));
    const char *src = static_cast<const char *>(in.data);
    if (is.outer > 1) {
      char *packed = scratch(0, in.bytes());
      packPieces(in.data, is, n, packed);
      src = packed;
    }
    // Received piece j goes at j*C along concatDim (C = its size / n).
    DimSplit os = splitAt(out.shape, concatDim, es);
    char *dst = os.outer == 1 ? static_cast<char *>(out.data)
                              : scratch(1, out.bytes());
    return unpacked("all_to_all", dst, os, out, [&] {
      if (is.size % n == 0) {
        gloo::AlltoallOptions o(context);
        o.setInput(const_cast<char *>(src), in.bytes());
        o.setOutput(dst, out.bytes());
        o.setTag(nextTag());
        gloo::alltoall(o);
      } else {
        gloo::AlltoallvOptions o(context);
        o.setInput(const_cast<char *>(src), sendBytes);
        o.setOutput(dst, recvBytes);
        o.setTag(nextTag());
        gloo::alltoallv(o);
      }
    });
  }

  Status collectivePermute(const TensorView &in, const TensorView &out,
                           const std::vector<std::pair<int, int>> &pairs) override {
    int from, to;
    TSL_RETURN_IF_ERROR(checkPermute(in, out, pairs, size(), me, from, to));
    uint64_t slot = kPermuteSlot | (nextTag() << 16);
    size_t bytes = out.bytes();
    if (from == me || bytes == 0) {
      if (from == me)
        return copyHost(in, out);
      return Status::ok();
    }
    // Receive into scratch when the result overwrites what we still send.
    bool staged = from >= 0 && to >= 0 && in.data == out.data;
    char *dst = staged ? scratch(0, bytes) : static_cast<char *>(out.data);
    TSL_RETURN_IF_ERROR(guarded("collective_permute", [&] {
      std::unique_ptr<gloo::transport::UnboundBuffer> rb, sb;
      if (from >= 0) {
        rb = context->createUnboundBuffer(dst, bytes);
        rb->recv(from, slot);
      }
      if (to >= 0) {
        sb = context->createUnboundBuffer(in.data, bytes);
        sb->send(to, slot);
      }
      if (rb)
        awaitRecv(*rb);
      if (sb)
        awaitSend(*sb);
    }));
    if (from < 0)
      std::memset(out.data, 0, bytes);
    else if (staged)
      std::memcpy(out.data, dst, bytes);
    return Status::ok();
  }

  Status runBroadcast(const TensorView &in, const TensorView &out, int root) {
    if (me == root)
      TSL_RETURN_IF_ERROR(copyHost(in, out));
    return guarded("broadcast", [&] {
      gloo::BroadcastOptions o(context);
      o.setOutput(static_cast<char *>(out.data), out.bytes());
      o.setRoot(root);
      o.setTag(nextTag());
      gloo::broadcast(o);
    });
  }

  /// Gloo's sends complete only once the receiver posts its recv; a send
  /// here is eager instead (like MPI's buffered send): the bytes are staged
  /// and the send completes in the background, so that programs where both
  /// sides send first do not deadlock. Staged sends are awaited by
  /// barrier(), by the destructor, and beyond kMaxPendingSends.
  Status send(const TensorView &in, int peer, int64_t tag) override {
    TSL_RETURN_IF_ERROR(checkPeer(peer, tag, size(), me, "send to"));
    if (in.bytes() == 0)
      return Status::ok();
    std::string what = "send to rank " + std::to_string(members[peer]);
    while (pending.size() >= kMaxPendingSends)
      TSL_RETURN_IF_ERROR(waitOldestSend());
    return guarded(what, [&] {
      PendingSend p;
      p.bytes.reset(new char[in.bytes()]);
      std::memcpy(p.bytes.get(), in.data, in.bytes());
      p.buffer = context->createUnboundBuffer(p.bytes.get(), in.bytes());
      p.buffer->send(peer, kP2PSlot | static_cast<uint64_t>(tag));
      p.what = what;
      pending.push_back(std::move(p));
    });
  }

  Status recv(const TensorView &out, int peer, int64_t tag) override {
    TSL_RETURN_IF_ERROR(checkPeer(peer, tag, size(), me, "recv from"));
    if (out.bytes() == 0)
      return Status::ok();
    return guarded("recv from rank " + std::to_string(members[peer]), [&] {
      auto b = context->createUnboundBuffer(out.data, out.bytes());
      b->recv(peer, kP2PSlot | static_cast<uint64_t>(tag));
      awaitRecv(*b);
    });
  }

  /// The receive is posted now; Gloo's transport thread fills `out` while
  /// the caller computes.
  Status irecv(const TensorView &out, int peer, int64_t tag,
               std::unique_ptr<P2PRequest> &req) override {
    TSL_RETURN_IF_ERROR(checkPeer(peer, tag, size(), me, "recv from"));
    if (out.bytes() == 0)
      return Communicator::irecv(out, peer, tag, req);
    std::string what = "recv from rank " + std::to_string(members[peer]);
    auto r = std::make_unique<PostedRecv>();
    r->comm = this;
    r->what = what;
    TSL_RETURN_IF_ERROR(guarded(what, [&] {
      r->buffer = context->createUnboundBuffer(out.data, out.bytes());
      r->buffer->recv(peer, kP2PSlot | static_cast<uint64_t>(tag));
    }));
    req = std::move(r);
    return Status::ok();
  }

  Status barrier() override {
    while (!pending.empty())
      TSL_RETURN_IF_ERROR(waitOldestSend());
    if (size() == 1)
      return Status::ok();
    return guarded("barrier", [&] {
      gloo::BarrierOptions o(context);
      o.setTag(nextTag());
      gloo::barrier(o);
    });
  }

  void setTimeout(milliseconds timeout) override {
    world->timeout = timeout;
    if (context)
      context->setTimeout(timeout);
    for (auto &[k, g] : world->groups)
      if (auto *gg = static_cast<GlooCommunicator *>(g);
          gg != this && gg->context)
        gg->context->setTimeout(timeout);
  }

private:
  Status newSubgroup(const std::vector<int> &, const std::vector<int> &wr,
                     int index, Communicator *&out) override {
    auto g = std::make_unique<GlooCommunicator>(world, wr, index);
    TSL_RETURN_IF_ERROR(g->connect());
    out = adopt(std::move(g));
    return Status::ok();
  }

  /// Runs fn(), which talks to Gloo: its exceptions become fail(op, ...).
  template <typename F> Status guarded(const std::string &op, F &&fn) {
    try {
      fn();
    } catch (const std::exception &e) {
      return fail(op, e.what());
    }
    return Status::ok();
  }
  /// Runs `transfer` (guarded, as `op`), which fills `dst` with the n
  /// members' pieces of `out` along the dim of `os`, contiguous; then
  /// unpacks them into `out` unless `dst` is `out` itself.
  template <typename F>
  Status unpacked(const char *op, char *dst, const DimSplit &os,
                  const TensorView &out, F &&transfer) {
    TSL_RETURN_IF_ERROR(guarded(op, transfer));
    if (dst != out.data)
      unpackPieces(dst, os, size(), out.data);
    return Status::ok();
  }
  /// Waits for an unbound buffer's transfer; throws when it was aborted.
  void awaitRecv(gloo::transport::UnboundBuffer &b) {
    if (!b.waitRecv(world->timeout))
      throw std::runtime_error("receive aborted");
  }
  void awaitSend(gloo::transport::UnboundBuffer &b) {
    if (!b.waitSend(world->timeout))
      throw std::runtime_error("send aborted");
  }

  struct PostedRecv : P2PRequest {
    GlooCommunicator *comm = nullptr;
    std::string what;
    std::unique_ptr<gloo::transport::UnboundBuffer> buffer;
    Status wait() override {
      return comm->guarded(what, [&] { comm->awaitRecv(*buffer); });
    }
  };

  Status waitOldestSend() {
    PendingSend p = std::move(pending.front());
    pending.erase(pending.begin());
    return guarded(p.what, [&] { awaitSend(*p.buffer); });
  }

  uint64_t nextTag() { return ++seq & 0xffffffffu; }

  char *scratch(int which, size_t bytes) {
    auto &b = buffers[which];
    if (b.size() < bytes)
      b.resize(bytes);
    return b.data();
  }

  template <typename T>
  void allReduceTyped(const TensorView &in, const TensorView &out,
                      ReduceKind kind) {
    using Fn = void (*)(void *, const void *, const void *, size_t);
    // By ReduceKind's value (Sum, Max, Min, Mean, Prod); a mean sums.
    const Fn fns[] = {&gloo::sum<T>, &gloo::max<T>, &gloo::min<T>,
                      &gloo::sum<T>, &gloo::product<T>};
    const Fn fn = fns[static_cast<int>(kind)];
    gloo::AllreduceOptions o(context);
    size_t n = static_cast<size_t>(out.numel());
    if (in.data != out.data)
      o.setInput(static_cast<T *>(in.data), n);
    o.setOutput(static_cast<T *>(out.data), n);
    o.setAlgorithm(gloo::AllreduceOptions::Algorithm::RING);
    o.setReduceFunction(fn);
    o.setTag(nextTag());
    gloo::allreduce(o);
  }

  /// The message of a failed operation, with what the store knows of the
  /// other members.
  Status fail(const std::string &op, const std::string &what) {
    static_cast<GlooWorld *>(world)->broken = true;
    std::string msg = where(op) + " failed: " + what;
    KVStore &store = *world->store;
    std::string mark = world->prefix + "failed/";
    if (Status s = store.set(mark + std::to_string(worldRank()), op); !s)
      return Status::error(msg + "; " + s.message());
    // A dead rank's store connection closes about when its sockets do: give
    // the server a moment to notice.
    auto deadline = Clock::now() + std::min<milliseconds>(world->timeout,
                                                          milliseconds(1500));
    std::vector<int> dead;
    for (;;) {
      std::vector<int> lost;
      if (Status s = store.lostRanks(lost); !s)
        return Status::error(msg + "; " + s.message());
      for (int r : lost) {
        if (std::find(members.begin(), members.end(), r) == members.end() ||
            std::find(dead.begin(), dead.end(), r) != dead.end())
          continue;
        // A member that failed here itself (and then exited) did not die:
        // it reports its own error.
        std::string v;
        bool failed = false;
        if (Status s = store.check(mark + std::to_string(r), v, failed); !s)
          return Status::error(msg + "; " + s.message());
        if (!failed)
          dead.push_back(r);
      }
      if (!dead.empty() || Clock::now() >= deadline)
        break;
      std::this_thread::sleep_for(milliseconds(50));
    }
    if (!dead.empty()) {
      std::string who;
      for (int r : dead)
        who += (who.empty() ? "rank " : ", rank ") + std::to_string(r);
      return Status::error(msg + "; " + who +
                           " died (its connection to the store closed)");
    }
    std::string silent;
    for (int r : members) {
      if (r == worldRank())
        continue;
      std::string v;
      bool found = false;
      if (Status s = store.check(mark + std::to_string(r), v, found); !s)
        return Status::error(msg + "; " + s.message());
      if (!found)
        silent += (silent.empty() ? "" : ", ") + std::to_string(r);
    }
    if (!silent.empty())
      msg += "; rank " + silent +
             " did not fail here and is alive: hung, or not at this "
             "collective";
    return Status::error(msg);
  }

  std::shared_ptr<gloo::Context> context;
  uint64_t seq = 0;
  std::vector<char> buffers[2];
  struct PendingSend {
    std::unique_ptr<char[]> bytes;
    std::unique_ptr<gloo::transport::UnboundBuffer> buffer;
    std::string what;
  };
  static constexpr size_t kMaxPendingSends = 64;
  std::vector<PendingSend> pending;
};

} // namespace

Status createGlooCommunicator(const CommOptions &options,
                              std::unique_ptr<Communicator> &out) {
  TSL_RETURN_IF_ERROR(
      checkOptions(options, "gloo needs a store for the rendezvous"));
  // Gloo writes to its sockets without MSG_NOSIGNAL: a peer that died would
  // kill this process by SIGPIPE instead of failing the collective with a
  // message. Ignore SIGPIPE unless the program handles it itself (Python
  // ignores it too).
  struct sigaction old {};
  if (sigaction(SIGPIPE, nullptr, &old) == 0 && old.sa_handler == SIG_DFL)
    signal(SIGPIPE, SIG_IGN);
  auto world = std::make_unique<GlooWorld>(options);
  try {
    gloo::transport::tcp::attr attr;
    if (!options.iface.empty())
      attr.iface = options.iface;
    else if (!options.hostname.empty())
      attr.hostname = options.hostname;
    world->device = gloo::transport::tcp::CreateDevice(attr);
  } catch (const std::exception &e) {
    return Status::error(std::string("gloo: cannot create the TCP device: ") +
                         e.what());
  }
  auto c = std::make_unique<GlooCommunicator>(
      world.get(), allRanks(options.size), options.rank);
  TSL_RETURN_IF_ERROR(c->connect());
  c->ownedWorld = std::move(world);
  out = std::move(c);
  return Status::ok();
}

#endif // TESSEL_RUNTIME_HAVE_GLOO

} // namespace tessel::runtime
