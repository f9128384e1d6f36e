//===- NcclCommunicator.cpp - Collectives on CUDA devices over NCCL -------===//
//
// Built only when CMake finds CUDA and NCCL (runtime/comm/nccl/CMakeLists.txt),
// into the CUDA plugin (libtessel-cuda.so), which the runtime loads on first
// use (runtime/lib/CudaPlugin.h): tessel-run links neither libnccl nor
// libcudart. Host compiler only: cuda_runtime.h and nccl.h, no kernels. Tensors
// are device pointers. Pieces of a dim are (un)packed with cudaMemcpy2DAsync
// (outer rows of a contiguous run each), so no kernel is needed either.
//
// Bootstrap: member 0 of each communicator (the world, each subgroup)
// creates an ncclUniqueId and shares its 128 bytes through the store; every
// member then inits a non-blocking communicator (ncclCommInitRankConfig,
// blocking = 0) and polls it: a member that never joins fails the init
// after the timeout (ncclCommAbort) instead of blocking forever, as a
// blocking ncclCommInitRank would. A call that answers ncclInProgress is
// polled likewise before its stream is waited for. Uneven pieces
// (tensor_split) use grouped broadcasts/reduces instead of
// ncclAllGather/ncclReduceScatter. Each call waits for its stream, polling:
// past the timeout the communicator is aborted (ncclCommAbort) and the call
// fails.
//
//===----------------------------------------------------------------------===//
#include "NcclCommunicator.h"

#include "CommunicatorBase.h"
#include "Layout.h"
#include "tessel/runtime/Store.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include <cstring>
#include <thread>

namespace tessel::runtime {

namespace {

using namespace comm;

ncclDataType_t ncclType(DType t) {
  // By DType's value (F32 = 1, I64, I32, Bool).
  constexpr ncclDataType_t kTypes[] = {ncclFloat32, ncclInt64, ncclInt32,
                                       ncclUint8};
  unsigned i = static_cast<unsigned>(t) - 1;
  return i < 4 ? kTypes[i] : ncclUint8;
}

ncclRedOp_t ncclOp(ReduceKind k) {
  // By ReduceKind's value (Sum = 0, Max, Min, Mean, Prod).
  constexpr ncclRedOp_t kOps[] = {ncclSum, ncclMax, ncclMin, ncclAvg, ncclProd};
  unsigned i = static_cast<unsigned>(k);
  return i < 5 ? kOps[i] : ncclSum;
}

struct NcclWorld : World {
  using World::World;
  /// The CUDA device of this rank.
  int device = 0;
};

class NcclCommunicator : public CommunicatorBase {
public:
  using CommunicatorBase::CommunicatorBase;
  ~NcclCommunicator() override;

  Status init();

  const char *backend() const override { return "nccl"; }

  Status allReduce(const TensorView &in, const TensorView &out,
                   ReduceKind kind) override {
    TSL_RETURN_IF_ERROR(checkAllReduceShapes(in, out, kind));
    TSL_RETURN_IF_ERROR(
        check(ncclAllReduce(in.data, out.data, static_cast<size_t>(out.numel()),
                            ncclType(in.dtype), ncclOp(kind), comm, stream),
              "all_reduce"));
    return sync("all_reduce");
  }

  Status allGather(const TensorView &in, const TensorView &out,
                   int64_t dim) override {
    int n = size();
    TSL_RETURN_IF_ERROR(checkAllGatherShapes(in, out, dim, n, me));
    DimSplit g = splitAt(out.shape, dim, dtypeSize(in.dtype));
    Pieces p = pieces(g, n);
    char *dst = static_cast<char *>(out.data);
    if (g.outer > 1)
      TSL_RETURN_IF_ERROR(scratch(out.bytes(), dst));
    if (g.size % n == 0) {
      TSL_RETURN_IF_ERROR(check(
          ncclAllGather(in.data, dst, p.bytes(me), ncclUint8, comm, stream),
          "all_gather"));
    } else {
      ncclGroupStart();
      for (int r = 0; r < n; ++r)
        ncclBroadcast(in.data, dst + p.off[r], p.bytes(r), ncclUint8, r, comm,
                      stream);
      TSL_RETURN_IF_ERROR(check(ncclGroupEnd(), "all_gather"));
    }
    if (g.outer > 1)
      TSL_RETURN_IF_ERROR(copyPieces(dst, g, n, out.data, false));
    return sync("all_gather");
  }

  Status reduceScatter(const TensorView &in, const TensorView &out,
                       ReduceKind kind, int64_t dim) override {
    int n = size();
    TSL_RETURN_IF_ERROR(checkReduceScatterShapes(in, out, kind, dim, n, me));
    size_t es = dtypeSize(in.dtype);
    DimSplit g = splitAt(in.shape, dim, es);
    Pieces p = pieces(g, n);
    const char *src = static_cast<const char *>(in.data);
    if (g.outer > 1) {
      char *packed;
      TSL_RETURN_IF_ERROR(scratch(in.bytes(), packed));
      TSL_RETURN_IF_ERROR(copyPieces(packed, g, n, in.data, true));
      src = packed;
    }
    ncclDataType_t t = ncclType(in.dtype);
    if (g.size % n == 0) {
      TSL_RETURN_IF_ERROR(
          check(ncclReduceScatter(src, out.data, p.bytes(0) / es, t,
                                  ncclOp(kind), comm, stream),
                "reduce_scatter"));
    } else {
      ncclGroupStart();
      for (int r = 0; r < n; ++r)
        ncclReduce(src + p.off[r], r == me ? out.data : nullptr,
                   p.bytes(r) / es, t, ncclOp(kind), r, comm, stream);
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
    // Piece j of the split dim goes to member j; piece j received goes at
    // j * C along the concat dim (C = its size / n), all as large as ours.
    DimSplit gi = splitAt(in.shape, splitDim, es);
    DimSplit go = splitAt(out.shape, concatDim, es);
    Pieces sent = pieces(gi, n);
    size_t recvBytes = sent.bytes(me);
    char *sendBuf;
    TSL_RETURN_IF_ERROR(scratch(in.bytes() + out.bytes(), sendBuf));
    char *recvBuf = sendBuf + in.bytes();
    TSL_RETURN_IF_ERROR(copyPieces(sendBuf, gi, n, in.data, true));
    ncclGroupStart();
    for (int j = 0; j < n; ++j) {
      ncclSend(sendBuf + sent.off[j], sent.bytes(j), ncclUint8, j, comm,
               stream);
      ncclRecv(recvBuf + j * recvBytes, recvBytes, ncclUint8, j, comm, stream);
    }
    TSL_RETURN_IF_ERROR(check(ncclGroupEnd(), "all_to_all"));
    TSL_RETURN_IF_ERROR(copyPieces(recvBuf, go, n, out.data, false));
    return sync("all_to_all");
  }

  Status
  collectivePermute(const TensorView &in, const TensorView &out,
                    const std::vector<std::pair<int, int>> &pairs) override {
    int from, to;
    TSL_RETURN_IF_ERROR(checkPermute(in, out, pairs, size(), me, from, to));
    size_t bytes = out.bytes();
    if (from == me) {
      if (in.data != out.data)
        TSL_RETURN_IF_ERROR(cuda(cudaMemcpyAsync(
            out.data, in.data, bytes, cudaMemcpyDeviceToDevice, stream)));
      return sync("collective_permute");
    }
    bool staged = from >= 0 && to >= 0 && in.data == out.data;
    char *dst = static_cast<char *>(out.data);
    if (staged)
      TSL_RETURN_IF_ERROR(scratch(bytes, dst));
    ncclGroupStart();
    if (to >= 0)
      ncclSend(in.data, bytes, ncclUint8, to, comm, stream);
    if (from >= 0)
      ncclRecv(dst, bytes, ncclUint8, from, comm, stream);
    TSL_RETURN_IF_ERROR(check(ncclGroupEnd(), "collective_permute"));
    if (from < 0)
      TSL_RETURN_IF_ERROR(cuda(cudaMemsetAsync(out.data, 0, bytes, stream)));
    else if (staged)
      TSL_RETURN_IF_ERROR(cuda(cudaMemcpyAsync(
          out.data, dst, bytes, cudaMemcpyDeviceToDevice, stream)));
    return sync("collective_permute");
  }

  Status broadcast(const TensorView &in, const TensorView &out,
                   int root) override {
    TSL_RETURN_IF_ERROR(checkBroadcast(in, out, root, size()));
    TSL_RETURN_IF_ERROR(check(ncclBroadcast(in.data, out.data, out.bytes(),
                                            ncclUint8, root, comm, stream),
                              "broadcast"));
    return sync("broadcast");
  }

  /// NCCL matches point-to-point by order, not by tag: the tag is only
  /// checked to be valid.
  Status send(const TensorView &in, int peer, int64_t tag) override {
    TSL_RETURN_IF_ERROR(checkPeer(peer, tag, size(), me, "send to"));
    TSL_RETURN_IF_ERROR(check(
        ncclSend(in.data, in.bytes(), ncclUint8, peer, comm, stream), "send"));
    return sync("send");
  }
  Status recv(const TensorView &out, int peer, int64_t tag) override {
    TSL_RETURN_IF_ERROR(checkPeer(peer, tag, size(), me, "recv from"));
    TSL_RETURN_IF_ERROR(
        check(ncclRecv(out.data, out.bytes(), ncclUint8, peer, comm, stream),
              "recv"));
    return sync("recv");
  }
  Status barrier() override {
    char *one;
    TSL_RETURN_IF_ERROR(scratch(4, one));
    TSL_RETURN_IF_ERROR(
        check(ncclAllReduce(one, one, 1, ncclInt32, ncclSum, comm, stream),
              "barrier"));
    return sync("barrier");
  }

private:
  Status newSubgroup(const std::vector<int> &, const std::vector<int> &wr,
                     int index, Communicator *&out) override {
    return startSubgroup(wr, index, &NcclCommunicator::init, out);
  }
  /// Copies the n members' pieces of the tensor at `tensor` (laid out as
  /// `s`) to `flat`, contiguous in member order (`pack`), or back; one 2D
  /// copy each (a run per outer index).
  Status copyPieces(char *flat, const DimSplit &s, int n, void *tensor,
                    bool pack) {
    Pieces p = pieces(s, n);
    size_t row = static_cast<size_t>(s.size) * s.innerBytes;
    for (int r = 0; r < n; ++r) {
      size_t run = static_cast<size_t>(chunkSize(s.size, n, r)) * s.innerBytes;
      char *t = static_cast<char *>(tensor) +
                static_cast<size_t>(chunkOffset(s.size, n, r)) * s.innerBytes;
      char *f = flat + p.off[r];
      TSL_RETURN_IF_ERROR(cuda(cudaMemcpy2DAsync(
          pack ? f : t, pack ? run : row, pack ? t : f, pack ? row : run, run,
          static_cast<size_t>(s.outer), cudaMemcpyDeviceToDevice, stream)));
    }
    return Status::ok();
  }
  Status cuda(cudaError_t e) {
    if (e != cudaSuccess)
      return Status::error(std::string("CUDA: ") + cudaGetErrorString(e));
    return Status::ok();
  }
  /// A call's result; ncclInProgress (a non-blocking communicator still
  /// doing it) is polled until done (settle).
  Status check(ncclResult_t r, const char *op) {
    if (r == ncclInProgress)
      return settle(op);
    if (r != ncclSuccess)
      return Status::error(where(op) + ": " + ncclGetErrorString(r));
    return Status::ok();
  }
  /// Polls ncclCommGetAsyncError until the call in progress is done; its
  /// error, or past the timeout the communicator aborted (`why` then
  /// completes the message).
  Status settle(const char *op, const char *why = "");
  Status sync(const char *op);
  Status timedOut(const char *op, const char *why = "") {
    return Status::error(where(op) + " timed out after " +
                         std::to_string(world->timeout.count() / 1000.0) +
                         " s" + why);
  }
  void abort() {
    if (comm)
      ncclCommAbort(comm);
    comm = nullptr;
  }
  /// Device scratch of at least `bytes` (grown as needed) in `p`.
  Status scratch(size_t bytes, char *&p) {
    if (bytes > scratchBytes) {
      if (scratchPtr)
        cudaFree(scratchPtr);
      scratchPtr = nullptr;
      scratchBytes = 0;
      if (cudaError_t e = cudaMalloc(&scratchPtr, bytes); e != cudaSuccess) {
        scratchPtr = nullptr;
        return Status::error(where("scratch") + ": cudaMalloc of " +
                             std::to_string(bytes) +
                             " bytes failed: " + cudaGetErrorString(e));
      }
      scratchBytes = bytes;
    }
    p = static_cast<char *>(scratchPtr);
    return Status::ok();
  }

  NcclWorld &nccl() const { return static_cast<NcclWorld &>(*world); }

  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  void *scratchPtr = nullptr;
  size_t scratchBytes = 0;
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
  TSL_RETURN_IF_ERROR(cuda(cudaSetDevice(nccl().device)));
  TSL_RETURN_IF_ERROR(
      cuda(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking)));
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
                           std::to_string(v.size()) +
                           " bytes, not an ncclUniqueId");
    std::memcpy(&id, v.data(), sizeof(id));
  }
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  comm = nullptr;
  ncclResult_t r = ncclCommInitRankConfig(&comm, size(), id, me, &config);
  if (r == ncclInProgress)
    return settle("ncclCommInitRank", " (a member never joined)");
  if (r != ncclSuccess)
    abort();
  return check(r, "ncclCommInitRank");
}

Status NcclCommunicator::settle(const char *op, const char *why) {
  auto deadline = Clock::now() + world->timeout;
  for (;;) {
    ncclResult_t state = ncclInProgress;
    if (ncclResult_t q = ncclCommGetAsyncError(comm, &state); q != ncclSuccess)
      state = q;
    if (state == ncclSuccess)
      return Status::ok();
    if (state != ncclInProgress) {
      abort();
      return Status::error(where(op) + ": " + ncclGetErrorString(state));
    }
    if (Clock::now() >= deadline) {
      abort();
      return timedOut(op, why);
    }
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
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
      abort();
      return check(async, op);
    }
    if (Clock::now() >= deadline) {
      abort();
      return timedOut(op);
    }
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

} // namespace

Status nccl::createCommunicator(const CommOptions &options,
                                std::unique_ptr<Communicator> &out) {
  int devices = 0;
  cudaError_t e = cudaGetDeviceCount(&devices);
  if (e != cudaSuccess || devices == 0)
    return Status::error(
        std::string("nccl: no CUDA device (") +
        (e != cudaSuccess ? cudaGetErrorString(e) : "0 devices") + ")");
  TSL_RETURN_IF_ERROR(
      checkOptions(options, "nccl needs a store to share the ncclUniqueId"));
  auto world = std::make_unique<NcclWorld>(options);
  // Local ranks beyond the devices seen share them round-robin.
  world->device = options.device % devices;
  return startWorld(std::move(world), options.size, options.rank,
                    &NcclCommunicator::init, out);
}

} // namespace tessel::runtime

// The entry point runtime/lib/CudaPlugin.cpp's createNcclCommunicator looks
// up after loading the plugin.
extern "C" __attribute__((visibility("default"))) void
tessel_cuda_create_nccl_communicator(
    const tessel::runtime::CommOptions *options,
    std::unique_ptr<tessel::runtime::Communicator> *out,
    tessel::runtime::Status *status) {
  *status = tessel::runtime::nccl::createCommunicator(*options, *out);
}
