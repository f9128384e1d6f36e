//===- NcclCommunicator.cpp - Collectives on CUDA devices over NCCL -------===//
//
// Compiled only when CMake finds CUDA and NCCL (runtime/comm/CMakeLists.txt);
// host compiler only: cuda_runtime.h and nccl.h, no kernels. Tensors are
// device pointers. Pieces of a dim are (un)packed with cudaMemcpy2DAsync
// (outer rows of a contiguous run each), so no kernel is needed either.
//
// Bootstrap: member 0 of each communicator (the world, each subgroup)
// creates an ncclUniqueId and shares its 128 bytes through the store; every
// member then calls ncclCommInitRank. Uneven pieces (tensor_split) use
// grouped broadcasts/reduces instead of ncclAllGather/ncclReduceScatter.
// Each call waits for its stream, polling: past the timeout the
// communicator is aborted (ncclCommAbort) and the call fails.
//
//===----------------------------------------------------------------------===//
#include "tessel/runtime/Communicator.h"
#include "tessel/runtime/Store.h"

#ifdef TESSEL_RUNTIME_HAVE_NCCL
#include <cuda_runtime.h>
#include <nccl.h>
#endif

#include "Group.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <thread>

namespace tessel::runtime {

#ifndef TESSEL_RUNTIME_HAVE_NCCL

bool haveNcclCommunicator() { return false; }
Status createNcclCommunicator(const CommOptions &,
                              std::unique_ptr<Communicator> &) {
  return Status::error("this build has no NCCL (it needs a CUDA toolkit with "
                       "nccl.h and libnccl at configure time)");
}

#else

bool haveNcclCommunicator() { return true; }

namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

using comm::listToString;

ncclDataType_t ncclType(DType t) {
  switch (t) {
  case DType::F32:
    return ncclFloat32;
  case DType::I64:
    return ncclInt64;
  case DType::I32:
    return ncclInt32;
  case DType::Bool:
    return ncclUint8;
  }
  return ncclUint8;
}

ncclRedOp_t ncclOp(ReduceKind k) {
  switch (k) {
  case ReduceKind::Sum:
    return ncclSum;
  case ReduceKind::Max:
    return ncclMax;
  case ReduceKind::Min:
    return ncclMin;
  case ReduceKind::Mean:
    return ncclAvg;
  case ReduceKind::Prod:
    return ncclProd;
  }
  return ncclSum;
}

struct NcclWorld;

class NcclCommunicator : public Communicator {
public:
  NcclCommunicator(NcclWorld *w, std::vector<int> members, int me)
      : world(w), members(std::move(members)), me(me) {}
  ~NcclCommunicator() override;

  Status init();

  const char *backend() const override { return "nccl"; }
  int rank() const override { return me; }
  int size() const override { return static_cast<int>(members.size()); }
  const std::vector<int> &worldRanks() const override { return members; }
  Status subgroup(const std::vector<int> &ranks, Communicator *&out) override;

  Status allReduce(const TensorView &in, const TensorView &out,
                   ReduceKind kind) override {
    TSL_RETURN_IF_ERROR(checkAllReduceShapes(in, out, kind));
    TSL_RETURN_IF_ERROR(check(ncclAllReduce(in.data, out.data,
                                            static_cast<size_t>(out.numel()),
                                            ncclType(in.dtype), ncclOp(kind),
                                            comm, stream),
                              "all_reduce"));
    return sync("all_reduce");
  }

  Status allGather(const TensorView &in, const TensorView &out,
                   int64_t dim) override {
    int n = size();
    TSL_RETURN_IF_ERROR(checkAllGatherShapes(in, out, dim, n, me));
    size_t es = dtypeSize(in.dtype);
    Geometry g = geometry(out.shape, dim, es);
    int64_t total = out.shape[dim];
    std::vector<size_t> bytes(n), off(n + 1, 0);
    for (int r = 0; r < n; ++r) {
      bytes[r] = g.outer * chunkSize(total, n, r) * g.inner;
      off[r + 1] = off[r] + bytes[r];
    }
    char *dst = g.outer == 1 ? static_cast<char *>(out.data) : scratch(out.bytes());
    if (total % n == 0) {
      TSL_RETURN_IF_ERROR(check(ncclAllGather(in.data, dst, bytes[me], ncclUint8,
                                              comm, stream),
                                "all_gather"));
    } else {
      ncclGroupStart();
      for (int r = 0; r < n; ++r)
        ncclBroadcast(in.data, dst + off[r], bytes[r], ncclUint8, r, comm, stream);
      TSL_RETURN_IF_ERROR(check(ncclGroupEnd(), "all_gather"));
    }
    if (g.outer > 1)
      for (int r = 0; r < n; ++r) {
        size_t run = chunkSize(total, n, r) * g.inner;
        TSL_RETURN_IF_ERROR(cuda(cudaMemcpy2DAsync(
            static_cast<char *>(out.data) + chunkOffset(total, n, r) * g.inner,
            total * g.inner, dst + off[r], run, run, g.outer,
            cudaMemcpyDeviceToDevice, stream)));
      }
    return sync("all_gather");
  }

  Status reduceScatter(const TensorView &in, const TensorView &out,
                       ReduceKind kind, int64_t dim) override {
    int n = size();
    TSL_RETURN_IF_ERROR(checkReduceScatterShapes(in, out, kind, dim, n, me));
    size_t es = dtypeSize(in.dtype);
    Geometry g = geometry(in.shape, dim, es);
    int64_t total = in.shape[dim];
    std::vector<size_t> off(n + 1, 0);
    for (int r = 0; r < n; ++r)
      off[r + 1] = off[r] + g.outer * chunkSize(total, n, r) * g.inner;
    const char *src = static_cast<const char *>(in.data);
    if (g.outer > 1) {
      char *packed = scratch(in.bytes());
      for (int r = 0; r < n; ++r) {
        size_t run = chunkSize(total, n, r) * g.inner;
        TSL_RETURN_IF_ERROR(cuda(cudaMemcpy2DAsync(
            packed + off[r], run, src + chunkOffset(total, n, r) * g.inner,
            total * g.inner, run, g.outer, cudaMemcpyDeviceToDevice, stream)));
      }
      src = packed;
    }
    ncclDataType_t t = ncclType(in.dtype);
    if (total % n == 0) {
      TSL_RETURN_IF_ERROR(check(ncclReduceScatter(src, out.data,
                                                  (off[1] - off[0]) / es, t,
                                                  ncclOp(kind), comm, stream),
                                "reduce_scatter"));
    } else {
      ncclGroupStart();
      for (int r = 0; r < n; ++r)
        ncclReduce(src + off[r], r == me ? out.data : nullptr,
                   (off[r + 1] - off[r]) / es, t, ncclOp(kind), r, comm, stream);
      TSL_RETURN_IF_ERROR(check(ncclGroupEnd(), "reduce_scatter"));
    }
    return sync("reduce_scatter");
  }

  Status allToAll(const TensorView &in, const TensorView &out, int64_t splitDim,
                  int64_t concatDim) override {
    int n = size();
    TSL_RETURN_IF_ERROR(
        checkAllToAllShapes(in, out, splitDim, concatDim, n, me));
    size_t es = dtypeSize(in.dtype);
    Geometry gi = geometry(in.shape, splitDim, es);
    Geometry go = geometry(out.shape, concatDim, es);
    int64_t total = in.shape[splitDim];
    int64_t c = splitDim == concatDim ? total / n : in.shape[concatDim];
    size_t slice = gi.outer * gi.inner;
    std::vector<size_t> soff(n + 1, 0);
    for (int j = 0; j < n; ++j)
      soff[j + 1] = soff[j] + chunkSize(total, n, j) * slice;
    size_t recvBytes = chunkSize(total, n, me) * slice;
    char *sendBuf = scratch(in.bytes() + out.bytes());
    char *recvBuf = sendBuf + in.bytes();
    for (int j = 0; j < n; ++j) {
      size_t run = chunkSize(total, n, j) * gi.inner;
      TSL_RETURN_IF_ERROR(cuda(cudaMemcpy2DAsync(
          sendBuf + soff[j], run,
          static_cast<const char *>(in.data) + chunkOffset(total, n, j) * gi.inner,
          total * gi.inner, run, gi.outer, cudaMemcpyDeviceToDevice, stream)));
    }
    ncclGroupStart();
    for (int j = 0; j < n; ++j) {
      ncclSend(sendBuf + soff[j], soff[j + 1] - soff[j], ncclUint8, j, comm, stream);
      ncclRecv(recvBuf + j * recvBytes, recvBytes, ncclUint8, j, comm, stream);
    }
    TSL_RETURN_IF_ERROR(check(ncclGroupEnd(), "all_to_all"));
    int64_t outTotal = out.shape[concatDim];
    size_t run = c * go.inner;
    for (int j = 0; j < n; ++j)
      TSL_RETURN_IF_ERROR(cuda(cudaMemcpy2DAsync(
          static_cast<char *>(out.data) + j * c * go.inner, outTotal * go.inner,
          recvBuf + j * recvBytes, run, run, go.outer, cudaMemcpyDeviceToDevice,
          stream)));
    return sync("all_to_all");
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
    size_t bytes = out.bytes();
    if (from == me) {
      if (in.data != out.data)
        TSL_RETURN_IF_ERROR(cuda(cudaMemcpyAsync(out.data, in.data, bytes,
                                                 cudaMemcpyDeviceToDevice, stream)));
      return sync("collective_permute");
    }
    bool staged = from >= 0 && to >= 0 && in.data == out.data;
    char *dst = staged ? scratch(bytes) : static_cast<char *>(out.data);
    ncclGroupStart();
    if (to >= 0)
      ncclSend(in.data, bytes, ncclUint8, to, comm, stream);
    if (from >= 0)
      ncclRecv(dst, bytes, ncclUint8, from, comm, stream);
    TSL_RETURN_IF_ERROR(check(ncclGroupEnd(), "collective_permute"));
    if (from < 0)
      TSL_RETURN_IF_ERROR(cuda(cudaMemsetAsync(out.data, 0, bytes, stream)));
    else if (staged)
      TSL_RETURN_IF_ERROR(cuda(cudaMemcpyAsync(out.data, dst, bytes,
                                               cudaMemcpyDeviceToDevice, stream)));
    return sync("collective_permute");
  }

  Status broadcast(const TensorView &in, const TensorView &out,
                   int root) override {
    if (root < 0 || root >= size())
      return Status::error("root " + std::to_string(root) +
                           " is out of range for a group of " +
                           std::to_string(size()));
    TSL_RETURN_IF_ERROR(checkAllReduceShapes(in, out, ReduceKind::Max));
    TSL_RETURN_IF_ERROR(check(ncclBroadcast(in.data, out.data, out.bytes(),
                                            ncclUint8, root, comm, stream),
                              "broadcast"));
    return sync("broadcast");
  }

  /// NCCL matches point-to-point by order, not by tag: the tag is only
  /// checked to be valid.
  Status send(const TensorView &in, int peer, int64_t tag) override {
    if (peer < 0 || peer >= size() || peer == me || tag < 0)
      return Status::error("send to rank " + std::to_string(peer) +
                           ": not another rank");
    TSL_RETURN_IF_ERROR(check(ncclSend(in.data, in.bytes(), ncclUint8, peer,
                                       comm, stream),
                              "send"));
    return sync("send");
  }
  Status recv(const TensorView &out, int peer, int64_t tag) override {
    if (peer < 0 || peer >= size() || peer == me || tag < 0)
      return Status::error("recv from rank " + std::to_string(peer) +
                           ": not another rank");
    TSL_RETURN_IF_ERROR(check(ncclRecv(out.data, out.bytes(), ncclUint8, peer,
                                       comm, stream),
                              "recv"));
    return sync("recv");
  }
  Status barrier() override {
    char *one = scratch(4);
    TSL_RETURN_IF_ERROR(check(ncclAllReduce(one, one, 1, ncclInt32, ncclSum,
                                            comm, stream),
                              "barrier"));
    return sync("barrier");
  }
  void setTimeout(milliseconds t) override;

  std::unique_ptr<NcclWorld> ownedWorld;

private:
  struct Geometry {
    size_t outer = 1, inner = 1;
  };
  static Geometry geometry(const Shape &s, int64_t d, size_t es) {
    Geometry g;
    g.inner = es;
    for (int64_t i = 0; i < static_cast<int64_t>(s.size()); ++i) {
      if (i < d)
        g.outer *= s[i];
      else if (i > d)
        g.inner *= s[i];
    }
    return g;
  }
  Status cuda(cudaError_t e) {
    if (e != cudaSuccess)
      return Status::error(std::string("CUDA: ") + cudaGetErrorString(e));
    return Status::ok();
  }
  Status check(ncclResult_t r, const char *op) {
    if (r != ncclSuccess && r != ncclInProgress)
      return Status::error(std::string(op) + " over ranks " +
                           listToString(members) + ": " + ncclGetErrorString(r));
    return Status::ok();
  }
  Status sync(const char *op);
  char *scratch(size_t bytes) {
    if (bytes > scratchBytes) {
      if (scratchPtr)
        cudaFree(scratchPtr);
      scratchPtr = nullptr;
      scratchBytes = 0;
      if (cudaMalloc(&scratchPtr, bytes) == cudaSuccess)
        scratchBytes = bytes;
    }
    return static_cast<char *>(scratchPtr);
  }

  NcclWorld *world;
  std::vector<int> members;
  int me;
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  void *scratchPtr = nullptr;
  size_t scratchBytes = 0;
};

struct NcclWorld {
  std::shared_ptr<KVStore> store;
  std::string prefix;
  milliseconds timeout;
  int device = 0;
  int rank = 0;
  std::map<std::vector<int>, std::unique_ptr<NcclCommunicator>> groups;
};

NcclCommunicator::~NcclCommunicator() {
  if (comm)
    ncclCommDestroy(comm);
  if (stream)
    cudaStreamDestroy(stream);
  if (scratchPtr)
    cudaFree(scratchPtr);
}

Status NcclCommunicator::init() {
  TSL_RETURN_IF_ERROR(cuda(cudaSetDevice(world->device)));
  TSL_RETURN_IF_ERROR(cuda(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking)));
  std::string key = world->prefix + "nccl/id" + listToString(members);
  ncclUniqueId id;
  if (me == 0) {
    TSL_RETURN_IF_ERROR(check(ncclGetUniqueId(&id), "ncclGetUniqueId"));
    TSL_RETURN_IF_ERROR(world->store->set(
        key, std::string(reinterpret_cast<const char *>(&id), sizeof(id))));
  } else {
    std::string v;
    TSL_RETURN_IF_ERROR(world->store->get(key, v, world->timeout));
    if (v.size() != sizeof(id))
      return Status::error("store: " + key + " holds " +
                           std::to_string(v.size()) + " bytes, not an ncclUniqueId");
    std::memcpy(&id, v.data(), sizeof(id));
  }
  return check(ncclCommInitRank(&comm, size(), id, me), "ncclCommInitRank");
}

Status NcclCommunicator::subgroup(const std::vector<int> &ranks,
                                  Communicator *&out) {
  std::vector<int> wr;
  int index;
  TSL_RETURN_IF_ERROR(comm::resolveGroup(ranks, members, me, wr, index));
  if (wr == members) {
    out = this;
    return Status::ok();
  }
  auto it = world->groups.find(wr);
  if (it == world->groups.end()) {
    auto g = std::make_unique<NcclCommunicator>(world, wr, index);
    TSL_RETURN_IF_ERROR(g->init());
    it = world->groups.emplace(wr, std::move(g)).first;
  }
  out = it->second.get();
  return Status::ok();
}

Status NcclCommunicator::sync(const char *op) {
  auto deadline = Clock::now() + world->timeout;
  for (;;) {
    cudaError_t e = cudaStreamQuery(stream);
    if (e == cudaSuccess)
      return Status::ok();
    if (e != cudaErrorNotReady)
      return cuda(e);
    ncclResult_t async = ncclSuccess;
    ncclCommGetAsyncError(comm, &async);
    if (async != ncclSuccess && async != ncclInProgress) {
      ncclCommAbort(comm);
      comm = nullptr;
      return check(async, op);
    }
    if (Clock::now() >= deadline) {
      ncclCommAbort(comm);
      comm = nullptr;
      return Status::error("rank " + std::to_string(world->rank) + ": " + op +
                           " over ranks " + listToString(members) +
                           " timed out after " +
                           std::to_string(world->timeout.count() / 1000.0) + " s");
    }
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

void NcclCommunicator::setTimeout(milliseconds t) { world->timeout = t; }

} // namespace

Status createNcclCommunicator(const CommOptions &options,
                              std::unique_ptr<Communicator> &out) {
  int devices = 0;
  cudaError_t e = cudaGetDeviceCount(&devices);
  if (e != cudaSuccess || devices == 0)
    return Status::error(std::string("nccl: no CUDA device (") +
                         (e != cudaSuccess ? cudaGetErrorString(e) : "0 devices") +
                         ")");
  if (!options.store)
    return Status::error("nccl needs a store to share the ncclUniqueId");
  auto world = std::make_unique<NcclWorld>();
  world->store = options.store;
  world->prefix = options.prefix;
  world->timeout = options.timeout;
  // Local ranks beyond the devices seen share them round-robin.
  world->device = options.device % devices;
  world->rank = options.rank;
  std::vector<int> members(options.size);
  for (int i = 0; i < options.size; ++i)
    members[i] = i;
  auto c = std::make_unique<NcclCommunicator>(world.get(), members, options.rank);
  TSL_RETURN_IF_ERROR(c->init());
  c->ownedWorld = std::move(world);
  out = std::move(c);
  return Status::ok();
}

#endif // TESSEL_RUNTIME_HAVE_NCCL

} // namespace tessel::runtime
