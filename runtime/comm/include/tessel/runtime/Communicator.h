//===- Communicator.h - Collectives between ranks ---------------*- C++ -*-===//
//
// A Communicator is a set of ranks that run collectives together, shaped like
// ncclComm_t: rank(), size(), subgroups (ncclCommSplit), collectives and
// point-to-point. Backends live in runtime/comm/: "local" (one rank, in
// process), "gloo" (CPU, TCP), "shm" (CPU ranks of one host, through shared
// memory, around a Gloo communicator) and "nccl" (CUDA devices, when built).
//
// Tensors are dense and row-major. Where a collective splits or joins a
// dimension over the n members of a communicator, member i owns the i-th
// piece in the tensor_split convention: a dim of total size D gives member i
// D/n + (i < D%n ? 1 : 0) entries, starting at i*(D/n) + min(i, D%n). Every
// collective checks the shapes it is given against this contract and
// reports a mismatch instead of reading past a buffer.
//
// Groups: collectives act on all members of the communicator they are
// called on. A group is an ordered list of ranks of a parent communicator
// (position in the list = index within the group); subgroup() creates the
// sub-communicator once and caches it. Creating a subgroup is itself a
// collective over its members: createSubgroups() creates several in one
// canonical order, which cannot deadlock whatever order callers list them.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_RUNTIME_COMMUNICATOR_H
#define TESSEL_RUNTIME_COMMUNICATOR_H

#include "tessel/runtime/DType.h"
#include "tessel/runtime/CollectiveShapes.h"
#include "tessel/runtime/Status.h"

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tessel::runtime {

class KVStore;

/// A point-to-point transfer in flight (Communicator::irecv).
class P2PRequest {
public:
  virtual ~P2PRequest();
  /// Blocks until the transfer is done (failing after the communicator's
  /// timeout without progress, or when the peer dies); its status. Called
  /// at most once.
  virtual Status wait() = 0;
};

class Communicator {
public:
  virtual ~Communicator();

  /// "local", "gloo", "shm", "nccl".
  virtual const char *backend() const = 0;
  /// This member's index and the number of members.
  virtual int rank() const = 0;
  virtual int size() const = 0;
  /// Ranks of the world communicator of each member, by index.
  virtual const std::vector<int> &worldRanks() const = 0;

  /// The sub-communicator of `ranks` (indices into this communicator, no
  /// repeats, including this member); cached per distinct list. A list
  /// equal to 0..size()-1 gives this communicator.
  virtual Status subgroup(const std::vector<int> &ranks, Communicator *&out) = 0;

  // Collectives over every member. `in` and `out` may be the same buffer
  // where their shapes are equal (all_reduce, collective_permute,
  // broadcast).

  /// out = reduce over members of in (same dtype and shape).
  virtual Status allReduce(const TensorView &in, const TensorView &out,
                           ReduceKind kind) = 0;
  /// out = concatenation along `dim` of every member's in, by index.
  virtual Status allGather(const TensorView &in, const TensorView &out,
                           int64_t dim) = 0;
  /// out = this member's piece along `dim` of reduce over members of in.
  virtual Status reduceScatter(const TensorView &in, const TensorView &out,
                               ReduceKind kind, int64_t dim) = 0;
  /// Splits in along `splitDim` into size() pieces, sends piece j to member
  /// j, and concatenates the pieces received along `concatDim` by sender.
  virtual Status allToAll(const TensorView &in, const TensorView &out,
                          int64_t splitDim, int64_t concatDim) = 0;
  /// For each (src, dst) pair of member indices, dst's out = src's in. A
  /// member that is no pair's dst gets zeros. Each index is at most once a
  /// src and at most once a dst.
  virtual Status collectivePermute(const TensorView &in, const TensorView &out,
                                   const std::vector<std::pair<int, int>> &pairs) = 0;
  /// out = in of member `root` (`in` is only read on the root).
  virtual Status broadcast(const TensorView &in, const TensorView &out,
                           int root) = 0;
  /// Point-to-point with member `peer`; a send matches the recv of the same
  /// tag from this member. A send returns once `in` may be reused.
  virtual Status send(const TensorView &in, int peer, int64_t tag) = 0;
  /// send(), if the transport takes the whole message now without waiting
  /// for the peer (shm: its ring to `peer` has room); false: nothing was
  /// sent, and send() is the way (also for any error it would report).
  /// Not while another thread sends on this communicator. The default
  /// sends nothing.
  virtual bool trySend(const TensorView &in, int peer, int64_t tag);
  virtual Status recv(const TensorView &out, int peer, int64_t tag) = 0;
  /// Starts the recv of `tag` from `peer` into `out` and returns at once;
  /// `out` must stay valid, and nobody may touch it, until `req->wait()`
  /// has returned. The bytes are those recv() would give. The default
  /// runs recv() inside wait(); gloo (and shm through it) posts the
  /// receive now. May be called while another thread runs this
  /// communicator's collectives.
  virtual Status irecv(const TensorView &out, int peer, int64_t tag,
                       std::unique_ptr<P2PRequest> &req);
  virtual Status barrier() = 0;

  /// Every collective fails after this long without progress (default 30 s).
  virtual void setTimeout(std::chrono::milliseconds timeout) = 0;

  /// Creates the subgroups of `groups` (lists of indices) that include this
  /// member, in a canonical order (sorted lists), and checks each.
  Status createSubgroups(std::vector<std::vector<int>> groups);

  /// The collectives over an explicit group of this communicator's ranks.
  Status allReduce(const TensorView &in, const TensorView &out, ReduceKind kind,
                   const std::vector<int> &group);
  Status allGather(const TensorView &in, const TensorView &out, int64_t dim,
                   const std::vector<int> &group);
  Status reduceScatter(const TensorView &in, const TensorView &out,
                       ReduceKind kind, int64_t dim,
                       const std::vector<int> &group);
  Status allToAll(const TensorView &in, const TensorView &out, int64_t splitDim,
                  int64_t concatDim, const std::vector<int> &group);
  Status collectivePermute(const TensorView &in, const TensorView &out,
                           const std::vector<std::pair<int, int>> &pairs,
                           const std::vector<int> &group);
  Status broadcast(const TensorView &in, const TensorView &out, int root,
                   const std::vector<int> &group);
};

/// A communicator of one rank: every collective is a copy (a one-member
/// collective_permute without a (0, 0) pair gives zeros).
std::unique_ptr<Communicator> createLocalCommunicator();

/// Options of the multi-process backends.
struct CommOptions {
  int rank = 0;
  int size = 1;
  /// Rendezvous: every rank's store, all connected to the same server.
  std::shared_ptr<KVStore> store;
  /// Keys written by this communicator start with this; distinct worlds
  /// sharing one store need distinct prefixes.
  std::string prefix = "tessel/";
  /// Address to listen on for the other ranks' connections (gloo): empty
  /// lets the backend pick the machine's hostname; "127.0.0.1" for
  /// loopback. `iface` names a network interface instead.
  std::string hostname;
  std::string iface;
  std::chrono::milliseconds timeout = std::chrono::seconds(30);
  /// nccl: the CUDA device of this rank.
  int device = 0;
  /// shm: bytes each member stages per step (0: 1 MiB); larger tensors go
  /// through in chunks.
  size_t shmSlotBytes = 0;
  /// shm: this rank's core runs other ranks too. Waits then yield and
  /// sleep without spinning first: a spin holds the core the awaited rank
  /// may need (4 ranks on 2 cores: a Llama's tp=4 step 2.7 ms spinning,
  /// 1.15 not).
  bool sharedCore = false;
};

/// True when this build has the backend.
bool haveGlooCommunicator();
bool haveNcclCommunicator();

/// Connects to every other rank (blocks until they all arrive or the timeout
/// passes).
Status createGlooCommunicator(const CommOptions &options,
                              std::unique_ptr<Communicator> &out);
/// Rank 0 creates the ncclUniqueId and shares it through the store. Tensors
/// are device pointers on `options.device`; collectives are synchronous on
/// an internal stream.
Status createNcclCommunicator(const CommOptions &options,
                              std::unique_ptr<Communicator> &out);

/// The hang finder (runtime/comm/OpLog.cpp).
struct OpLogOptions {
  /// Operations kept (a ring buffer).
  size_t capacity = 256;
  /// Compare every operation with its peers' before it runs (an extra
  /// exchange per operation: a debug mode).
  bool check = false;
  /// A group's name for messages ("dp"), from its world ranks; "" for none.
  std::function<std::string(const std::vector<int> &)> groupName;
};

/// Wraps the world communicator `inner` (and each subgroup it hands out) so
/// that every collective and point-to-point operation is recorded, in order,
/// with its group, dtype, shape and tag; on the first failure the rank
/// publishes its log in `options.store` and cross-checks it with those the
/// other ranks publish. With `log.check`, an operation that differs from a
/// peer's fails at once, naming both.
Status createOpLogCommunicator(const CommOptions &options,
                               const OpLogOptions &log,
                               std::unique_ptr<Communicator> inner,
                               std::unique_ptr<Communicator> &out);
/// After an operation of `c` (an op-log communicator or one of its
/// subgroups) failed: this rank's last operations and the cross-check, one
/// line each; empty for another communicator, or before a failure.
std::vector<std::string> opLogReport(Communicator *c);

/// Whether the ranks of `options` may use shm, a collective through the
/// store: each rank says whether it `want`s it and where it runs (hostname,
/// boot id, PID and mount namespaces); every rank gets `usable` = all want
/// it and run in one place.
Status shmUsable(const CommOptions &options, bool want, bool &usable);
/// Where each rank of `options` runs, through the store (a collective):
/// `hostOf[r]` is the lowest world rank on rank r's host (same hostname,
/// boot, PID, mount and network namespaces) among those that `want` shm; a
/// rank that does not want it is a host of its own.
Status shmHosts(const CommOptions &options, bool want, std::vector<int> &hostOf);
/// Ranks on several hosts, `hostOf` as shmHosts gives it: the world's
/// collectives, and those of groups that span hosts, go to `fallback`
/// (Gloo's communicator of the world); a subgroup whose members share a
/// host gets a segment of its own (as createShmCommunicator's subgroups).
/// On an error `out` holds `fallback` again.
Status createHostLocalShmCommunicator(const CommOptions &options,
                                      const std::vector<int> &hostOf,
                                      std::unique_ptr<Communicator> fallback,
                                      std::unique_ptr<Communicator> &out);
/// Collectives between ranks of one host in a POSIX shared-memory segment
/// (unlinked once every rank has mapped it): all_reduce, all_gather,
/// reduce_scatter, broadcast and barrier on host memory, each element
/// reduced by one member in member order, so bitwise identical on every
/// rank. all_to_all, collective_permute and send/recv go to `fallback` (a
/// communicator of the same ranks, e.g. Gloo's; may be null). On an error
/// `out` holds `fallback` again: when the segment cannot be set up, every
/// rank gets the error and may go on with it.
Status createShmCommunicator(const CommOptions &options,
                             std::unique_ptr<Communicator> fallback,
                             std::unique_ptr<Communicator> &out);

} // namespace tessel::runtime

#endif // TESSEL_RUNTIME_COMMUNICATOR_H
