//===- Communicator.cpp - Groups and the local backend --------------------===//
#include "tessel/runtime/Communicator.h"
#include "CommunicatorBase.h"

#include <algorithm>
#include <cstring>

namespace tessel::runtime {

//===----------------------------------------------------------------------===//
// Communicator: groups
//===----------------------------------------------------------------------===//

Communicator::~Communicator() = default;
P2PRequest::~P2PRequest() = default;

namespace {
/// The blocking recv, run when the request is waited for.
class DeferredRecv : public P2PRequest {
public:
  DeferredRecv(Communicator *comm, TensorView out, int peer, int64_t tag)
      : comm(comm), out(std::move(out)), peer(peer), tag(tag) {}
  Status wait() override { return comm->recv(out, peer, tag); }

private:
  Communicator *comm;
  TensorView out;
  int peer;
  int64_t tag;
};
} // namespace

bool Communicator::trySend(const TensorView &, int, int64_t) { return false; }

Status Communicator::irecv(const TensorView &out, int peer, int64_t tag,
                           std::unique_ptr<P2PRequest> &req) {
  req = std::make_unique<DeferredRecv>(this, out, peer, tag);
  return Status::ok();
}

Status Communicator::createSubgroups(std::vector<std::vector<int>> groups) {
  std::sort(groups.begin(), groups.end());
  groups.erase(std::unique(groups.begin(), groups.end()), groups.end());
  for (const auto &g : groups) {
    if (std::find(g.begin(), g.end(), rank()) == g.end())
      continue;
    Communicator *sub = nullptr;
    TSL_RETURN_IF_ERROR(subgroup(g, sub));
  }
  return Status::ok();
}

#define TESSEL_WITH_GROUP(call)                                                \
  Communicator *sub = nullptr;                                                 \
  TSL_RETURN_IF_ERROR(subgroup(group, sub));                                   \
  return sub->call

Status Communicator::allReduce(const TensorView &in, const TensorView &out,
                               ReduceKind kind, const std::vector<int> &group) {
  TESSEL_WITH_GROUP(allReduce(in, out, kind));
}
Status Communicator::allGather(const TensorView &in, const TensorView &out,
                               int64_t dim, const std::vector<int> &group) {
  TESSEL_WITH_GROUP(allGather(in, out, dim));
}
Status Communicator::reduceScatter(const TensorView &in, const TensorView &out,
                                   ReduceKind kind, int64_t dim,
                                   const std::vector<int> &group) {
  TESSEL_WITH_GROUP(reduceScatter(in, out, kind, dim));
}
Status Communicator::allToAll(const TensorView &in, const TensorView &out,
                              int64_t splitDim, int64_t concatDim,
                              const std::vector<int> &group) {
  TESSEL_WITH_GROUP(allToAll(in, out, splitDim, concatDim));
}
Status Communicator::collectivePermute(
    const TensorView &in, const TensorView &out,
    const std::vector<std::pair<int, int>> &pairs,
    const std::vector<int> &group) {
  TESSEL_WITH_GROUP(collectivePermute(in, out, pairs));
}
Status Communicator::broadcast(const TensorView &in, const TensorView &out,
                               int root, const std::vector<int> &group) {
  TESSEL_WITH_GROUP(broadcast(in, out, root));
}
#undef TESSEL_WITH_GROUP

//===----------------------------------------------------------------------===//
// The local backend
//===----------------------------------------------------------------------===//

namespace {

class LocalCommunicator : public Communicator {
public:
  const char *backend() const override { return "local"; }
  int rank() const override { return 0; }
  int size() const override { return 1; }
  const std::vector<int> &worldRanks() const override { return world; }
  Status subgroup(const std::vector<int> &ranks, Communicator *&out) override {
    if (ranks != world)
      return Status::error("group " + comm::listToString(ranks) +
                           " is not a group of the single rank 0");
    out = this;
    return Status::ok();
  }
  Status allReduce(const TensorView &in, const TensorView &out,
                   ReduceKind kind) override {
    TSL_RETURN_IF_ERROR(checkAllReduceShapes(in, out, kind));
    return comm::copyHost(in, out);
  }
  Status allGather(const TensorView &in, const TensorView &out,
                   int64_t dim) override {
    TSL_RETURN_IF_ERROR(checkAllGatherShapes(in, out, dim, 1, 0));
    return comm::copyHost(in, out);
  }
  Status reduceScatter(const TensorView &in, const TensorView &out,
                       ReduceKind kind, int64_t dim) override {
    TSL_RETURN_IF_ERROR(checkReduceScatterShapes(in, out, kind, dim, 1, 0));
    return comm::copyHost(in, out);
  }
  Status allToAll(const TensorView &in, const TensorView &out, int64_t splitDim,
                  int64_t concatDim) override {
    TSL_RETURN_IF_ERROR(checkAllToAllShapes(in, out, splitDim, concatDim, 1, 0));
    return comm::copyHost(in, out);
  }
  Status collectivePermute(const TensorView &in, const TensorView &out,
                           const std::vector<std::pair<int, int>> &pairs) override {
    int from, to;
    TSL_RETURN_IF_ERROR(comm::checkPermute(in, out, pairs, 1, 0, from, to));
    if (from < 0) {
      std::memset(out.data, 0, out.bytes());
      return Status::ok();
    }
    return comm::copyHost(in, out);
  }
  Status broadcast(const TensorView &in, const TensorView &out,
                   int root) override {
    TSL_RETURN_IF_ERROR(comm::checkBroadcast(in, out, root, 1));
    return comm::copyHost(in, out);
  }
  Status send(const TensorView &, int peer, int64_t) override {
    return Status::error("send to rank " + std::to_string(peer) +
                         ": this run has a single rank");
  }
  Status recv(const TensorView &, int peer, int64_t) override {
    return Status::error("recv from rank " + std::to_string(peer) +
                         ": this run has a single rank");
  }
  Status barrier() override { return Status::ok(); }
  void setTimeout(std::chrono::milliseconds) override {}

private:
  std::vector<int> world{0};
};

} // namespace

std::unique_ptr<Communicator> createLocalCommunicator() {
  return std::make_unique<LocalCommunicator>();
}

} // namespace tessel::runtime
