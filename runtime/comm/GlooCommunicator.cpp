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
// the others time out is hung, or cut off).
//
// Several hosts: each rank publishes the address its device listens on, its
// host (hostIdentity()) and the port of a probe socket it listens on but
// never accepts from. A rank listening on a loopback address while a peer
// runs on another host is refused at once, naming both. A failed operation
// probes each member that did not fail: a connection the kernel accepts
// means the rank lives (hung, or stopped, or at another collective), a
// refusal that its process is gone, no answer at all that its host is
// unreachable (down, or its link cut).
//
//===----------------------------------------------------------------------===//
#include "CommunicatorBase.h"
#include "tessel/ops/DTypeDispatch.h"
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
#include <arpa/inet.h>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdexcept>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>

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

/// What a rank published of itself (meetPeers).
struct Peer {
  std::string address; // what its device listens on; empty: unknown
  std::string host;    // hostIdentity()
  int probePort = 0;   // 0: none
};

struct GlooWorld : World {
  using World::World;
  ~GlooWorld() override {
    if (probeFd >= 0)
      ::close(probeFd);
  }
  std::shared_ptr<gloo::transport::Device> device;
  /// Some operation of this world failed: its staged sends may never be
  /// received (a peer died, or gave up), so nobody waits for them.
  std::atomic<bool> broken{false};
  /// By world rank.
  std::vector<Peer> peers;
  /// Listens (never accepting) so that peers can tell this process lives.
  int probeFd = -1;
};

bool isLoopbackAddress(const std::string &a) {
  return a.rfind("127.", 0) == 0 || a == "::1" || a == "localhost";
}

/// A socket listening on `address` (an IP) at a free port, never accepted
/// from: its port, or 0.
int openProbe(const std::string &address, int &fd) {
  fd = -1;
  addrinfo hints{}, *res = nullptr;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICHOST | AI_PASSIVE;
  if (address.empty() ||
      getaddrinfo(address.c_str(), "0", &hints, &res) != 0 || !res)
    return 0;
  int s = ::socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int port = 0;
  if (s >= 0 && ::bind(s, res->ai_addr, res->ai_addrlen) == 0 &&
      ::listen(s, 64) == 0) {
    sockaddr_storage a{};
    socklen_t len = sizeof(a);
    getsockname(s, reinterpret_cast<sockaddr *>(&a), &len);
    port = a.ss_family == AF_INET6
               ? ntohs(reinterpret_cast<sockaddr_in6 *>(&a)->sin6_port)
               : ntohs(reinterpret_cast<sockaddr_in *>(&a)->sin_port);
    fd = s;
  } else if (s >= 0) {
    ::close(s);
  }
  freeaddrinfo(res);
  return port;
}

enum class Probe { Alive, Gone, Unreachable, Unknown };

/// Connects to every peer's probe port at once and waits up to `limit`:
/// accepted, refused, or no answer (or an unreachable network).
std::vector<Probe> probePeers(const std::vector<const Peer *> &peers,
                              milliseconds limit) {
  std::vector<Probe> result(peers.size(), Probe::Unknown);
  std::vector<pollfd> fds;
  std::vector<size_t> which;
  for (size_t i = 0; i < peers.size(); ++i) {
    const Peer &p = *peers[i];
    addrinfo hints{}, *res = nullptr;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICHOST;
    if (!p.probePort ||
        getaddrinfo(p.address.c_str(), std::to_string(p.probePort).c_str(),
                    &hints, &res) != 0 ||
        !res)
      continue;
    int s = ::socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK,
                     0);
    if (s >= 0) {
      int rc = ::connect(s, res->ai_addr, res->ai_addrlen);
      if (rc == 0) {
        result[i] = Probe::Alive;
        ::close(s);
      } else if (errno == EINPROGRESS) {
        fds.push_back({s, POLLOUT, 0});
        which.push_back(i);
      } else {
        result[i] = errno == ECONNREFUSED ? Probe::Gone : Probe::Unreachable;
        ::close(s);
      }
    }
    freeaddrinfo(res);
  }
  auto deadline = Clock::now() + limit;
  size_t open = fds.size();
  while (open > 0) {
    auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now());
    if (left.count() <= 0)
      break;
    int r = ::poll(fds.data(), fds.size(), static_cast<int>(left.count()));
    if (r < 0 && errno != EINTR)
      break;
    for (size_t k = 0; k < fds.size(); ++k) {
      if (fds[k].fd < 0 || !fds[k].revents)
        continue;
      int err = 0;
      socklen_t len = sizeof(err);
      getsockopt(fds[k].fd, SOL_SOCKET, SO_ERROR, &err, &len);
      result[which[k]] = err == 0              ? Probe::Alive
                         : err == ECONNREFUSED ? Probe::Gone
                                               : Probe::Unreachable;
      ::close(fds[k].fd);
      fds[k].fd = -1;
      --open;
    }
  }
  for (size_t k = 0; k < fds.size(); ++k)
    if (fds[k].fd >= 0) {
      result[which[k]] = Probe::Unreachable;
      ::close(fds[k].fd);
    }
  return result;
}

/// Every rank publishes its address, host and probe port, then reads the
/// others'; a loopback address facing a peer on another host is an error
/// that names both.
Status meetPeers(GlooWorld &w, const CommOptions &o) {
  Peer me;
  me.address = o.hostname;
  me.host = hostIdentity();
  me.probePort = openProbe(o.hostname, w.probeFd);
  std::string keys = o.prefix + "peer/";
  TSL_RETURN_IF_ERROR(w.store->set(keys + std::to_string(o.rank),
                                   me.address + "\n" +
                                       std::to_string(me.probePort) + "\n" +
                                       me.host));
  w.peers.assign(o.size, Peer());
  w.peers[o.rank] = me;
  for (int r = 0; r < o.size; ++r) {
    if (r == o.rank)
      continue;
    std::string v;
    TSL_RETURN_IF_ERROR(w.store->get(keys + std::to_string(r), v, o.timeout));
    size_t a = v.find('\n'), b = v.find('\n', a + 1);
    if (a == std::string::npos || b == std::string::npos)
      return Status::error("rank " + std::to_string(r) +
                           " published a malformed address");
    Peer &p = w.peers[r];
    p.address = v.substr(0, a);
    p.probePort = std::atoi(v.substr(a + 1, b - a - 1).c_str());
    p.host = v.substr(b + 1);
  }
  for (int r = 0; r < o.size; ++r) {
    const Peer &p = w.peers[r];
    if (r == o.rank || p.host == me.host)
      continue;
    const char *fix = ": every rank needs an address the others reach (set "
                      "TESSEL_SOCKET_IFNAME to the interface of the network "
                      "between the hosts)";
    if (isLoopbackAddress(me.address))
      return Status::error("rank " + std::to_string(o.rank) + " listens on " +
                           me.address + ", a loopback address, but rank " +
                           std::to_string(r) + " runs on another host (at " +
                           p.address + ")" + fix);
    if (isLoopbackAddress(p.address))
      return Status::error("rank " + std::to_string(r) + " listens on " +
                           p.address + ", a loopback address, but runs on "
                           "another host than rank " +
                           std::to_string(o.rank) + " (at " + me.address +
                           ")" + fix);
  }
  return Status::ok();
}

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
    return startSubgroup(wr, index, &GlooCommunicator::connect, out);
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
  /// other members and what probing them says. Bounded: the store answers
  /// within its reply slack or is taken as gone, the probes take a second,
  /// and only a member whose process may be gone is waited for (1.5 s) to
  /// show among the store's lost ranks.
  Status fail(const std::string &op, const std::string &what) {
    const auto started = Clock::now();
    GlooWorld &gw = *static_cast<GlooWorld *>(world);
    gw.broken = true;
    std::string msg = where(op) + " failed: " + what;
    KVStore &store = *world->store;
    std::string mark = world->prefix + "failed/";
    // The first store error: the store (rank 0's host) is gone too; what
    // the probes find still goes into the message.
    std::string storeError;
    auto storeOk = [&](const Status &s) {
      if (!s && storeError.empty())
        storeError = s.message();
      return s.isOk();
    };
    storeOk(store.set(mark + std::to_string(worldRank()), op));
    // Members that did not fail here (or, without a store, all): probe them
    // (a second at most).
    std::vector<int> silent;
    std::vector<const Peer *> toProbe;
    static const Peer kNone;
    for (int r : members) {
      if (r == worldRank())
        continue;
      std::string v;
      bool found = false;
      if (storeError.empty() &&
          storeOk(store.check(mark + std::to_string(r), v, found)) && found)
        continue;
      silent.push_back(r);
      toProbe.push_back(r < static_cast<int>(gw.peers.size()) ? &gw.peers[r]
                                                              : &kNone);
    }
    std::vector<Probe> probes = probePeers(toProbe, milliseconds(1000));
    // A failure other than a timeout (a connection closed) comes from a
    // peer that died or failed; a dying process may still accept a probe.
    bool maybeDead = what.find("Timed out") == std::string::npos;
    for (Probe p : probes)
      maybeDead = maybeDead || p == Probe::Gone || p == Probe::Unknown;
    // Until 1.5 s after the failure: a member whose process may be gone
    // shows among the store's lost ranks when the server notices its
    // connection closed (named dead), and a live member that times out too
    // leaves its mark (not named).
    std::vector<int> dead;
    std::vector<bool> marked(silent.size(), false);
    while (storeError.empty()) {
      std::vector<int> lost;
      if (!storeOk(store.lostRanks(lost)))
        break;
      for (int r : lost) {
        if (std::find(members.begin(), members.end(), r) == members.end() ||
            std::find(dead.begin(), dead.end(), r) != dead.end())
          continue;
        // A member that failed here itself (and then exited) did not die:
        // it reports its own error.
        std::string v;
        bool failed = false;
        if (!storeOk(store.check(mark + std::to_string(r), v, failed)))
          break;
        if (!failed)
          dead.push_back(r);
      }
      bool waitMarks = false;
      for (size_t i = 0; i < silent.size() && storeError.empty(); ++i) {
        if (marked[i] || probes[i] != Probe::Alive)
          continue;
        std::string v;
        bool found = false;
        if (storeOk(store.check(mark + std::to_string(silent[i]), v, found)))
          marked[i] = found;
        waitMarks = waitMarks || !marked[i];
      }
      if (!dead.empty() || (!maybeDead && !waitMarks) ||
          Clock::now() >= started + std::min<milliseconds>(
                                        world->timeout, milliseconds(1500)))
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
    std::string alive, gone, cut;
    for (size_t i = 0; i < silent.size(); ++i) {
      if (marked[i])
        continue;
      std::string r = std::to_string(silent[i]);
      std::string at = toProbe[i]->address.empty()
                           ? ""
                           : " (at " + toProbe[i]->address + ")";
      switch (probes[i]) {
      case Probe::Unreachable:
        cut += "; rank " + r + at +
               " is unreachable: no answer within 1 s, its host is down or "
               "cut off";
        break;
      case Probe::Gone:
        gone += "; rank " + r + at +
                " is gone: its host refuses connections to it (the process "
                "exited)";
        break;
      case Probe::Alive:
      case Probe::Unknown:
        if (storeError.empty())
          alive += (alive.empty() ? "" : ", ") + r;
        break;
      }
    }
    msg += cut + gone;
    if (!alive.empty())
      msg += "; rank " + alive +
             " did not fail here and is alive: hung, or not at this "
             "collective";
    if (!storeError.empty())
      msg += "; " + storeError;
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
    return Status::error(std::string("gloo: cannot create the TCP device") +
                         (options.hostname.empty()
                              ? ""
                              : " at " + options.hostname) +
                         ": " + e.what());
  }
  TSL_RETURN_IF_ERROR(meetPeers(*world, options));
  return startWorld(std::move(world), options.size, options.rank,
                    &GlooCommunicator::connect, out);
}

#endif // TESSEL_RUNTIME_HAVE_GLOO

} // namespace tessel::runtime
