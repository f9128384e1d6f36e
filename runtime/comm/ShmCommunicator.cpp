//===- ShmCommunicator.cpp - Collectives of local ranks in shared memory --===//
//
// Ranks of one host meet in a POSIX shared-memory segment (ShmSegment.h:
// its creation, mapping and layout), one per communicator (the world, each
// subgroup). A member may write its next chunk to one of its two slots
// while slower peers still read its last. A chunk: wait until every member
// is done with this member's buffer, write a header describing the
// collective and the data, arrive (counter + 1), wait for every member's
// arrival, read, arrive again ("done"). Headers are compared at every chunk:
// members at different collectives fail with both named instead of mixing
// their bytes.
//
// all_reduce: each member reduces its 1/n of the chunk over every member's
// buffer in member order, publishes it, and everybody copies every piece:
// each element is computed once, so results are bitwise identical on every
// member and do not depend on timing. reduce_scatter: member m reduces piece
// m the same way. all_gather and broadcast are copies. Tensors larger than a
// slot go through in chunks. all_to_all and collective_permute go to the
// fallback communicator (Gloo's), as do subgroups whose segment cannot be
// created.
//
// send/recv (a pipeline's activations and gradients) go through the segment
// too, in groups of up to kMaxChannelMembers: one ring of kChannelBytes per
// ordered pair of members, a byte stream of messages (tag, size, payload)
// that the sender writes as space frees up and the receiver reads in
// order; a message of another tag than the one awaited is read aside and
// kept for its recv (Gloo's matching by tag). No syscall on the way (the
// TCP loopback of Gloo's pairs cost a pipeline's ranks milliseconds of
// kernel time per step on a 2-core VM); waits spin briefly, then sleep on
// the ring's futex word.
//
// Waits (ShmFutex.h) spin briefly (not where the rank's core runs other
// ranks too: CommOptions::sharedCore), then yield, then sleep on a futex
// (woken by the next arrival); every 50 ms they check that the peers'
// processes still live and the timeout. Failures name the member: dead (its
// pid), hung (alive, not at the collective), at another collective, or
// failed itself (its state says so, and wakes the waiters).
//
//===----------------------------------------------------------------------===//
#include "CommunicatorBase.h"
#include "Layout.h"
#include "ShmFutex.h"
#include "ShmSegment.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <deque>
#include <sched.h>

namespace tessel::runtime {

namespace {

using namespace comm;
using namespace shm;

/// all_reduce's block of partial results, reduced in L1.
constexpr size_t kBlockBytes = 16 << 10;

//===----------------------------------------------------------------------===//
// The communicator
//===----------------------------------------------------------------------===//

class ShmCommunicator : public HostCommunicator<ShmCommunicator> {
public:
  ShmCommunicator(ShmWorld *world, Communicator *fallback,
                  std::vector<int> members, int me, Mapping mapping)
      : HostCommunicator<ShmCommunicator>(world, std::move(members), me),
        fallback(fallback), mapping(std::move(mapping)) {
    auto *h = reinterpret_cast<SegmentHeader *>(this->mapping.base);
    slot = h->slotBytes;
    SegmentLayout layout(size(), slot);
    lines = reinterpret_cast<MemberLine *>(this->mapping.base + layout.lines);
    buffers = this->mapping.base + layout.buffers;
    stride = layout.bufferStride;
    if (layout.channelCount > 0) {
      channels = this->mapping.base + layout.channels;
      channelStride = layout.channelStride;
      aside.resize(size());
    }
  }

  ~ShmCommunicator() override {
    // Peers still waiting here learn that this member is gone.
    lines[me].state.store(kLeft, std::memory_order_seq_cst);
    futexWake(&lines[me].counter);
  }

  const char *backend() const override { return "shm"; }

  Status runAllReduce(const TensorView &in, const TensorView &out,
                      ReduceKind kind) {
    const int n = size();
    const size_t es = dtypeSize(in.dtype);
    const int64_t total = in.numel(),
                  perChunk = static_cast<int64_t>(slot / es);
    const char *src = static_cast<const char *>(in.data);
    char *dst = static_cast<char *>(out.data);
    const int64_t blockElems = static_cast<int64_t>(kBlockBytes / es);
    block.resize(kBlockBytes);
    // Chunk [start, start + e) of the elements; member m reduces piece m
    // (po, pc) of it.
    int64_t e = 0, po = 0, pc = 0;
    auto write = [&](int b, int64_t start) {
      e = std::min(perChunk, total - start);
      po = chunkOffset(e, n, me);
      pc = chunkSize(e, n, me);
      // Only this member reads its own piece: it stays in `in`.
      std::memcpy(data(me, b), src + start * es, po * es);
      std::memcpy(data(me, b) + (po + pc) * es, src + (start + po + pc) * es,
                  (e - po - pc) * es);
    };
    const ChunkHeader h = header(kAllReduce, in.dtype, kind, 0, in.shape);
    auto read = [&](int b, int64_t start) {
      // Piece `me` of the chunk, reduced over the members in order, by
      // blocks that stay in L1 (`in` may be `out`).
      for (int64_t k = 0; k < pc; k += blockElems) {
        int64_t len = std::min(blockElems, pc - k);
        auto from = [&](int r) -> const char * {
          return r == me ? src + (start + po + k) * es
                         : data(r, b) + (po + k) * es;
        };
        std::memcpy(block.data(), from(0), len * es);
        for (int r = 1; r < n; ++r)
          reduceInto(kind, in.dtype, block.data(), from(r), len);
        std::memcpy(dst + (start + po + k) * es, block.data(), len * es);
        std::memcpy(data(me, b) + (po + k) * es, block.data(), len * es);
      }
      TSL_RETURN_IF_ERROR(arriveAndWait(h));
      for (int r = 0; r < n; ++r) {
        if (r == me)
          continue;
        int64_t ro = chunkOffset(e, n, r), rc = chunkSize(e, n, r);
        std::memcpy(dst + (start + ro) * es, data(r, b) + ro * es, rc * es);
      }
      return Status::ok();
    };
    return exchange(h, total, perChunk, write, read);
  }

  Status runAllGather(const TensorView &in, const TensorView &out,
                      int64_t dim) {
    const int n = size();
    DimSplit os = splitAt(out.shape, dim, dtypeSize(in.dtype));
    const int64_t total = os.size;
    const Pieces p = pieces(os, n);
    // `in` is this member's piece, contiguous.
    const char *src = static_cast<const char *>(in.data);
    auto write = [&](int b, int64_t lo) {
      if (size_t(lo) < p.bytes(me))
        std::memcpy(data(me, b), src + lo, std::min(slot, p.bytes(me) - lo));
    };
    auto read = [&](int b, int64_t lo) {
      for (int r = 0; r < n; ++r)
        if (size_t(lo) < p.bytes(r))
          unpackRange(data(r, b), os, chunkOffset(total, n, r),
                      chunkSize(total, n, r), lo,
                      std::min(lo + slot, p.bytes(r)), out.data);
      return Status::ok();
    };
    return exchange(
        header(kAllGather, in.dtype, ReduceKind::Sum, dim, out.shape),
        static_cast<int64_t>(p.most()), static_cast<int64_t>(slot), write,
        read);
  }

  Status runReduceScatter(const TensorView &in, const TensorView &out,
                          ReduceKind kind, int64_t dim) {
    const int n = size();
    const size_t es = dtypeSize(in.dtype);
    DimSplit is = splitAt(in.shape, dim, es);
    const int64_t total = is.size;
    const Pieces p = pieces(is, n);
    // Each buffer holds n parts of `part` bytes: part m goes to member m.
    const size_t part = slot / n / 64 * 64;
    char *dst = static_cast<char *>(out.data);
    auto write = [&](int b, int64_t lo) {
      for (int m = 0; m < n; ++m)
        if (size_t(lo) < p.bytes(m))
          packRange(in.data, is, chunkOffset(total, n, m),
                    chunkSize(total, n, m), lo, std::min(lo + part, p.bytes(m)),
                    data(me, b) + m * part);
    };
    auto read = [&](int b, int64_t lo) {
      if (size_t(lo) < p.bytes(me)) {
        size_t len = std::min(part, p.bytes(me) - lo);
        std::memcpy(dst + lo, data(0, b) + me * part, len);
        for (int r = 1; r < n; ++r)
          reduceInto(kind, in.dtype, dst + lo, data(r, b) + me * part,
                     static_cast<int64_t>(len / es));
      }
      return Status::ok();
    };
    return exchange(header(kReduceScatter, in.dtype, kind, dim, in.shape),
                    static_cast<int64_t>(p.most()), static_cast<int64_t>(part),
                    write, read);
  }

  Status runBroadcast(const TensorView &in, const TensorView &out, int root) {
    const size_t bytes = out.bytes();
    auto write = [&](int b, int64_t lo) {
      if (me == root)
        std::memcpy(data(me, b), static_cast<const char *>(in.data) + lo,
                    std::min(slot, bytes - lo));
    };
    auto read = [&](int b, int64_t lo) {
      if (me != root)
        std::memcpy(static_cast<char *>(out.data) + lo, data(root, b),
                    std::min(slot, bytes - lo));
      return Status::ok();
    };
    TSL_RETURN_IF_ERROR(exchange(
        header(kBroadcast, in.dtype, ReduceKind::Sum, root, in.shape),
        static_cast<int64_t>(bytes), static_cast<int64_t>(slot), write, read));
    return me == root ? copyHost(in, out) : Status::ok();
  }

  Status barrier() override {
    if (size() > 1) {
      ChunkHeader h = header(kBarrier, DType::F32, ReduceKind::Sum, 0, {});
      h.flags = usedFallback;
      bool anyFallback = false;
      auto read = [&](int b, int64_t) {
        for (int r = 0; r < size(); ++r)
          anyFallback |= headerOf(r, b)->flags != 0;
        return Status::ok();
      };
      TSL_RETURN_IF_ERROR(exchange(
          h, 1, 1, [](int, int64_t) {}, read));
      // The fallback's own barrier completes its staged sends; every
      // member knows whether any member needs it.
      if (!anyFallback)
        return Status::ok();
    }
    usedFallback = false;
    return fallback ? fallback->barrier() : Status::ok();
  }

  Status allToAll(const TensorView &in, const TensorView &out, int64_t splitDim,
                  int64_t concatDim) override {
    TSL_RETURN_IF_ERROR(delegate("all_to_all"));
    return fallback->allToAll(in, out, splitDim, concatDim);
  }
  Status
  collectivePermute(const TensorView &in, const TensorView &out,
                    const std::vector<std::pair<int, int>> &pairs) override {
    TSL_RETURN_IF_ERROR(delegate("collective_permute"));
    return fallback->collectivePermute(in, out, pairs);
  }
  /// Written into the ring to `peer` (waiting while it is full), or by the
  /// fallback where the group has no rings.
  Status send(const TensorView &in, int peer, int64_t tag) override {
    if (!channels) {
      TSL_RETURN_IF_ERROR(delegate("send"));
      return fallback->send(in, peer, tag);
    }
    TSL_RETURN_IF_ERROR(checkPeer(peer, tag, size(), me, "send to"));
    return in.bytes() == 0 ? Status::ok() : writeMessage(in, peer, tag);
  }
  /// Written into the ring to `peer` if the ring has room for the whole
  /// message (header and bytes) now.
  bool trySend(const TensorView &in, int peer, int64_t tag) override {
    if (!channels || !checkPeer(peer, tag, size(), me, "send to"))
      return false;
    if (in.bytes() == 0)
      return true;
    ChannelEnd *both = ends(me, peer);
    const uint64_t written = both[0].bytes.load(std::memory_order_relaxed);
    const uint64_t read = both[1].bytes.load(std::memory_order_acquire);
    if (kChannelBytes - (written - read) < sizeof(MessageHeader) + in.bytes())
      return false;
    // Room for all of it: the write does not wait.
    return writeMessage(in, peer, tag).isOk();
  }
  /// The next message of `tag` from `peer`: one read aside before, or the
  /// ring's, reading the messages of other tags before it aside.
  Status recv(const TensorView &out, int peer, int64_t tag) override {
    if (!channels) {
      TSL_RETURN_IF_ERROR(delegate("recv"));
      return fallback->recv(out, peer, tag);
    }
    TSL_RETURN_IF_ERROR(checkPeer(peer, tag, size(), me, "recv from"));
    if (out.bytes() == 0)
      return Status::ok();
    const std::string what = "recv from rank " + std::to_string(members[peer]);
    auto sizeError = [&](uint64_t bytes) {
      return Status::error(where(what) + ": the message of tag " +
                           std::to_string(tag) + " holds " +
                           std::to_string(bytes) + " bytes, the recv expects " +
                           std::to_string(out.bytes()));
    };
    auto &kept = aside[peer];
    for (auto it = kept.begin(); it != kept.end(); ++it)
      if (it->first == tag) {
        if (it->second.size() != out.bytes())
          return sizeError(it->second.size());
        std::memcpy(out.data, it->second.data(), out.bytes());
        kept.erase(it);
        return Status::ok();
      }
    for (;;) {
      MessageHeader h;
      TSL_RETURN_IF_ERROR(moveRing(kRecv, peer, &h, sizeof h, what));
      if (h.tag == tag) {
        if (h.bytes != out.bytes())
          return sizeError(h.bytes);
        return moveRing(kRecv, peer, out.data, out.bytes(), what);
      }
      // A message for a later recv: kept until then.
      if (h.bytes > (uint64_t(1) << 40))
        return Status::error(where(what) + ": a message of " +
                             std::to_string(h.bytes) + " bytes (tag " +
                             std::to_string(h.tag) + "): the ring is corrupt");
      kept.emplace_back(h.tag, std::vector<char>(h.bytes));
      TSL_RETURN_IF_ERROR(
          moveRing(kRecv, peer, kept.back().second.data(), h.bytes, what));
    }
  }
  /// With rings, the default: the recv runs at the wait.
  Status irecv(const TensorView &out, int peer, int64_t tag,
               std::unique_ptr<P2PRequest> &req) override {
    if (channels)
      return Communicator::irecv(out, peer, tag, req);
    TSL_RETURN_IF_ERROR(delegate("recv"));
    return fallback->irecv(out, peer, tag, req);
  }

  void setTimeout(milliseconds timeout) override {
    world->timeout = timeout;
    if (shm().fallback)
      shm().fallback->setTimeout(timeout);
  }

private:
  ShmWorld &shm() const { return static_cast<ShmWorld &>(*world); }

  Status newSubgroup(const std::vector<int> &ranks, const std::vector<int> &wr,
                     int index, Communicator *&out) override {
    Communicator *fb = nullptr;
    if (fallback)
      TSL_RETURN_IF_ERROR(fallback->subgroup(ranks, fb));
    Mapping m;
    Status s = openSegment(shm(), wr, index, m);
    if (!s && !fb)
      return s.withContext("group " + listToString(wr));
    // On a failure every member saw it: the group runs on the fallback.
    out = s ? adopt(std::make_unique<ShmCommunicator>(&shm(), fb, wr, index,
                                                      std::move(m)))
            : fb;
    return Status::ok();
  }

  Status delegate(const char *op) {
    if (!fallback)
      return Status::error(std::string(op) + ": the shm communicator has no "
                                             "fallback communicator for it");
    usedFallback = true;
    return Status::ok();
  }

  Status usable(uint32_t op) {
    if (broken.empty())
      return Status::ok();
    return Status::error(where(opName(op)) +
                         ": not run, an earlier collective over these ranks "
                         "failed (" +
                         broken + ")");
  }

  static ChunkHeader header(uint32_t op, DType dtype, ReduceKind kind,
                            int64_t arg, const Shape &shape) {
    ChunkHeader h{};
    h.op = op;
    h.dtype = static_cast<uint32_t>(dtype);
    h.kind = static_cast<uint32_t>(kind);
    h.arg = arg;
    h.rank = static_cast<uint32_t>(shape.size());
    uint64_t hash = 1469598103934665603ull;
    for (size_t i = 0; i < shape.size(); ++i) {
      if (i < kMaxDims)
        h.dims[i] = shape[i];
      hash = (hash ^ static_cast<uint64_t>(shape[i])) * 1099511628211ull;
    }
    h.shapeHash = hash;
    return h;
  }

  char *bufferOf(int m, int b) const {
    return buffers + (static_cast<size_t>(m) * 2 + b) * stride;
  }
  ChunkHeader *headerOf(int m, int b) const {
    return reinterpret_cast<ChunkHeader *>(bufferOf(m, b));
  }
  char *data(int m, int b) const { return bufferOf(m, b) + kChunkHeaderBytes; }

  /// Runs collective `h` over `total` units (bytes or elements), `step` at a
  /// time: for each chunk from `lo`, write(b, lo) fills this member's buffer
  /// b, every member arrives and their headers are compared, then
  /// read(b, lo) reads the members' buffers b.
  template <typename Write, typename Read>
  Status exchange(const ChunkHeader &h, int64_t total, int64_t step,
                  Write &&write, Read &&read) {
    TSL_RETURN_IF_ERROR(usable(h.op));
    for (int64_t lo = 0; lo < total; lo += step) {
      int b;
      TSL_RETURN_IF_ERROR(beginChunk(h, b));
      write(b, lo);
      TSL_RETURN_IF_ERROR(arriveAndCheck(h, b));
      TSL_RETURN_IF_ERROR(read(b, lo));
      finishChunk(b);
    }
    return Status::ok();
  }

  /// Waits until every member is done with this member's next buffer and
  /// writes the chunk's header there.
  Status beginChunk(const ChunkHeader &h, int &b) {
    b = static_cast<int>(chunks & 1);
    TSL_RETURN_IF_ERROR(waitAll(freeAt[b], h.op));
    *headerOf(me, b) = h;
    return Status::ok();
  }

  void arrive() {
    ++phase;
    MemberLine &l = lines[me];
    l.counter.store(phase, std::memory_order_seq_cst);
    if (l.waiters.load(std::memory_order_seq_cst))
      futexWake(&l.counter);
  }

  /// Publishes this member's chunk, waits for everybody's and checks that
  /// they are at the same collective.
  Status arriveAndCheck(const ChunkHeader &h, int b) {
    TSL_RETURN_IF_ERROR(arriveAndWait(h));
    for (int r = 0; r < size(); ++r) {
      const ChunkHeader *o = headerOf(r, b);
      if (r != me && !o->sameCollective(h))
        return fail(h.op, "rank " + std::to_string(members[r]) + " is at " +
                              o->describe() + ", this rank at " + h.describe());
    }
    return Status::ok();
  }

  Status arriveAndWait(const ChunkHeader &h) {
    arrive();
    return waitAll(phase, h.op);
  }

  /// Done reading the peers' buffers `b`.
  void finishChunk(int b) {
    arrive();
    freeAt[b] = phase;
    ++chunks;
  }

  Status waitAll(uint32_t target, uint32_t op) {
    for (int r = 0; r < size(); ++r)
      if (r != me &&
          !reached(lines[r].counter.load(std::memory_order_acquire), target))
        TSL_RETURN_IF_ERROR(waitFor(r, target, op));
    return Status::ok();
  }

  /// Spins ~20 us (unless the core is shared), yields up to 2 ms, then
  /// sleeps on the peer's counter; every 50 ms checks the peers' processes
  /// and the timeout.
  Status waitFor(int r, uint32_t target, uint32_t op) {
    MemberLine &l = lines[r];
    const auto start = Clock::now();
    auto nextCheck = start + kCheckEvery;
    bool spinning = shm().spin;
    for (uint64_t i = 1;; ++i) {
      uint32_t v = l.counter.load(std::memory_order_acquire);
      if (reached(v, target))
        return Status::ok();
      if (uint32_t st = l.state.load(std::memory_order_acquire)) {
        // It may have arrived before it left.
        if (reached(l.counter.load(std::memory_order_acquire), target))
          return Status::ok();
        return fail(op, st == kLeft
                            ? "rank " + std::to_string(members[r]) +
                                  " left (its communicator was destroyed)"
                            : "rank " + std::to_string(members[r]) +
                                  " gave up first (its " + opName(st - 1) +
                                  " failed)");
      }
      if (spinning) {
        cpuRelax();
        if (i % 64 || Clock::now() - start < kSpinFor)
          continue;
        spinning = false;
      }
      auto now = Clock::now();
      if (now >= nextCheck) {
        for (int p = 0; p < size(); ++p) {
          int32_t pid = lines[p].pid.load(std::memory_order_relaxed);
          if (p != me && processGone(pid))
            return fail(op, "rank " + std::to_string(members[p]) + " (pid " +
                                std::to_string(pid) + ") exited during " +
                                opName(op));
        }
        if (now - start >= world->timeout)
          return timedOut(r, target, op);
        nextCheck = now + kCheckEvery;
      }
      if (now - start < kYieldFor) {
        ::sched_yield();
        continue;
      }
      l.waiters.fetch_add(1, std::memory_order_seq_cst);
      v = l.counter.load(std::memory_order_seq_cst);
      if (!reached(v, target) && !l.state.load(std::memory_order_seq_cst))
        futexWait(&l.counter, v,
                  std::chrono::duration_cast<std::chrono::nanoseconds>(
                      nextCheck - now));
      l.waiters.fetch_sub(1, std::memory_order_seq_cst);
    }
  }

  Status timedOut(int r, uint32_t target, uint32_t op) {
    std::string silent;
    for (int p = 0; p < size(); ++p)
      if (p != me &&
          !reached(lines[p].counter.load(std::memory_order_acquire), target))
        silent += (silent.empty() ? "" : ", ") + std::to_string(members[p]);
    if (silent.empty())
      silent = std::to_string(members[r]);
    return fail(
        op, "Timed out after " + std::to_string(world->timeout.count()) +
                " ms waiting for rank " + std::to_string(members[r]) +
                " (pid " +
                std::to_string(lines[r].pid.load(std::memory_order_relaxed)) +
                "); rank " + silent +
                " did not fail here and is alive: hung, or not at "
                "this collective");
  }

  /// Marks this member failed (waking its waiters) and builds the message.
  /// `label` names the op in the message (default: opName(op); a send or
  /// recv names its peer).
  Status fail(uint32_t op, const std::string &what,
              const std::string &label = "") {
    broken = what;
    lines[me].state.store(1 + op, std::memory_order_seq_cst);
    futexWake(&lines[me].counter);
    return Status::error(where(label.empty() ? opName(op) : label) +
                         " failed: " + what);
  }

  /// A message's head in a send/recv ring.
  struct MessageHeader {
    int64_t tag;
    uint64_t bytes;
  };

  /// The ring from member `from` to member `to`: its two ends and bytes.
  char *channelAt(int from, int to) const {
    const int n = size();
    return channels +
           static_cast<size_t>(from * (n - 1) + (to < from ? to : to - 1)) *
               channelStride;
  }
  /// [sender's end, receiver's end].
  ChannelEnd *ends(int from, int to) const {
    return reinterpret_cast<ChannelEnd *>(channelAt(from, to));
  }
  char *ring(int from, int to) const {
    return channelAt(from, to) + 2 * sizeof(ChannelEnd);
  }

  /// Moves `bytes` at `data` through a ring: appended to the ring to `peer`
  /// (op kSend, waiting for space) or taken from the ring from `peer`
  /// (kRecv, waiting for them).
  Status moveRing(uint32_t op, int peer, void *data, size_t bytes,
                  const std::string &what) {
    const bool send = op == kSend;
    const int from = send ? me : peer, to = send ? peer : me;
    ChannelEnd *both = ends(from, to);
    ChannelEnd &mine = both[send ? 0 : 1], &theirs = both[send ? 1 : 0];
    char *r = ring(from, to), *p = static_cast<char *>(data);
    uint64_t at = mine.bytes.load(std::memory_order_relaxed);
    // What this end may move now: the free space, or the unread bytes.
    auto movable = [&]() -> uint64_t {
      const uint64_t other = theirs.bytes.load(std::memory_order_acquire);
      return send ? kChannelBytes - (at - other) : other - at;
    };
    while (bytes > 0) {
      TSL_RETURN_IF_ERROR(
          waitRing(theirs, op, peer, what, [&] { return movable() > 0; }));
      const size_t offset = at % kChannelBytes;
      const size_t n = std::min(
          {bytes, size_t(movable()), size_t(kChannelBytes - offset)});
      if (send)
        std::memcpy(r + offset, p, n);
      else
        std::memcpy(p, r + offset, n);
      p += n;
      bytes -= n;
      at += n;
      publish(mine, at);
    }
    return Status::ok();
  }

  /// Moves this end to `bytes` and wakes the other side if it sleeps.
  static void publish(ChannelEnd &end, uint64_t bytes) {
    end.bytes.store(bytes, std::memory_order_release);
    end.seq.fetch_add(1, std::memory_order_seq_cst);
    if (end.waiters.load(std::memory_order_seq_cst))
      futexWake(&end.seq);
  }

  /// Writes message (tag, in) into the ring to `peer`: its header, then its
  /// bytes, each as space frees up.
  Status writeMessage(const TensorView &in, int peer, int64_t tag) {
    const std::string what = "send to rank " + std::to_string(members[peer]);
    MessageHeader h{tag, static_cast<uint64_t>(in.bytes())};
    TSL_RETURN_IF_ERROR(moveRing(kSend, peer, &h, sizeof h, what));
    return moveRing(kSend, peer, in.data, in.bytes(), what);
  }

  /// Waits until `ready()`, `other` being the peer's end of the ring: spins
  /// ~20 us (unless the core is shared), yields up to 2 ms, then sleeps on
  /// its word, as waitFor does; every 50 ms checks that the peer lives and
  /// the timeout. A peer that left or failed ends the wait only where what
  /// it wrote does not make it ready. (Slept at once after the spin, a
  /// pipeline's receives paid the wake-up, tens of microseconds on a VM,
  /// at each message: a 2-stage step of the HF Llama 0.75-0.78 ms, 0.57-0.60
  /// yielding first.)
  template <typename Ready>
  Status waitRing(ChannelEnd &other, uint32_t op, int peer,
                  const std::string &what, Ready ready) {
    if (ready())
      return Status::ok();
    const auto start = Clock::now();
    auto nextCheck = start + kCheckEvery;
    const bool spin = shm().spin;
    for (uint64_t i = 1;; ++i) {
      if (ready())
        return Status::ok();
      if (spin && (i % 64 || Clock::now() - start < kSpinFor)) {
        cpuRelax();
        continue;
      }
      const auto now = Clock::now();
      if (now >= nextCheck) {
        const uint32_t st = lines[peer].state.load(std::memory_order_acquire);
        const std::string them = "rank " + std::to_string(members[peer]);
        if (st && !ready())
          return fail(op,
                      them + (st == kLeft
                                  ? " left (its communicator was destroyed)"
                                  : " gave up first (its " +
                                        std::string(opName(st - 1)) +
                                        " failed)"),
                      what);
        const int32_t pid = lines[peer].pid.load(std::memory_order_relaxed);
        if (processGone(pid) && !ready())
          return fail(op,
                      them + " (pid " + std::to_string(pid) +
                          ") exited during " + what,
                      what);
        if (now - start >= world->timeout)
          return fail(op,
                      "Timed out after " +
                          std::to_string(world->timeout.count()) +
                          " ms waiting for " + them + " (pid " +
                          std::to_string(pid) + "); " + them +
                          " did not fail here and is alive: hung, or not at "
                          "this collective",
                      what);
        nextCheck = now + kCheckEvery;
      }
      if (now - start < kYieldFor) {
        ::sched_yield();
        continue;
      }
      const uint32_t seq = other.seq.load(std::memory_order_seq_cst);
      other.waiters.fetch_add(1, std::memory_order_seq_cst);
      if (!ready())
        futexWait(&other.seq, seq,
                  std::chrono::duration_cast<std::chrono::nanoseconds>(
                      nextCheck - Clock::now()));
      other.waiters.fetch_sub(1, std::memory_order_seq_cst);
    }
  }

  Communicator *fallback;
  Mapping mapping;
  size_t slot = 0;
  MemberLine *lines = nullptr;
  char *buffers = nullptr;
  size_t stride = 0;
  /// This member's counter; the counter values at which every member is
  /// done with each buffer; chunks run so far.
  uint32_t phase = 0;
  uint32_t freeAt[2] = {0, 0};
  uint64_t chunks = 0;
  bool usedFallback = false;
  std::string broken;
  /// all_reduce's block of partial results.
  std::vector<char> block;
  /// The send/recv rings (null: none in this group), and by peer the
  /// messages read aside, (tag, payload) in arrival order.
  char *channels = nullptr;
  size_t channelStride = 0;
  std::vector<std::deque<std::pair<int64_t, std::vector<char>>>> aside;
};

/// Ranks on several hosts: the world's collectives (and every group that
/// spans hosts) go to the fallback, Gloo's; a subgroup whose members share
/// a host gets a segment of its own, as under createShmCommunicator.
class SplitCommunicator : public CommunicatorBase {
public:
  SplitCommunicator(ShmWorld *world, std::vector<int> hostOf)
      : CommunicatorBase(world, world->fallback->worldRanks(),
                         world->fallback->rank()),
        fallback(world->fallback.get()), hostOf(std::move(hostOf)) {}

  const char *backend() const override { return "gloo+shm"; }
  Status allReduce(const TensorView &in, const TensorView &out,
                   ReduceKind kind) override {
    return fallback->allReduce(in, out, kind);
  }
  Status allGather(const TensorView &in, const TensorView &out,
                   int64_t dim) override {
    return fallback->allGather(in, out, dim);
  }
  Status reduceScatter(const TensorView &in, const TensorView &out,
                       ReduceKind kind, int64_t dim) override {
    return fallback->reduceScatter(in, out, kind, dim);
  }
  Status allToAll(const TensorView &in, const TensorView &out, int64_t splitDim,
                  int64_t concatDim) override {
    return fallback->allToAll(in, out, splitDim, concatDim);
  }
  Status
  collectivePermute(const TensorView &in, const TensorView &out,
                    const std::vector<std::pair<int, int>> &pairs) override {
    return fallback->collectivePermute(in, out, pairs);
  }
  Status broadcast(const TensorView &in, const TensorView &out,
                   int root) override {
    return fallback->broadcast(in, out, root);
  }
  Status send(const TensorView &in, int peer, int64_t tag) override {
    return fallback->send(in, peer, tag);
  }
  Status recv(const TensorView &out, int peer, int64_t tag) override {
    return fallback->recv(out, peer, tag);
  }
  Status irecv(const TensorView &out, int peer, int64_t tag,
               std::unique_ptr<P2PRequest> &req) override {
    return fallback->irecv(out, peer, tag, req);
  }
  Status barrier() override { return fallback->barrier(); }
  void setTimeout(milliseconds timeout) override {
    world->timeout = timeout;
    fallback->setTimeout(timeout);
  }

private:
  Status newSubgroup(const std::vector<int> &ranks, const std::vector<int> &wr,
                     int index, Communicator *&out) override {
    Communicator *fb = nullptr;
    TSL_RETURN_IF_ERROR(fallback->subgroup(ranks, fb));
    out = fb;
    for (int r : wr)
      if (hostOf[r] != hostOf[wr[0]])
        return Status::ok();
    Mapping m;
    Status s = openSegment(static_cast<ShmWorld &>(*world), wr, index, m);
    // On a failure every member saw it: the group runs on the fallback.
    if (s)
      out = adopt(std::make_unique<ShmCommunicator>(
          static_cast<ShmWorld *>(world), fb, wr, index, std::move(m)));
    return Status::ok();
  }

  Communicator *fallback;
  std::vector<int> hostOf;
};

} // namespace

Status createHostLocalShmCommunicator(const CommOptions &options,
                                      const std::vector<int> &hostOf,
                                      std::unique_ptr<Communicator> fallback,
                                      std::unique_ptr<Communicator> &out) {
  out = std::move(fallback);
  TSL_RETURN_IF_ERROR(
      checkOptions(options, "shm needs a store for the rendezvous"));
  if (!out || out->size() != options.size ||
      static_cast<int>(hostOf.size()) != options.size)
    return Status::error("shm across hosts needs a fallback communicator of "
                         "the world and a host per rank");
  auto world = std::make_unique<ShmWorld>(options);
  if (options.shmSlotBytes)
    world->slotBytes = options.shmSlotBytes;
  world->fallback = std::move(out);
  auto comm = std::make_unique<SplitCommunicator>(world.get(), hostOf);
  comm->ownedWorld = std::move(world);
  out = std::move(comm);
  return Status::ok();
}

Status createShmCommunicator(const CommOptions &options,
                             std::unique_ptr<Communicator> fallback,
                             std::unique_ptr<Communicator> &out) {
  out = std::move(fallback);
  TSL_RETURN_IF_ERROR(
      checkOptions(options, "shm needs a store for the rendezvous"));
  if (out && (out->rank() != options.rank || out->size() != options.size))
    return Status::error(
        "the fallback communicator is rank " + std::to_string(out->rank()) +
        " of " + std::to_string(out->size()) + ", not " +
        std::to_string(options.rank) + " of " + std::to_string(options.size));
  auto world = std::make_unique<ShmWorld>(options);
  if (options.shmSlotBytes)
    world->slotBytes = options.shmSlotBytes;
  std::vector<int> members = allRanks(options.size);
  Mapping m;
  TSL_RETURN_IF_ERROR(openSegment(*world, members, options.rank, m));
  world->fallback = std::move(out);
  auto comm = std::make_unique<ShmCommunicator>(
      world.get(), world->fallback.get(), members, options.rank, std::move(m));
  comm->ownedWorld = std::move(world);
  out = std::move(comm);
  return Status::ok();
}

} // namespace tessel::runtime
