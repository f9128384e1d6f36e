//===- MockGpu.cpp - The host CUDA/NCCL mock (tests only) -----------------===//
//
// What it models and checks: MockGpu.h. One mutex guards all of it; every
// call first lets the queued work of every stream progress as far as it can
// (a GPU runs on its own, whichever thread polls), so a collective completes
// as soon as its last member reaches it.
//
//===----------------------------------------------------------------------===//
#include "MockGpu.h"
#include "cuda_runtime.h"
#include "nccl.h"

#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <tuple>
#include <type_traits>

namespace tessel::mockgpu {
namespace {

enum class Kind {
  AllReduce,
  Broadcast,
  Reduce,
  AllGather,
  ReduceScatter,
  Send,
  Recv
};

const char *kindName(Kind k) {
  constexpr const char *kNames[] = {
      "ncclAllReduce",     "ncclBroadcast", "ncclReduce", "ncclAllGather",
      "ncclReduceScatter", "ncclSend",      "ncclRecv"};
  return kNames[static_cast<int>(k)];
}
bool isP2P(Kind k) { return k == Kind::Send || k == Kind::Recv; }
bool reduces(Kind k) {
  return k == Kind::AllReduce || k == Kind::Reduce || k == Kind::ReduceScatter;
}
bool rooted(Kind k) { return k == Kind::Broadcast || k == Kind::Reduce; }

size_t typeSize(ncclDataType_t t) {
  switch (t) {
  case ncclInt8:
  case ncclUint8:
  case ncclFloat8e4m3:
  case ncclFloat8e5m2:
    return 1;
  case ncclFloat16:
  case ncclBfloat16:
    return 2;
  case ncclInt32:
  case ncclUint32:
  case ncclFloat32:
    return 4;
  case ncclInt64:
  case ncclUint64:
  case ncclFloat64:
    return 8;
  default:
    return 0;
  }
}

/// f(T{}) for the element type of `t`; false for the types the mock cannot
/// reduce (16- and 8-bit floats).
template <class F> bool withType(ncclDataType_t t, F f) {
  switch (t) {
  case ncclInt8:
    f(int8_t{});
    return true;
  case ncclUint8:
    f(uint8_t{});
    return true;
  case ncclInt32:
    f(int32_t{});
    return true;
  case ncclUint32:
    f(uint32_t{});
    return true;
  case ncclInt64:
    f(int64_t{});
    return true;
  case ncclUint64:
    f(uint64_t{});
    return true;
  case ncclFloat32:
    f(float{});
    return true;
  case ncclFloat64:
    f(double{});
    return true;
  default:
    return false;
  }
}

struct Range {
  const char *p;
  size_t n;
  bool overlaps(const Range &o) const {
    return n && o.n && p < o.p + o.n && o.p < p + n;
  }
};

struct Instance;

} // namespace
} // namespace tessel::mockgpu

using namespace tessel::mockgpu;

struct Clique;

struct ncclComm {
  Clique *clique = nullptr;
  int rank = 0;
  int device = 0;
  /// Sequence numbers: collectives, and sends/recvs per peer.
  int64_t colls = 0;
  std::map<int, int64_t> sends, recvs;
  ncclResult_t asyncError = ncclSuccess;
  /// Destroyed, aborted, or its init failed.
  bool gone = false;
  /// A non-blocking init (ncclCommInitRankConfig) not yet complete.
  bool initPending = false;
};

namespace tessel::mockgpu {
namespace {

/// One member's call of an op (a grouped call is one of several Parts of
/// one stream operation).
struct Part {
  Kind kind;
  ncclComm *comm;
  const void *send;
  void *recv;
  size_t count;
  ncclDataType_t type;
  ncclRedOp_t op;
  int root; ///< the root, or the peer of a send/recv
  int64_t seq = 0;
  std::vector<Range> reads, writes;
  std::shared_ptr<Instance> inst;
  ~Part();
};

/// One collective (or one send/recv pair) across its members: a Part per
/// member by rank (point-to-point: sender, receiver).
struct Instance {
  std::vector<Part *> parts;
  bool done = false;
  ncclResult_t failure = ncclSuccess;
};

Part::~Part() {
  if (inst)
    for (Part *&p : inst->parts)
      if (p == this)
        p = nullptr;
}

} // namespace
} // namespace tessel::mockgpu

struct Clique {
  std::string id;
  int nranks = 0;
  std::vector<ncclComm *> members;
  int present = 0;
  bool initFailed = false;
  std::map<int64_t, std::shared_ptr<Instance>> colls;
  /// By (sender, receiver, sequence number).
  std::map<std::tuple<int, int, int64_t>, std::shared_ptr<Instance>> p2p;
};

/// A memcpy/memset (`local`), or a communication op: one call's Part, or a
/// group's.
struct StreamOp {
  std::function<void()> local;
  std::vector<std::shared_ptr<Part>> parts;
  bool arrived = false;
};

struct CUstream_st {
  int device = 0;
  std::deque<StreamOp> queue;
  bool destroyed = false;
};

namespace tessel::mockgpu {
namespace {

std::mutex mu;
std::condition_variable joined;
int deviceCount = 8;
std::chrono::milliseconds initTimeout(10000);
thread_local int curDevice = 0;

std::vector<std::string> violationLog;
int abortCount = 0;
std::vector<InitRecord> initLog;
std::set<std::string> issuedIds;
std::map<std::string, std::unique_ptr<Clique>> cliques;
std::vector<std::unique_ptr<ncclComm>> comms;
std::map<CUstream_st *, std::unique_ptr<CUstream_st>> streams;
std::map<const char *, size_t> allocs;

struct GroupState {
  int depth = 0;
  std::vector<std::pair<cudaStream_t, std::shared_ptr<Part>>> parts;
  ncclResult_t error = ncclSuccess;
};
thread_local GroupState group;

void violation(std::string what) {
  std::fprintf(stderr, "mock GPU: %s\n", what.c_str());
  violationLog.push_back(std::move(what));
}

/// Whether [p, p + n) stays inside the cudaMalloc block it starts in (host
/// memory is not checked).
bool inBounds(const void *ptr, size_t n, const char *what) {
  const char *p = static_cast<const char *>(ptr);
  if (n && !p) {
    violation(std::string(what) + ": null pointer for " + std::to_string(n) +
              " bytes");
    return false;
  }
  auto it = allocs.upper_bound(p);
  if (it == allocs.begin())
    return true;
  --it;
  if (p >= it->first + it->second || p + n <= it->first + it->second)
    return true;
  violation(std::string(what) + ": " + std::to_string(n) + " bytes at offset " +
            std::to_string(p - it->first) + " of a block of " +
            std::to_string(it->second));
  return false;
}

CUstream_st *findStream(cudaStream_t s) {
  auto it = streams.find(s);
  return it == streams.end() || it->second->destroyed ? nullptr
                                                      : it->second.get();
}

void fail(Instance &in, ncclResult_t why) {
  if (in.failure == ncclSuccess)
    in.failure = why;
  for (Part *p : in.parts)
    if (p && p->comm->asyncError == ncclSuccess)
      p->comm->asyncError = in.failure;
}

/// Why `b` does not match `a` (the same op of another member), or "".
std::string mismatch(const Part &a, const Part &b) {
  auto differ = [&](const char *what, long long x, long long y) {
    return std::string(kindName(b.kind)) + " #" + std::to_string(b.seq) +
           ": rank " + std::to_string(b.comm->rank) + " passes " + what + " " +
           std::to_string(y) + ", rank " + std::to_string(a.comm->rank) + " " +
           std::to_string(x);
  };
  if (isP2P(a.kind)) {
    if (a.count * typeSize(a.type) != b.count * typeSize(b.type) ||
        a.type != b.type)
      return differ("bytes", a.count * typeSize(a.type),
                    b.count * typeSize(b.type));
    return "";
  }
  if (a.kind != b.kind)
    return std::string("collective #") + std::to_string(b.seq) + ": rank " +
           std::to_string(b.comm->rank) + " calls " + kindName(b.kind) +
           ", rank " + std::to_string(a.comm->rank) + " " + kindName(a.kind);
  if (a.count != b.count)
    return differ("count", a.count, b.count);
  if (a.type != b.type)
    return differ("datatype", a.type, b.type);
  if (reduces(a.kind) && a.op != b.op)
    return differ("op", a.op, b.op);
  if (rooted(a.kind) && a.root != b.root)
    return differ("root", a.root, b.root);
  return "";
}

/// a + b and a * b as a GPU computes them: integers wrap.
template <class T> T add(T a, T b) {
  if constexpr (std::is_integral_v<T>)
    return static_cast<T>(static_cast<std::make_unsigned_t<T>>(a) +
                          static_cast<std::make_unsigned_t<T>>(b));
  else
    return a + b;
}
template <class T> T mul(T a, T b) {
  if constexpr (std::is_integral_v<T>)
    return static_cast<T>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
  else
    return a * b;
}

/// The reduction of `ins` (count elements each) into `out`, in rank order.
bool reduceAll(const std::vector<const void *> &ins, void *out, size_t count,
               ncclDataType_t type, ncclRedOp_t op) {
  int n = static_cast<int>(ins.size());
  return withType(type, [&](auto zero) {
    using T = decltype(zero);
    T *o = static_cast<T *>(out);
    // ncclAvg: floats are pre-multiplied by 1/n and summed, integers summed
    // and divided (NCCL's PreMulSum / SumPostDiv).
    constexpr bool kFloat = std::is_floating_point_v<T>;
    T scale = kFloat ? static_cast<T>(1.0 / n) : T(1);
    for (size_t i = 0; i < count; ++i) {
      T acc = static_cast<const T *>(ins[0])[i];
      if (op == ncclAvg && kFloat)
        acc = static_cast<T>(acc * scale);
      for (int r = 1; r < n; ++r) {
        T x = static_cast<const T *>(ins[r])[i];
        switch (op) {
        case ncclSum:
          acc = add(acc, x);
          break;
        case ncclProd:
          acc = mul(acc, x);
          break;
        case ncclMax:
          acc = std::max(acc, x);
          break;
        case ncclMin:
          acc = std::min(acc, x);
          break;
        default: // ncclAvg
          acc = add(acc, kFloat ? static_cast<T>(x * scale) : x);
          break;
        }
      }
      if (op == ncclAvg && !kFloat)
        acc = static_cast<T>(acc / n);
      o[i] = acc;
    }
  });
}

/// Runs a complete instance: every member has arrived, so every input is
/// final; inputs are read before any output is written.
void execute(Instance &in) {
  Part &a = *in.parts[0];
  size_t ts = typeSize(a.type);
  if (isP2P(a.kind)) {
    Part &recv = *in.parts[1];
    std::vector<char> data(a.count * ts);
    if (!data.empty()) {
      std::memcpy(data.data(), a.send, data.size());
      std::memcpy(recv.recv, data.data(), data.size());
    }
    return;
  }
  int n = static_cast<int>(in.parts.size());
  size_t bytes = a.count * ts;
  std::vector<const void *> sends;
  for (Part *p : in.parts)
    sends.push_back(p->send);
  std::vector<char> result;
  switch (a.kind) {
  case Kind::AllReduce:
  case Kind::Reduce:
    result.resize(bytes);
    reduceAll(sends, result.data(), a.count, a.type, a.op);
    break;
  case Kind::ReduceScatter:
    result.resize(bytes * n);
    reduceAll(sends, result.data(), a.count * n, a.type, a.op);
    break;
  case Kind::Broadcast:
    result.assign(static_cast<const char *>(sends[a.root]),
                  static_cast<const char *>(sends[a.root]) + bytes);
    break;
  case Kind::AllGather:
    result.resize(bytes * n);
    for (int r = 0; r < n; ++r)
      if (bytes)
        std::memcpy(result.data() + r * bytes, sends[r], bytes);
    break;
  default:
    break;
  }
  if (result.empty())
    return;
  for (int r = 0; r < n; ++r) {
    void *to = in.parts[r]->recv;
    if (a.kind == Kind::Reduce && r != a.root)
      continue;
    if (a.kind == Kind::ReduceScatter)
      std::memcpy(to, result.data() + r * bytes, bytes);
    else
      std::memcpy(to, result.data(), result.size());
  }
}

/// Whether the member `r` of `c` is gone while `in` still needs it.
bool waitsForGone(const Clique &c, const Instance &in, const Part &p) {
  if (isP2P(p.kind)) {
    int other = p.kind == Kind::Send ? 1 : 0;
    return !in.parts[other] && c.members[p.root]->gone;
  }
  for (int r = 0; r < c.nranks; ++r)
    if (!in.parts[r] && c.members[r]->gone)
      return true;
  return false;
}

/// `p` reaches the head of its stream: it joins its instance, which runs
/// once complete.
void arrive(const std::shared_ptr<Part> &sp) {
  Part &p = *sp;
  Clique &c = *p.comm->clique;
  std::shared_ptr<Instance> *slot;
  int idx;
  if (isP2P(p.kind)) {
    bool send = p.kind == Kind::Send;
    int from = send ? p.comm->rank : p.root, to = send ? p.root : p.comm->rank;
    slot = &c.p2p[{from, to, p.seq}];
    idx = send ? 0 : 1;
  } else {
    slot = &c.colls[p.seq];
    idx = p.comm->rank;
  }
  if (!*slot) {
    *slot = std::make_shared<Instance>();
    (*slot)->parts.assign(isP2P(p.kind) ? 2 : c.nranks, nullptr);
  }
  std::shared_ptr<Instance> in = *slot;
  p.inst = in;
  in->parts[idx] = &p;
  for (Part *q : in->parts)
    if (q && q != &p) {
      std::string why = mismatch(*q, p);
      if (!why.empty()) {
        violation(why);
        fail(*in, ncclInvalidUsage);
      }
      break;
    }
  if (waitsForGone(c, *in, p))
    fail(*in, ncclRemoteError);
  if (in->failure != ncclSuccess) {
    fail(*in, in->failure);
    return;
  }
  if (std::all_of(in->parts.begin(), in->parts.end(),
                  [](Part *q) { return q != nullptr; })) {
    execute(*in);
    in->done = true;
    if (isP2P(p.kind))
      c.p2p.erase({in->parts[0]->comm->rank, in->parts[1]->comm->rank, p.seq});
    else
      c.colls.erase(p.seq);
  }
}

/// Runs what can run at the head of `s`; whether anything changed.
bool progress(CUstream_st &s) {
  bool changed = false;
  while (!s.queue.empty()) {
    StreamOp &op = s.queue.front();
    if (op.local) {
      op.local();
    } else {
      if (!op.arrived) {
        op.arrived = changed = true;
        for (auto &p : op.parts)
          arrive(p);
      }
      if (!std::all_of(op.parts.begin(), op.parts.end(),
                       [](auto &p) { return p->inst->done; }))
        return changed;
    }
    s.queue.pop_front();
    changed = true;
  }
  return changed;
}

void progressAll() {
  for (bool changed = true; changed;) {
    changed = false;
    for (auto &entry : streams)
      changed |= progress(*entry.second);
  }
  for (auto it = streams.begin(); it != streams.end();)
    it = it->second->destroyed && it->second->queue.empty() ? streams.erase(it)
                                                            : std::next(it);
}

/// Drops `comm`'s queued work, and what follows it on each stream.
size_t dropWork(ncclComm *comm) {
  size_t dropped = 0;
  for (auto &entry : streams) {
    auto &q = entry.second->queue;
    auto first = std::find_if(q.begin(), q.end(), [&](const StreamOp &op) {
      return std::any_of(op.parts.begin(), op.parts.end(),
                         [&](auto &p) { return p->comm == comm; });
    });
    dropped += q.end() - first;
    q.erase(first, q.end());
  }
  return dropped;
}

/// `comm` leaves: what its peers wait for from it fails (ncclRemoteError).
void leave(ncclComm *comm) {
  comm->gone = true;
  Clique &c = *comm->clique;
  for (auto &entry : c.colls)
    if (!entry.second->parts[comm->rank])
      fail(*entry.second, ncclRemoteError);
  for (auto &entry : c.p2p) {
    auto [from, to, seq] = entry.first;
    (void)seq;
    if ((from == comm->rank && !entry.second->parts[0]) ||
        (to == comm->rank && !entry.second->parts[1]))
      fail(*entry.second, ncclRemoteError);
  }
}

/// The checks every op begins with; null when they pass.
ncclResult_t checkComm(ncclComm_t comm, cudaStream_t stream, const char *what) {
  if (!comm)
    return ncclInvalidArgument;
  if (comm->gone) {
    violation(std::string(what) + " on a destroyed or aborted communicator");
    return ncclInvalidArgument;
  }
  if (comm->initPending || comm->asyncError == ncclInProgress) {
    violation(std::string(what) + " before the communicator's init completed");
    return ncclInvalidUsage;
  }
  CUstream_st *s = findStream(stream);
  if (!s) {
    violation(std::string(what) + ": not a live stream");
    return ncclInvalidArgument;
  }
  if (s->device != comm->device) {
    violation(std::string(what) + ": a stream of device " +
              std::to_string(s->device) + " for a communicator of device " +
              std::to_string(comm->device));
    return ncclInvalidArgument;
  }
  return ncclSuccess;
}

/// Gives `p` its place in the order its kind matches by: the collectives
/// of its communicator, or the sends (recvs) to (from) its peer.
void number(Part &p) {
  ncclComm &c = *p.comm;
  p.seq = !isP2P(p.kind)         ? c.colls++
          : p.kind == Kind::Send ? c.sends[p.root]++
                                 : c.recvs[p.root]++;
}

/// Whether what `a` writes overlaps what `b` reads or writes.
bool clash(const Part &a, const Part &b) {
  for (const Range &w : a.writes) {
    for (const Range &x : b.reads)
      if (w.overlaps(x))
        return true;
    for (const Range &x : b.writes)
      if (w.overlaps(x))
        return true;
  }
  return false;
}

/// Validates one call and queues it (or adds it to the open group).
ncclResult_t submit(Kind kind, const void *send, void *recv, size_t count,
                    ncclDataType_t type, ncclRedOp_t op, int root,
                    ncclComm_t comm, cudaStream_t stream) {
  std::lock_guard<std::mutex> lock(mu);
  auto failWith = [&](ncclResult_t r) {
    if (group.depth && group.error == ncclSuccess)
      group.error = r;
    return r;
  };
  if (ncclResult_t r = checkComm(comm, stream, kindName(kind)))
    return failWith(r);
  int n = comm->clique->nranks, me = comm->rank;
  size_t ts = typeSize(type);
  if (!ts || root < 0 || root >= n ||
      (reduces(kind) && (op < 0 || op >= ncclNumOps)) ||
      (reduces(kind) && !withType(type, [](auto) {})))
    return failWith(ncclInvalidArgument);
  auto part = std::make_shared<Part>(
      Part{kind, comm, send, recv, count, type, op, root});
  size_t bytes = count * ts;
  // What each member reads and writes, as NCCL defines the op.
  bool readsSend =
      kind != Kind::Recv && (kind != Kind::Broadcast || me == root);
  bool writesRecv = kind != Kind::Send && (kind != Kind::Reduce || me == root);
  size_t in = kind == Kind::ReduceScatter ? bytes * n : bytes;
  size_t out = kind == Kind::AllGather ? bytes * n : bytes;
  if (readsSend)
    part->reads.push_back({static_cast<const char *>(send), in});
  if (writesRecv)
    part->writes.push_back({static_cast<const char *>(recv), out});
  for (const Range &r : part->reads)
    if (!inBounds(r.p, r.n, kindName(kind)))
      return failWith(ncclInvalidArgument);
  for (const Range &w : part->writes)
    if (!inBounds(w.p, w.n, kindName(kind)))
      return failWith(ncclInvalidArgument);
  // In place only as NCCL allows it: the same buffer, or (all_gather,
  // reduce_scatter) this member's piece of the larger one.
  if (readsSend && writesRecv && part->reads[0].overlaps(part->writes[0])) {
    const char *s = static_cast<const char *>(send);
    const char *d = static_cast<const char *>(recv);
    bool ok = kind == Kind::AllGather       ? s == d + me * bytes
              : kind == Kind::ReduceScatter ? d == s + me * bytes
                                            : s == d;
    if (!ok) {
      violation(std::string(kindName(kind)) + ": rank " + std::to_string(me) +
                "'s buffers overlap in a way NCCL does not allow");
      return failWith(ncclInvalidArgument);
    }
  }
  if (group.depth) {
    group.parts.emplace_back(stream, std::move(part));
    return ncclSuccess;
  }
  number(*part);
  StreamOp s;
  s.parts.push_back(std::move(part));
  streams[stream]->queue.push_back(std::move(s));
  progressAll();
  return ncclSuccess;
}

cudaError_t local(cudaStream_t stream, std::function<void()> work) {
  CUstream_st *s = findStream(stream);
  if (!s) {
    violation("a memcpy/memset on a stream that is not live");
    return cudaErrorInvalidResourceHandle;
  }
  StreamOp op;
  op.local = std::move(work);
  s->queue.push_back(std::move(op));
  progressAll();
  return cudaSuccess;
}

} // namespace

void reset(int devices) {
  std::lock_guard<std::mutex> lock(mu);
  streams.clear();
  cliques.clear();
  comms.clear();
  for (auto &a : allocs)
    std::free(const_cast<char *>(a.first));
  allocs.clear();
  violationLog.clear();
  initLog.clear();
  issuedIds.clear();
  abortCount = 0;
  deviceCount = devices;
  initTimeout = std::chrono::milliseconds(10000);
}

void setInitTimeout(std::chrono::milliseconds timeout) {
  std::lock_guard<std::mutex> lock(mu);
  initTimeout = timeout;
}

int currentDevice() { return curDevice; }

std::vector<InitRecord> inits() {
  std::lock_guard<std::mutex> lock(mu);
  return initLog;
}
int aborts() {
  std::lock_guard<std::mutex> lock(mu);
  return abortCount;
}
size_t liveAllocations() {
  std::lock_guard<std::mutex> lock(mu);
  return allocs.size();
}
size_t liveStreams() {
  std::lock_guard<std::mutex> lock(mu);
  return std::count_if(streams.begin(), streams.end(),
                       [](auto &s) { return !s.second->destroyed; });
}
size_t liveComms() {
  std::lock_guard<std::mutex> lock(mu);
  return std::count_if(comms.begin(), comms.end(),
                       [](auto &c) { return !c->gone; });
}
std::vector<std::string> takeViolations() {
  std::lock_guard<std::mutex> lock(mu);
  return std::move(violationLog);
}

} // namespace tessel::mockgpu

//===----------------------------------------------------------------------===//
// The CUDA runtime
//===----------------------------------------------------------------------===//

cudaError_t cudaGetDeviceCount(int *count) {
  std::lock_guard<std::mutex> lock(mu);
  *count = deviceCount;
  return deviceCount ? cudaSuccess : cudaErrorNoDevice;
}

cudaError_t cudaSetDevice(int device) {
  std::lock_guard<std::mutex> lock(mu);
  if (!deviceCount)
    return cudaErrorNoDevice;
  if (device < 0 || device >= deviceCount)
    return cudaErrorInvalidDevice;
  curDevice = device;
  return cudaSuccess;
}

cudaError_t cudaGetDevice(int *device) {
  *device = curDevice;
  return cudaSuccess;
}

const char *cudaGetErrorString(cudaError_t error) {
  switch (error) {
  case cudaSuccess:
    return "no error";
  case cudaErrorInvalidValue:
    return "invalid argument";
  case cudaErrorMemoryAllocation:
    return "out of memory";
  case cudaErrorInvalidPitchValue:
    return "invalid pitch argument";
  case cudaErrorNoDevice:
    return "no CUDA-capable device is detected";
  case cudaErrorInvalidDevice:
    return "invalid device ordinal";
  case cudaErrorInvalidResourceHandle:
    return "invalid resource handle";
  case cudaErrorNotReady:
    return "device not ready";
  }
  return "unrecognized error code";
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *stream, unsigned) {
  std::lock_guard<std::mutex> lock(mu);
  auto s = std::make_unique<CUstream_st>();
  s->device = curDevice;
  *stream = s.get();
  streams[s.get()] = std::move(s);
  return cudaSuccess;
}

cudaError_t cudaStreamQuery(cudaStream_t stream) {
  std::lock_guard<std::mutex> lock(mu);
  progressAll();
  CUstream_st *s = findStream(stream);
  if (!s)
    return cudaErrorInvalidResourceHandle;
  return s->queue.empty() ? cudaSuccess : cudaErrorNotReady;
}

cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  std::lock_guard<std::mutex> lock(mu);
  CUstream_st *s = findStream(stream);
  if (!s)
    return cudaErrorInvalidResourceHandle;
  // Like CUDA: queued work still runs; the stream goes once it is done.
  s->destroyed = true;
  progressAll();
  return cudaSuccess;
}

cudaError_t cudaMalloc(void **ptr, size_t size) {
  std::lock_guard<std::mutex> lock(mu);
  char *p = static_cast<char *>(std::malloc(size ? size : 1));
  if (!p)
    return cudaErrorMemoryAllocation;
  allocs[p] = size;
  *ptr = p;
  return cudaSuccess;
}

cudaError_t cudaFree(void *ptr) {
  std::lock_guard<std::mutex> lock(mu);
  if (!ptr)
    return cudaSuccess;
  auto it = allocs.find(static_cast<const char *>(ptr));
  if (it == allocs.end()) {
    violation("cudaFree of a pointer cudaMalloc did not return");
    return cudaErrorInvalidValue;
  }
  allocs.erase(it);
  std::free(ptr);
  return cudaSuccess;
}

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t count,
                            cudaMemcpyKind, cudaStream_t stream) {
  std::lock_guard<std::mutex> lock(mu);
  if (!inBounds(dst, count, "cudaMemcpyAsync") ||
      !inBounds(src, count, "cudaMemcpyAsync"))
    return cudaErrorInvalidValue;
  if (Range{static_cast<const char *>(dst), count}.overlaps(
          {static_cast<const char *>(src), count})) {
    violation("cudaMemcpyAsync between overlapping ranges");
    return cudaErrorInvalidValue;
  }
  return local(stream, [=] {
    if (count)
      std::memcpy(dst, src, count);
  });
}

cudaError_t cudaMemcpy2DAsync(void *dst, size_t dpitch, const void *src,
                              size_t spitch, size_t width, size_t height,
                              cudaMemcpyKind, cudaStream_t stream) {
  std::lock_guard<std::mutex> lock(mu);
  if (width > dpitch || width > spitch)
    return cudaErrorInvalidPitchValue;
  size_t dn = height ? (height - 1) * dpitch + width : 0;
  size_t sn = height ? (height - 1) * spitch + width : 0;
  if (!inBounds(dst, dn, "cudaMemcpy2DAsync") ||
      !inBounds(src, sn, "cudaMemcpy2DAsync"))
    return cudaErrorInvalidValue;
  return local(stream, [=] {
    for (size_t row = 0; row < height && width; ++row)
      std::memcpy(static_cast<char *>(dst) + row * dpitch,
                  static_cast<const char *>(src) + row * spitch, width);
  });
}

cudaError_t cudaMemsetAsync(void *dst, int value, size_t count,
                            cudaStream_t stream) {
  std::lock_guard<std::mutex> lock(mu);
  if (!inBounds(dst, count, "cudaMemsetAsync"))
    return cudaErrorInvalidValue;
  return local(stream, [=] {
    if (count)
      std::memset(dst, value, count);
  });
}

//===----------------------------------------------------------------------===//
// NCCL
//===----------------------------------------------------------------------===//

const char *ncclGetErrorString(ncclResult_t result) {
  switch (result) {
  case ncclSuccess:
    return "no error";
  case ncclUnhandledCudaError:
    return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
  case ncclSystemError:
    return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
  case ncclInternalError:
    return "internal error - please report this issue to the NCCL developers";
  case ncclInvalidArgument:
    return "invalid argument (run with NCCL_DEBUG=WARN for details)";
  case ncclInvalidUsage:
    return "invalid usage (run with NCCL_DEBUG=WARN for details)";
  case ncclRemoteError:
    return "remote process exited or there was a network error";
  case ncclInProgress:
    return "NCCL operation in progress";
  default:
    return "unknown result code";
  }
}

ncclResult_t ncclGetUniqueId(ncclUniqueId *uniqueId) {
  static std::mt19937_64 rng(std::random_device{}());
  std::lock_guard<std::mutex> lock(mu);
  for (size_t i = 0; i < sizeof(uniqueId->internal); i += 8) {
    uint64_t x = rng();
    std::memcpy(uniqueId->internal + i, &x, 8);
  }
  issuedIds.insert(std::string(uniqueId->internal, sizeof(uniqueId->internal)));
  return ncclSuccess;
}

namespace tessel::mockgpu {
namespace {

/// Member `rank` joins the clique of `commId` (under `mu`); null with `err`
/// set where the call is refused.
ncclComm *joinClique(int nranks, const ncclUniqueId &commId, int rank,
                     ncclResult_t &err) {
  std::string key(commId.internal, sizeof(commId.internal));
  if (!issuedIds.count(key)) {
    violation("ncclCommInitRank with an ncclUniqueId that ncclGetUniqueId "
              "did not make");
    err = ncclInvalidArgument;
    return nullptr;
  }
  std::unique_ptr<Clique> &cp = cliques[key];
  if (!cp) {
    cp = std::make_unique<Clique>();
    cp->id = key;
    cp->nranks = nranks;
    cp->members.assign(nranks, nullptr);
  }
  Clique &c = *cp;
  if (c.nranks != nranks || c.members[rank] || c.present == c.nranks) {
    violation("ncclCommInitRank: rank " + std::to_string(rank) + " of " +
              std::to_string(nranks) + " joins a communicator of " +
              std::to_string(c.nranks) +
              (c.members[rank] ? " that has that rank already" : ""));
    err = ncclInvalidUsage;
    return nullptr;
  }
  comms.push_back(std::make_unique<ncclComm>());
  ncclComm *me = comms.back().get();
  me->clique = &c;
  me->rank = rank;
  me->device = curDevice;
  c.members[rank] = me;
  ++c.present;
  joined.notify_all();
  return me;
}

/// The end of `me`'s init once every member has joined: NCCL refuses two
/// ranks of a communicator on one device.
ncclResult_t completeInit(ncclComm *me) {
  Clique &c = *me->clique;
  for (int r = 0; r < c.nranks; ++r)
    if (r != me->rank && c.members[r]->device == me->device) {
      if (r < me->rank)
        std::fprintf(stderr,
                     "mock NCCL WARN Duplicate GPU detected : rank %d and rank "
                     "%d both on CUDA device %d\n",
                     me->rank, r, me->device);
      me->gone = true;
      return ncclInvalidUsage;
    }
  initLog.push_back({c.id, c.nranks, me->rank, me->device});
  return ncclSuccess;
}

} // namespace
} // namespace tessel::mockgpu

ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId commId,
                              int rank) {
  std::unique_lock<std::mutex> lock(mu);
  if (!comm || nranks < 1 || rank < 0 || rank >= nranks)
    return ncclInvalidArgument;
  ncclResult_t err = ncclSuccess;
  ncclComm *me = joinClique(nranks, commId, rank, err);
  if (!me)
    return err;
  Clique &c = *me->clique;
  if (!joined.wait_for(lock, initTimeout,
                       [&] { return c.present == c.nranks || c.initFailed; }) ||
      c.initFailed) {
    c.initFailed = true;
    me->gone = true;
    joined.notify_all();
    return ncclSystemError;
  }
  if ((err = completeInit(me)) != ncclSuccess)
    return err;
  *comm = me;
  return ncclSuccess;
}

ncclResult_t ncclCommInitRankConfig(ncclComm_t *comm, int nranks,
                                    ncclUniqueId commId, int rank,
                                    ncclConfig_t *config) {
  if (!config || config->blocking != 0)
    return ncclCommInitRank(comm, nranks, commId, rank);
  std::lock_guard<std::mutex> lock(mu);
  if (!comm || nranks < 1 || rank < 0 || rank >= nranks)
    return ncclInvalidArgument;
  ncclResult_t err = ncclSuccess;
  ncclComm *me = joinClique(nranks, commId, rank, err);
  if (!me)
    return err;
  me->initPending = true;
  me->asyncError = ncclInProgress;
  *comm = me;
  return ncclInProgress;
}

ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  std::lock_guard<std::mutex> lock(mu);
  if (!comm)
    return ncclSuccess;
  if (comm->gone) {
    violation("ncclCommDestroy of a communicator already gone");
    return ncclInvalidArgument;
  }
  progressAll();
  if (dropWork(comm))
    violation("ncclCommDestroy with work in flight (rank " +
              std::to_string(comm->rank) + ")");
  leave(comm);
  return ncclSuccess;
}

ncclResult_t ncclCommAbort(ncclComm_t comm) {
  std::lock_guard<std::mutex> lock(mu);
  if (!comm)
    return ncclSuccess;
  ++abortCount;
  if (comm->initPending && comm->clique->present < comm->clique->nranks)
    comm->clique->initFailed = true; // the others never complete either
  comm->initPending = false;
  if (comm->gone)
    return ncclSuccess;
  dropWork(comm);
  leave(comm);
  return ncclSuccess;
}

ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *asyncError) {
  std::lock_guard<std::mutex> lock(mu);
  if (!comm || !asyncError)
    return ncclInvalidArgument;
  if (comm->initPending) {
    Clique &c = *comm->clique;
    if (c.initFailed) {
      comm->initPending = false;
      comm->asyncError = ncclSystemError;
    } else if (c.present == c.nranks) {
      comm->initPending = false;
      comm->asyncError = completeInit(comm);
    }
  }
  progressAll();
  *asyncError = comm->asyncError;
  return ncclSuccess;
}

ncclResult_t ncclGroupStart() {
  ++group.depth;
  return ncclSuccess;
}

ncclResult_t ncclGroupEnd() {
  if (group.depth == 0)
    return ncclInvalidUsage;
  if (--group.depth)
    return ncclSuccess;
  std::lock_guard<std::mutex> lock(mu);
  auto parts = std::move(group.parts);
  ncclResult_t error = group.error;
  group = GroupState();
  if (error != ncclSuccess)
    return error; // nothing of a failed group is launched
  // One operation per stream, its calls in call order; they arrive together.
  std::vector<std::pair<cudaStream_t, StreamOp>> ops;
  for (auto &[stream, part] : parts) {
    auto it = std::find_if(ops.begin(), ops.end(),
                           [&](auto &o) { return o.first == stream; });
    if (it == ops.end())
      it = ops.emplace(ops.end(), stream, StreamOp());
    // NCCL runs a group's calls concurrently: what one writes, no other
    // may read or write.
    for (auto &other : it->second.parts)
      if (clash(*part, *other) || clash(*other, *part)) {
        violation(std::string("a group's ") + kindName(part->kind) + " and " +
                  kindName(other->kind) + " (rank " +
                  std::to_string(part->comm->rank) + ") overlap");
        return ncclInvalidArgument; // nothing of the group is launched
      }
    number(*part);
    it->second.parts.push_back(std::move(part));
  }
  for (auto &[stream, op] : ops)
    streams[stream]->queue.push_back(std::move(op));
  progressAll();
  return ncclSuccess;
}

ncclResult_t ncclAllReduce(const void *sendbuff, void *recvbuff, size_t count,
                           ncclDataType_t datatype, ncclRedOp_t op,
                           ncclComm_t comm, cudaStream_t stream) {
  return submit(Kind::AllReduce, sendbuff, recvbuff, count, datatype, op, 0,
                comm, stream);
}
ncclResult_t ncclBroadcast(const void *sendbuff, void *recvbuff, size_t count,
                           ncclDataType_t datatype, int root, ncclComm_t comm,
                           cudaStream_t stream) {
  return submit(Kind::Broadcast, sendbuff, recvbuff, count, datatype, ncclSum,
                root, comm, stream);
}
ncclResult_t ncclReduce(const void *sendbuff, void *recvbuff, size_t count,
                        ncclDataType_t datatype, ncclRedOp_t op, int root,
                        ncclComm_t comm, cudaStream_t stream) {
  return submit(Kind::Reduce, sendbuff, recvbuff, count, datatype, op, root,
                comm, stream);
}
ncclResult_t ncclAllGather(const void *sendbuff, void *recvbuff,
                           size_t sendcount, ncclDataType_t datatype,
                           ncclComm_t comm, cudaStream_t stream) {
  return submit(Kind::AllGather, sendbuff, recvbuff, sendcount, datatype,
                ncclSum, 0, comm, stream);
}
ncclResult_t ncclReduceScatter(const void *sendbuff, void *recvbuff,
                               size_t recvcount, ncclDataType_t datatype,
                               ncclRedOp_t op, ncclComm_t comm,
                               cudaStream_t stream) {
  return submit(Kind::ReduceScatter, sendbuff, recvbuff, recvcount, datatype,
                op, 0, comm, stream);
}
ncclResult_t ncclSend(const void *sendbuff, size_t count,
                      ncclDataType_t datatype, int peer, ncclComm_t comm,
                      cudaStream_t stream) {
  return submit(Kind::Send, sendbuff, nullptr, count, datatype, ncclSum, peer,
                comm, stream);
}
ncclResult_t ncclRecv(void *recvbuff, size_t count, ncclDataType_t datatype,
                      int peer, ncclComm_t comm, cudaStream_t stream) {
  return submit(Kind::Recv, nullptr, recvbuff, count, datatype, ncclSum, peer,
                comm, stream);
}
