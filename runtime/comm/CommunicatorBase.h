//===- CommunicatorBase.h - What the multi-rank backends share --*- C++ -*-===//
//
// What the gloo, shm and nccl communicators share, so that each keeps only
// its transport:
//  - World: the state of one rank's world communicator and its subgroups
//    (store, key prefix, timeout, subgroups by world ranks), owned by the
//    world communicator; a backend derives it for its own fields.
//  - CommunicatorBase: the member list (world ranks) and this member's index
//    in it, rank()/size()/worldRanks(), and subgroup(): check the list,
//    return this communicator or the cached one, else have the backend make
//    it (newSubgroup) and cache it.
//  - The checks the create functions and the collectives begin with, and
//    the host copy of one-member and empty collectives.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_RUNTIME_COMM_COMMUNICATORBASE_H
#define TESSEL_RUNTIME_COMM_COMMUNICATORBASE_H

#include "Layout.h"
#include "tessel/runtime/Communicator.h"

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace tessel::runtime::comm {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

/// "[0, 2, 3]".
std::string listToString(const std::vector<int> &v);

/// Checks `ranks` (indices into `members`, in group order) and fills
/// `worldRanks` with the members' world ranks and `index` with this rank's
/// (`me`, an index into `members`) position in the group. Fails, naming the
/// group, on an index out of range, an index listed twice, or a group
/// without this rank.
Status resolveGroup(const std::vector<int> &ranks,
                    const std::vector<int> &members, int me,
                    std::vector<int> &worldRanks, int &index);

/// Checks the rank and size of `o`, and that it has a store (`noStore` is
/// the message when it has none).
Status checkOptions(const CommOptions &o, const char *noStore);
/// 0, 1, ..., n-1: the members of a world of `n`.
std::vector<int> allRanks(int n);

/// The checks a broadcast over `n` members begins with.
Status checkBroadcast(const TensorView &in, const TensorView &out, int root,
                      int n);
/// The checks a collective_permute over `n` members begins with; `from` and
/// `to` get the member that sends to member `me` and the one it sends to
/// (-1: none).
Status checkPermute(const TensorView &in, const TensorView &out,
                    const std::vector<std::pair<int, int>> &pairs, int n,
                    int me, int &from, int &to);
/// The checks of a send to (`what` = "send to") or recv from ("recv from")
/// member `peer` of `n` with `tag`.
Status checkPeer(int peer, int64_t tag, int n, int me, const char *what);

/// Where this process runs, to tell hosts apart: hostname, boot id, and the
/// PID, mount and network namespaces, one per line.
std::string hostIdentity();

/// out = in, in host memory (nothing when they are the same buffer).
Status copyHost(const TensorView &in, const TensorView &out);

/// Shared by a world communicator and its subgroups; the world communicator
/// owns it (and with it every subgroup).
struct World {
  explicit World(const CommOptions &o)
      : store(o.store), prefix(o.prefix), timeout(o.timeout) {}
  virtual ~World() = default;

  std::shared_ptr<KVStore> store;
  /// Every key this world writes starts with it.
  std::string prefix;
  milliseconds timeout;
  /// Subgroups by their world ranks: those in `owned`, or communicators
  /// owned elsewhere (shm's fallback's).
  std::map<std::vector<int>, Communicator *> groups;
  std::vector<std::unique_ptr<Communicator>> owned;
};

class CommunicatorBase : public Communicator {
public:
  /// `members`: world ranks, by index; this member is `members[me]`.
  CommunicatorBase(World *world, std::vector<int> members, int me)
      : world(world), members(std::move(members)), me(me) {}
  /// The subgroups go before the rest of an owned world.
  ~CommunicatorBase() override;

  int rank() const override { return me; }
  int size() const override { return static_cast<int>(members.size()); }
  const std::vector<int> &worldRanks() const override { return members; }
  Status subgroup(const std::vector<int> &ranks, Communicator *&out) final;
  void setTimeout(milliseconds timeout) override { world->timeout = timeout; }

  /// Set on the world communicator.
  std::unique_ptr<World> ownedWorld;

protected:
  /// Makes the sub-communicator of world ranks `worldRanks` (`ranks` as
  /// subgroup() got them), where this member is at `index`; a communicator
  /// it creates goes to adopt(). subgroup() caches `out` on success.
  virtual Status newSubgroup(const std::vector<int> &ranks,
                             const std::vector<int> &worldRanks, int index,
                             Communicator *&out) = 0;
  /// Keeps `c` as long as the world.
  Communicator *adopt(std::unique_ptr<Communicator> c);
  /// newSubgroup of a backend whose communicators C are made over the world
  /// and started by ((*c).*start)() (connecting, or creating the NCCL
  /// communicator): the started one, adopted.
  template <class C>
  Status startSubgroup(const std::vector<int> &worldRanks, int index,
                       Status (C::*start)(), Communicator *&out) {
    auto g = std::make_unique<C>(world, worldRanks, index);
    TSL_RETURN_IF_ERROR(((*g).*start)());
    out = adopt(std::move(g));
    return Status::ok();
  }

  /// This member's world rank.
  int worldRank() const { return members[me]; }
  /// "rank R: OP over ranks [..]": where every failure message starts.
  std::string where(const std::string &op) const;
  /// A one-member or empty collective: its result is a copy.
  bool trivial(const TensorView &t) const {
    return members.size() == 1 || t.bytes() == 0;
  }

  World *world;
  std::vector<int> members;
  int me;
};

/// The world communicator of a backend whose communicators C are started
/// by ((*c).*start)(): rank `rank` of all `size` ranks of `world`, started,
/// owning `world`.
template <class C, class W>
Status startWorld(std::unique_ptr<W> world, int size, int rank,
                  Status (C::*start)(), std::unique_ptr<Communicator> &out) {
  auto c = std::make_unique<C>(world.get(), allRanks(size), rank);
  TSL_RETURN_IF_ERROR(((*c).*start)());
  c->ownedWorld = std::move(world);
  out = std::move(c);
  return Status::ok();
}

/// The host-memory backends (gloo, shm): all_reduce, all_gather,
/// reduce_scatter and broadcast are checked here, and done here when they
/// are a copy (one member, or nothing to move); `Backend` runs the rest
/// (runAllReduce, runAllGather, runReduceScatter, runBroadcast, with the
/// arguments of the collective), and the division of a mean follows here.
template <typename Backend> class HostCommunicator : public CommunicatorBase {
public:
  using CommunicatorBase::CommunicatorBase;

  Status allReduce(const TensorView &in, const TensorView &out,
                   ReduceKind kind) final {
    TSL_RETURN_IF_ERROR(checkAllReduceShapes(in, out, kind));
    if (trivial(out))
      return copyHost(in, out);
    TSL_RETURN_IF_ERROR(self().runAllReduce(in, out, kind));
    return finishReduce(kind, out);
  }
  Status allGather(const TensorView &in, const TensorView &out,
                   int64_t dim) final {
    TSL_RETURN_IF_ERROR(checkAllGatherShapes(in, out, dim, size(), me));
    if (trivial(out))
      return copyHost(in, out);
    return self().runAllGather(in, out, dim);
  }
  Status reduceScatter(const TensorView &in, const TensorView &out,
                       ReduceKind kind, int64_t dim) final {
    TSL_RETURN_IF_ERROR(
        checkReduceScatterShapes(in, out, kind, dim, size(), me));
    if (trivial(in))
      return copyHost(in, out);
    TSL_RETURN_IF_ERROR(self().runReduceScatter(in, out, kind, dim));
    return finishReduce(kind, out);
  }
  Status broadcast(const TensorView &in, const TensorView &out,
                   int root) final {
    TSL_RETURN_IF_ERROR(checkBroadcast(in, out, root, size()));
    if (trivial(out))
      return copyHost(in, out);
    return self().runBroadcast(in, out, root);
  }

private:
  Backend &self() { return static_cast<Backend &>(*this); }
  /// A mean is the sum divided by the members.
  Status finishReduce(ReduceKind kind, const TensorView &out) {
    if (kind == ReduceKind::Mean)
      finishMean(out.dtype, out.data, out.numel(), size());
    return Status::ok();
  }
};

} // namespace tessel::runtime::comm

#endif // TESSEL_RUNTIME_COMM_COMMUNICATORBASE_H
