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
#include "Layout.h"
#include "tessel/runtime/Communicator.h"
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

#include "Group.h"

#include <algorithm>
#include <csignal>
#include <cstring>
#include <map>
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

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

using comm::listToString;

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

class GlooCommunicator;

/// What every communicator of one rank's world shares.
struct World {
  std::shared_ptr<KVStore> store;
  std::shared_ptr<gloo::transport::Device> device;
  std::string prefix;
  milliseconds timeout;
  int rank = 0;
  /// Subgroups by their world ranks.
  std::map<std::vector<int>, std::unique_ptr<GlooCommunicator>> groups;
};

// Slots of our own unbound-buffer transfers; gloo's algorithms use top
// bytes 0x01-0x08.
constexpr uint64_t kRingSlot = uint64_t(0x40) << 56;
constexpr uint64_t kPermuteSlot = uint64_t(0x41) << 56;
constexpr uint64_t kP2PSlot = uint64_t(0x42) << 56;

class GlooCommunicator : public Communicator {
public:
  GlooCommunicator(World *world, std::vector<int> members, int me)
      : world(world), members(std::move(members)), me(me) {}
  ~GlooCommunicator() override {
    while (!pending.empty())
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
    try {
      ctx->connectFullMesh(store, world->device);
      // A member returns from connectFullMesh once its own pairs connect;
      // the barrier makes sure every member's have, so that a member that
      // leaves right away does not break a peer's handshake.
      if (members.size() > 1) {
        gloo::BarrierOptions o(ctx);
        gloo::barrier(o);
      }
    } catch (const std::exception &e) {
      return fail("connecting", e.what());
    }
    context = std::move(ctx);
    return Status::ok();
  }

  const char *backend() const override { return "gloo"; }
  int rank() const override { return me; }
  int size() const override { return static_cast<int>(members.size()); }
  const std::vector<int> &worldRanks() const override { return members; }

  Status subgroup(const std::vector<int> &ranks, Communicator *&out) override {
    std::vector<int> wr;
    int index;
    TSL_RETURN_IF_ERROR(comm::resolveGroup(ranks, members, me, wr, index));
    if (wr == members) {
      out = this;
      return Status::ok();
    }
    auto it = world->groups.find(wr);
    if (it == world->groups.end()) {
      auto g = std::make_unique<GlooCommunicator>(world, wr, index);
      TSL_RETURN_IF_ERROR(g->connect());
      it = world->groups.emplace(wr, std::move(g)).first;
    }
    out = it->second.get();
    return Status::ok();
  }

  Status allReduce(const TensorView &in, const TensorView &out,
                   ReduceKind kind) override {
    TSL_RETURN_IF_ERROR(checkAllReduceShapes(in, out, kind));
    if (size() == 1 || out.bytes() == 0)
      return copy(in, out);
    try {
      switch (in.dtype) {
      case DType::F32:
        allReduceTyped<float>(in, out, kind);
        break;
      case DType::I64:
        allReduceTyped<int64_t>(in, out, kind);
        break;
      case DType::I32:
        allReduceTyped<int32_t>(in, out, kind);
        break;
      case DType::Bool:
        allReduceTyped<uint8_t>(in, out, kind);
        break;
      }
    } catch (const std::exception &e) {
      return fail("all_reduce", e.what());
    }
    if (kind == ReduceKind::Mean)
      comm::finishMean(out.dtype, out.data, out.numel(), size());
    return Status::ok();
  }

  Status allGather(const TensorView &in, const TensorView &out,
                   int64_t dim) override {
    TSL_RETURN_IF_ERROR(checkAllGatherShapes(in, out, dim, size(), me));
    if (size() == 1 || out.bytes() == 0)
      return copy(in, out);
    int n = size();
    size_t es = dtypeSize(in.dtype);
    comm::DimSplit os = comm::splitAt(out.shape, dim, es);
    int64_t total = out.shape[dim];
    bool even = total % n == 0;
    // Bytes of each member's piece, in member order.
    std::vector<size_t> bytes(n);
    for (int r = 0; r < n; ++r)
      bytes[r] = static_cast<size_t>(os.outer * chunkSize(total, n, r)) *
                 os.innerBytes;
    char *dst = static_cast<char *>(out.data);
    if (os.outer > 1)
      dst = scratch(0, out.bytes());
    try {
      if (even) {
        gloo::AllgatherOptions o(context);
        o.setInput(static_cast<char *>(in.data), bytes[me]);
        o.setOutput(dst, out.bytes());
        o.setTag(nextTag());
        gloo::allgather(o);
      } else {
        gloo::AllgathervOptions o(context);
        o.setInput(static_cast<char *>(in.data), bytes[me]);
        o.setOutput(dst, std::vector<size_t>(bytes.begin(), bytes.end()));
        o.setTag(nextTag());
        gloo::allgatherv(o);
      }
    } catch (const std::exception &e) {
      return fail("all_gather", e.what());
    }
    if (os.outer > 1) {
      size_t off = 0;
      for (int r = 0; r < n; ++r) {
        comm::insertChunk(dst + off, os, chunkOffset(total, n, r),
                          chunkSize(total, n, r), out.data);
        off += bytes[r];
      }
    }
    return Status::ok();
  }

  Status reduceScatter(const TensorView &in, const TensorView &out,
                       ReduceKind kind, int64_t dim) override {
    TSL_RETURN_IF_ERROR(
        checkReduceScatterShapes(in, out, kind, dim, size(), me));
    if (size() == 1 || in.bytes() == 0)
      return copy(in, out);
    int n = size();
    size_t es = dtypeSize(in.dtype);
    comm::DimSplit is = comm::splitAt(in.shape, dim, es);
    int64_t total = in.shape[dim];
    std::vector<size_t> off(n + 1, 0);
    for (int r = 0; r < n; ++r)
      off[r + 1] = off[r] + static_cast<size_t>(is.outer * chunkSize(total, n, r)) *
                                is.innerBytes;
    // acc holds every member's piece contiguously, in member order.
    char *acc = scratch(0, in.bytes());
    if (is.outer == 1) {
      std::memcpy(acc, in.data, in.bytes());
    } else {
      for (int r = 0; r < n; ++r)
        comm::extractChunk(in.data, is, chunkOffset(total, n, r),
                           chunkSize(total, n, r), acc + off[r]);
    }
    size_t maxPiece = 0;
    for (int r = 0; r < n; ++r)
      maxPiece = std::max(maxPiece, off[r + 1] - off[r]);
    char *tmp = scratch(1, maxPiece);
    uint64_t base = kRingSlot | (nextTag() << 16);
    try {
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
        if (recvBytes && !tmpBuf->waitRecv(world->timeout))
          throw std::runtime_error("receive aborted");
        if (sendBytes && !accBuf->waitSend(world->timeout))
          throw std::runtime_error("send aborted");
        if (recvBytes)
          comm::reduceInto(kind, in.dtype, acc + off[cr], tmp,
                           static_cast<int64_t>(recvBytes / es));
      }
    } catch (const std::exception &e) {
      return fail("reduce_scatter", e.what());
    }
    std::memcpy(out.data, acc + off[me], off[me + 1] - off[me]);
    if (kind == ReduceKind::Mean)
      comm::finishMean(out.dtype, out.data, out.numel(), n);
    return Status::ok();
  }

  Status allToAll(const TensorView &in, const TensorView &out, int64_t splitDim,
                  int64_t concatDim) override {
    TSL_RETURN_IF_ERROR(
        checkAllToAllShapes(in, out, splitDim, concatDim, size(), me));
    if (size() == 1 || in.bytes() == 0)
      return copy(in, out);
    int n = size();
    size_t es = dtypeSize(in.dtype);
    comm::DimSplit is = comm::splitAt(in.shape, splitDim, es);
    int64_t total = in.shape[splitDim];
    // Pieces to send: piece j is chunk j along splitDim.
    std::vector<int64_t> sendBytes(n), recvBytes(n);
    size_t perSlice = static_cast<size_t>(is.outer) * is.innerBytes;
    for (int j = 0; j < n; ++j) {
      sendBytes[j] = static_cast<int64_t>(chunkSize(total, n, j) * perSlice);
      recvBytes[j] = static_cast<int64_t>(chunkSize(total, n, me) * perSlice);
    }
    bool even = total % n == 0;
    const char *src = static_cast<const char *>(in.data);
    if (is.outer > 1) {
      char *packed = scratch(0, in.bytes());
      size_t o = 0;
      for (int j = 0; j < n; ++j) {
        comm::extractChunk(in.data, is, chunkOffset(total, n, j),
                           chunkSize(total, n, j), packed + o);
        o += static_cast<size_t>(sendBytes[j]);
      }
      src = packed;
    }
    // Received piece j goes at j*C along concatDim.
    int64_t c = splitDim == concatDim ? total / n : in.shape[concatDim];
    comm::DimSplit os = comm::splitAt(out.shape, concatDim, es);
    char *dst = os.outer == 1 ? static_cast<char *>(out.data)
                              : scratch(1, out.bytes());
    try {
      if (even) {
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
    } catch (const std::exception &e) {
      return fail("all_to_all", e.what());
    }
    if (os.outer > 1) {
      size_t o = 0;
      for (int j = 0; j < n; ++j) {
        comm::insertChunk(dst + o, os, j * c, c, out.data);
        o += static_cast<size_t>(recvBytes[j]);
      }
    }
    return Status::ok();
  }

  Status collectivePermute(const TensorView &in, const TensorView &out,
                           const std::vector<std::pair<int, int>> &pairs) override {
    TSL_RETURN_IF_ERROR(checkPermutePairs(pairs, size()));
    TSL_RETURN_IF_ERROR(checkAllReduceShapes(in, out, ReduceKind::Max));
    int from = -1, to = -1;
    for (auto [s, d] : pairs) {
      if (d == me)
        from = s;
      if (s == me)
        to = d;
    }
    uint64_t slot = kPermuteSlot | (nextTag() << 16);
    size_t bytes = out.bytes();
    if (from == me || bytes == 0) {
      if (from == me)
        return copy(in, out);
      return Status::ok();
    }
    // Receive into scratch when the result overwrites what we still send.
    bool staged = from >= 0 && to >= 0 && in.data == out.data;
    char *dst = staged ? scratch(0, bytes) : static_cast<char *>(out.data);
    try {
      std::unique_ptr<gloo::transport::UnboundBuffer> rb, sb;
      if (from >= 0) {
        rb = context->createUnboundBuffer(dst, bytes);
        rb->recv(from, slot);
      }
      if (to >= 0) {
        sb = context->createUnboundBuffer(in.data, bytes);
        sb->send(to, slot);
      }
      if (rb && !rb->waitRecv(world->timeout))
        throw std::runtime_error("receive aborted");
      if (sb && !sb->waitSend(world->timeout))
        throw std::runtime_error("send aborted");
    } catch (const std::exception &e) {
      return fail("collective_permute", e.what());
    }
    if (from < 0)
      std::memset(out.data, 0, bytes);
    else if (staged)
      std::memcpy(out.data, dst, bytes);
    return Status::ok();
  }

  Status broadcast(const TensorView &in, const TensorView &out,
                   int root) override {
    if (root < 0 || root >= size())
      return Status::error("root " + std::to_string(root) +
                           " is out of range for a group of " +
                           std::to_string(size()));
    TSL_RETURN_IF_ERROR(checkAllReduceShapes(in, out, ReduceKind::Max));
    if (me == root && in.data != out.data)
      std::memcpy(out.data, in.data, out.bytes());
    if (size() == 1 || out.bytes() == 0)
      return Status::ok();
    try {
      gloo::BroadcastOptions o(context);
      o.setOutput(static_cast<char *>(out.data), out.bytes());
      o.setRoot(root);
      o.setTag(nextTag());
      gloo::broadcast(o);
    } catch (const std::exception &e) {
      return fail("broadcast", e.what());
    }
    return Status::ok();
  }

  /// Gloo's sends complete only once the receiver posts its recv; a send
  /// here is eager instead (like MPI's buffered send): the bytes are staged
  /// and the send completes in the background, so that programs where both
  /// sides send first do not deadlock. Staged sends are awaited by
  /// barrier(), by the destructor, and beyond kMaxPendingSends.
  Status send(const TensorView &in, int peer, int64_t tag) override {
    TSL_RETURN_IF_ERROR(checkPeer(peer, tag, "send to"));
    if (in.bytes() == 0)
      return Status::ok();
    std::string what = "send to rank " + std::to_string(members[peer]);
    while (pending.size() >= kMaxPendingSends)
      TSL_RETURN_IF_ERROR(waitOldestSend());
    try {
      PendingSend p;
      p.bytes.reset(new char[in.bytes()]);
      std::memcpy(p.bytes.get(), in.data, in.bytes());
      p.buffer = context->createUnboundBuffer(p.bytes.get(), in.bytes());
      p.buffer->send(peer, kP2PSlot | static_cast<uint64_t>(tag));
      p.what = what;
      pending.push_back(std::move(p));
    } catch (const std::exception &e) {
      return fail(what, e.what());
    }
    return Status::ok();
  }

  Status recv(const TensorView &out, int peer, int64_t tag) override {
    TSL_RETURN_IF_ERROR(checkPeer(peer, tag, "recv from"));
    if (out.bytes() == 0)
      return Status::ok();
    try {
      auto b = context->createUnboundBuffer(out.data, out.bytes());
      b->recv(peer, kP2PSlot | static_cast<uint64_t>(tag));
      if (!b->waitRecv(world->timeout))
        throw std::runtime_error("receive aborted");
    } catch (const std::exception &e) {
      return fail(("recv from rank " + std::to_string(members[peer])).c_str(),
                  e.what());
    }
    return Status::ok();
  }

  Status barrier() override {
    while (!pending.empty())
      TSL_RETURN_IF_ERROR(waitOldestSend());
    if (size() == 1)
      return Status::ok();
    try {
      gloo::BarrierOptions o(context);
      o.setTag(nextTag());
      gloo::barrier(o);
    } catch (const std::exception &e) {
      return fail("barrier", e.what());
    }
    return Status::ok();
  }

  void setTimeout(milliseconds timeout) override {
    world->timeout = timeout;
    if (context)
      context->setTimeout(timeout);
    for (auto &[k, g] : world->groups)
      if (g.get() != this && g->context)
        g->context->setTimeout(timeout);
  }

  /// The world communicator owns the world (and with it every subgroup).
  std::unique_ptr<World> ownedWorld;

private:
  Status copy(const TensorView &in, const TensorView &out) {
    if (in.data != out.data && out.bytes())
      std::memcpy(out.data, in.data, out.bytes());
    return Status::ok();
  }

  Status checkPeer(int peer, int64_t tag, const char *what) {
    if (peer < 0 || peer >= size() || peer == me)
      return Status::error(std::string(what) + " rank " + std::to_string(peer) +
                           ": not another rank of " + std::to_string(size()));
    if (tag < 0 || tag >= (int64_t(1) << 48))
      return Status::error("tag " + std::to_string(tag) + " is out of range");
    return Status::ok();
  }

  Status waitOldestSend() {
    PendingSend p = std::move(pending.front());
    pending.erase(pending.begin());
    try {
      if (!p.buffer->waitSend(world->timeout))
        throw std::runtime_error("send aborted");
    } catch (const std::exception &e) {
      return fail(p.what, e.what());
    }
    return Status::ok();
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
    Fn fn = nullptr;
    switch (kind) {
    case ReduceKind::Sum:
    case ReduceKind::Mean:
      fn = &gloo::sum<T>;
      break;
    case ReduceKind::Prod:
      fn = &gloo::product<T>;
      break;
    case ReduceKind::Max:
      fn = &gloo::max<T>;
      break;
    case ReduceKind::Min:
      fn = &gloo::min<T>;
      break;
    }
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
    std::string msg = "rank " + std::to_string(world->rank) + ": " + op +
                      " over ranks " + listToString(members) + " failed: " +
                      what;
    KVStore &store = *world->store;
    std::string mark = world->prefix + "failed/";
    if (Status s = store.set(mark + std::to_string(world->rank), op); !s)
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
      for (int r : lost)
        if (std::find(members.begin(), members.end(), r) != members.end())
          dead.push_back(r);
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
      if (r == world->rank)
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

  World *world;
  std::vector<int> members;
  int me;
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
  if (options.size < 1 || options.rank < 0 || options.rank >= options.size)
    return Status::error("invalid rank " + std::to_string(options.rank) +
                         " of " + std::to_string(options.size));
  if (!options.store)
    return Status::error("gloo needs a store for the rendezvous");
  // Gloo writes to its sockets without MSG_NOSIGNAL: a peer that died would
  // kill this process by SIGPIPE instead of failing the collective with a
  // message. Ignore SIGPIPE unless the program handles it itself (Python
  // ignores it too).
  struct sigaction old {};
  if (sigaction(SIGPIPE, nullptr, &old) == 0 && old.sa_handler == SIG_DFL)
    signal(SIGPIPE, SIG_IGN);
  auto world = std::make_unique<World>();
  world->store = options.store;
  world->prefix = options.prefix;
  world->timeout = options.timeout;
  world->rank = options.rank;
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
  std::vector<int> members(options.size);
  for (int i = 0; i < options.size; ++i)
    members[i] = i;
  auto comm = std::make_unique<GlooCommunicator>(world.get(), members,
                                                 options.rank);
  TSL_RETURN_IF_ERROR(comm->connect());
  comm->ownedWorld = std::move(world);
  out = std::move(comm);
  return Status::ok();
}

#endif // TESSEL_RUNTIME_HAVE_GLOO

} // namespace tessel::runtime
