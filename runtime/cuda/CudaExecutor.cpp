//===- CudaExecutor.cpp - The CUDA backend --------------------------------===//
//
// Mirrors cpu/CpuExecutor.cpp: at creation every instruction's kernel
// factory (CudaKernelRegistry.h) is looked up once and builds its step, a
// closure over resolved device pointers and precomputed index plans
// (Indexer) or GEMM call lists, so run() is a loop of kernel launches and
// cuBLAS calls on one stream, synchronised once at the end. The executor
// itself knows no op: it owns the device memory, the stream, the cuBLAS
// handle and the resources that factories reserve (DeviceResources.h).
//
// States kept in host memory (Buffer.host: Gemini's host chunks) live in one
// pinned, mapped host allocation: kernels (the optimizer's update) read and
// write them through the mapping, chunk_fetch copies them into the arena on
// a copy stream whose events the compute stream waits on before the copies'
// first readers (DataMovement.cpp), and reading or writing them from the
// host (checkpoints) is a memcpy once the streams are idle.
//
// Out-of-range indices (gather, gather_elements, gather_grad) cannot stop
// the stream: a check kernel records the first bad position in a
// per-instruction device slot, the gather writes zeros there (gather_grad
// skips it), and run() reports the first failing instruction after the
// final synchronisation, with the CPU backend's message.
//
//===----------------------------------------------------------------------===//
#include "CudaExecutor.h"

#include "CudaKernelRegistry.h"
#include "CudaStatus.h"
#include "DeviceResources.h"
#include "tessel/runtime/Communicator.h"
#include "tessel/runtime/Program.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <map>

namespace tessel::runtime::cuda {

namespace {

class CudaExecutor : public Executor {
public:
  CudaExecutor(std::shared_ptr<const Program> program, int device,
               Communicator *comm)
      : Executor(std::move(program)), device(device), comm(comm) {}
  ~CudaExecutor() override;

  const char *backend() const override { return "cuda"; }
  Status init();
  Status run() override;
  const void *address(int id) const {
    return id >= 0 && static_cast<size_t>(id) < ptrs.size() ? ptrs[id]
                                                             : nullptr;
  }

protected:
  Status writeBuffer(int id, const void *src) override;
  Status readBuffer(int id, void *dst) override;
  /// Buffer `id` written from host memory `src` (when set) or read into
  /// `dst`, synchronously: a state in pinned host memory once the stream is
  /// idle, any other through the stream.
  Status copyBuffer(int id, const void *src, void *dst);

private:
  /// "instruction i (kind 'name'): message".
  Status instructionError(size_t i, const std::string &message) const;

  int device = 0;
  // The world of a multi-rank run (an NCCL communicator on this device), or
  // nullptr / a single rank: collectives are then device copies.
  Communicator *comm = nullptr;
  cudaStream_t stream = nullptr;
  cublasHandle_t blas = nullptr;
  void *arena = nullptr;     // the program's arena
  // Weights and constants, uploaded once, and the state buffers (persistent
  // across runs: initial values uploaded, or zeros).
  void *constants = nullptr;
  // The states kept in host memory: one pinned allocation (cudaHostAlloc,
  // mapped), and each such state's host address (nullptr for the others).
  void *hostStates = nullptr;
  std::vector<char *> hostPtrs;
  // Scratch, extras (expanded norm parameters, gather slots), collectives.
  DeviceResources res;
  std::vector<void *> ptrs;
  std::vector<Step> steps;
};

CudaExecutor::~CudaExecutor() {
  cudaSetDevice(device);
  if (stream)
    cudaStreamSynchronize(stream);
  if (res.moves.stream)
    cudaStreamSynchronize(res.moves.stream);
  if (blas)
    cublasDestroy(blas);
  if (res.lt)
    cublasLtDestroy(res.lt);
  for (void *p : {arena, constants, res.scratch, res.extra})
    if (p)
      cudaFree(p);
  if (hostStates)
    cudaFreeHost(hostStates);
  for (void *p : res.pinned)
    cudaFreeHost(p);
  for (cudaEvent_t e : res.moves.events)
    cudaEventDestroy(e);
  if (res.moves.stream)
    cudaStreamDestroy(res.moves.stream);
  if (stream)
    cudaStreamDestroy(stream);
}

/// Whether buffer `b` is kept in pinned host memory.
static bool inHostMemory(const BufferInfo &b) {
  return b.kind == BufferInfo::Kind::State && b.host;
}

Status CudaExecutor::instructionError(size_t i,
                                      const std::string &message) const {
  const Op &op = prog->ops[i];
  return Status::error("instruction " + std::to_string(i) + " (" +
                       opKindName(op.kind) +
                       (op.name.empty() ? "" : " '" + op.name + "'") +
                       "): " + message);
}

Status CudaExecutor::init() {
  const Program &p = *prog;
  // Every instruction's kernel, before any device work: a kind this backend
  // lacks fails the load.
  const KernelRegistry &registry = cudaKernels();
  std::vector<KernelFactory> factories(p.ops.size(), nullptr);
  for (size_t i = 0; i < p.ops.size(); ++i) {
    Status st = registry.lookup(p.ops[i].kind, factories[i]);
    if (!st)
      return instructionError(i, st.message());
  }

  TSL_CUDA(cudaSetDevice(device), "cudaSetDevice");
  TSL_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking),
           "cudaStreamCreate");
  TSL_CUBLAS(cublasCreate(&blas), "cublasCreate");
  TSL_CUBLAS(cublasSetStream(blas, stream), "cublasSetStream");
  // Plain FP32 GEMMs (no TF32), so that results match the CPU backend.
  TSL_CUBLAS(cublasSetMathMode(blas, CUBLAS_DEFAULT_MATH), "cublasSetMathMode");

  // The arena, and one allocation for every weight, constant and state.
  TSL_CUDA(cudaMalloc(&arena, std::max<uint64_t>(p.arenaSize, 256)),
           "cudaMalloc of the arena (" + std::to_string(p.arenaSize) +
               " bytes)");
  size_t constBytes = 0, hostBytes = 0;
  std::vector<size_t> constOff(p.buffers.size(), 0);
  for (const BufferInfo &b : p.buffers)
    if (inHostMemory(b))
      constOff[b.id] = DeviceResources::reserve(b.bytes, hostBytes);
    else if (b.kind != BufferInfo::Kind::Arena)
      constOff[b.id] = DeviceResources::reserve(b.bytes, constBytes);
  TSL_CUDA(cudaMalloc(&constants, std::max<size_t>(constBytes, 256)),
           "cudaMalloc of the weights (" + std::to_string(constBytes) +
               " bytes)");
  void *hostMapped = nullptr;
  if (hostBytes) {
    TSL_CUDA(cudaHostAlloc(&hostStates, hostBytes,
                           cudaHostAllocMapped | cudaHostAllocPortable),
             "cudaHostAlloc of the host chunks (" + std::to_string(hostBytes) +
                 " bytes)");
    TSL_CUDA(cudaHostGetDevicePointer(&hostMapped, hostStates, 0),
             "cudaHostGetDevicePointer of the host chunks");
  }
  ptrs.resize(p.buffers.size());
  hostPtrs.assign(p.buffers.size(), nullptr);
  for (const BufferInfo &b : p.buffers) {
    if (b.kind == BufferInfo::Kind::Arena) {
      ptrs[b.id] = static_cast<char *>(arena) + b.offset;
      continue;
    }
    if (inHostMemory(b)) {
      // Kernels use the mapped address, the host the host one (the same
      // under unified addressing).
      ptrs[b.id] = static_cast<char *>(hostMapped) + constOff[b.id];
      hostPtrs[b.id] = static_cast<char *>(hostStates) + constOff[b.id];
      if (b.data)
        std::memcpy(hostPtrs[b.id], b.data, b.bytes);
      else
        std::memset(hostPtrs[b.id], 0, b.bytes);
      continue;
    }
    ptrs[b.id] = static_cast<char *>(constants) + constOff[b.id];
    if (b.kind == BufferInfo::Kind::State && !b.data) {
      if (b.bytes)
        TSL_CUDA(cudaMemsetAsync(ptrs[b.id], 0, b.bytes, stream),
                 "clearing state '" + b.name + "'");
      continue;
    }
    // On our stream: a plain cudaMemcpy runs on the legacy default stream,
    // which a non-blocking stream does not wait for, and may return before
    // a pageable upload has landed.
    if (b.bytes)
      TSL_CUDA(cudaMemcpyAsync(ptrs[b.id], b.data, b.bytes,
                               cudaMemcpyHostToDevice, stream),
               "uploading " +
                   (b.name.empty() ? "a constant" : "'" + b.name + "'"));
  }
  // Zeroed like the CPU backend's anonymous mapping.
  TSL_CUDA(cudaMemsetAsync(arena, 0, std::max<uint64_t>(p.arenaSize, 256),
                           stream),
           "clearing the arena");

  // Collectives: checks every group against the world (and creates the
  // subgroups of a multi-rank one), as the CPU backend does. Its steps are
  // only used with an NCCL world, whose tensors are device pointers.
  res.multiRank = comm && comm->size() > 1;
  if (res.multiRank && std::string(comm->backend()) != "nccl")
    return Status::error(
        std::string("a multi-rank run on the cuda backend needs an nccl "
                    "communicator; '") +
        comm->backend() + "' works on host memory");
  TSL_RETURN_IF_ERROR(res.collectives.init(p, comm, /*async=*/false));

  steps.reserve(p.ops.size());
  for (size_t i = 0; i < p.ops.size(); ++i) {
    const KernelContext ctx{{p, p.ops[i], i, ptrs}, stream, blas, res};
    Step s;
    Status st = factories[i](ctx, s);
    if (!st)
      return instructionError(i, st.message());
    steps.push_back(std::move(s));
  }
  // The compute stream waits for each chunk fetch's copies right before
  // their first reader (DataMovement.cpp).
  for (auto [j, event] : res.moves.waits) {
    if (j >= steps.size())
      continue;
    Step inner = std::move(steps[j]);
    cudaStream_t s = stream;
    cudaEvent_t e = event;
    steps[j] = [s, e, inner = std::move(inner)]() -> Status {
      TSL_CUDA(cudaStreamWaitEvent(s, e, 0), "waiting for a chunk's fetch");
      return inner();
    };
  }
  // The scratch and extras are allocated last, once every step has reserved
  // its part: closures hold their addresses' addresses (LateAddress).
  if (res.scratchBytes)
    TSL_CUDA(cudaMalloc(&res.scratch, res.scratchBytes),
             "cudaMalloc of the scratch");
  const size_t slotOff = DeviceResources::reserve(
      res.gathers.size() * 2 * sizeof(unsigned long long), res.extraBytes);
  if (res.extraBytes) {
    TSL_CUDA(cudaMalloc(&res.extra, res.extraBytes),
             "cudaMalloc of the extras");
    res.slots = static_cast<char *>(res.extra) + slotOff;
  }
  TSL_CUDA(cudaStreamSynchronize(stream), "initialising the executor");
  return Status::ok();
}

Status CudaExecutor::run() {
  TSL_CUDA(cudaSetDevice(device), "cudaSetDevice");
  const std::vector<DeviceResources::GatherCheck> &gathers = res.gathers;
  if (!gathers.empty())
    TSL_CUDA(cudaMemsetAsync(res.slots, 0xff,
                             gathers.size() * 2 * sizeof(unsigned long long),
                             stream),
             "resetting the gather checks");
  // TESSEL_PROFILE=1: time per op kind (synchronising after each op),
  // printed to stderr after each run; TESSEL_PROFILE=ops: and the 40
  // costliest groups of instructions (kind, name, operand shapes); =all:
  // every group.
  static const char *profileEnv = std::getenv("TESSEL_PROFILE");
  static const bool profile = profileEnv != nullptr;
  static const bool profileAll = profileEnv && std::string(profileEnv) == "all";
  static const bool profileOps =
      profileAll || (profileEnv && std::string(profileEnv) == "ops");
  std::vector<double> byKind(profile ? KernelRegistry::kMaxKinds : 0, 0.0);
  std::vector<double> byOp(profileOps ? steps.size() : 0, 0.0);
  for (size_t i = 0; i < steps.size(); ++i) {
    auto t0 = profile ? std::chrono::steady_clock::now()
                      : std::chrono::steady_clock::time_point();
    Status s = steps[i]();
    if (s && profile) {
      cudaError_t e = cudaStreamSynchronize(stream);
      if (e != cudaSuccess)
        s = cudaFail(e, "the instruction's kernels");
      const double ms = std::chrono::duration<double, std::milli>(
                            std::chrono::steady_clock::now() - t0)
                            .count();
      byKind[static_cast<size_t>(prog->ops[i].kind)] += ms;
      if (profileOps)
        byOp[i] = ms;
    }
    if (!s) {
      cudaStreamSynchronize(stream);
      if (res.moves.stream)
        cudaStreamSynchronize(res.moves.stream);
      return instructionError(i, s.message());
    }
  }
  TSL_CUDA(cudaStreamSynchronize(stream), "running the program");
  // Every copy came before a wait of the compute stream: done already.
  if (res.moves.stream)
    TSL_CUDA(cudaStreamSynchronize(res.moves.stream),
             "running the program (chunk copies)");
  if (!gathers.empty()) {
    std::vector<unsigned long long> host(gathers.size() * 2);
    TSL_CUDA(cudaMemcpyAsync(host.data(), res.slots,
                             host.size() * sizeof(unsigned long long),
                             cudaMemcpyDeviceToHost, stream),
             "reading the gather checks");
    TSL_CUDA(cudaStreamSynchronize(stream), "reading the gather checks");
    for (size_t g = 0; g < gathers.size(); ++g) {
      if (host[2 * g] == ~0ull)
        continue;
      const Op &op = *gathers[g].op;
      return Status::error(
          "instruction " + std::to_string(gathers[g].index) + " (" +
          opKindName(op.kind) + (op.name.empty() ? "" : " '" + op.name + "'") +
          "): " + opKindName(op.kind) + ": index " +
          std::to_string(static_cast<int64_t>(host[2 * g + 1])) +
          " at position " + std::to_string(host[2 * g]) +
          " is out of range for an axis of size " +
          std::to_string(gathers[g].dim));
    }
  }
  if (profile) {
    std::fprintf(stderr, "tessel profile (ms, cuda):");
    for (int k = 0; k < static_cast<int>(byKind.size()); ++k)
      if (byKind[k] > 0)
        if (auto kind = opKindFromInt(k))
          std::fprintf(stderr, " %s=%.3f", opKindName(*kind), byKind[k]);
    std::fprintf(stderr, "\n");
    // The instructions grouped by kind, name and operand shapes: the 40
    // costliest groups, with their counts (a layer's ops repeat).
    std::map<std::string, std::pair<double, int>> groups;
    for (size_t i = 0; i < byOp.size(); ++i) {
      const Op &op = prog->ops[i];
      std::string key = opKindName(op.kind);
      if (!op.name.empty())
        key += " " + op.name;
      for (int id : op.operands) {
        key += " [";
        const Shape &shape = prog->buffers[id].shape;
        for (size_t d = 0; d < shape.size(); ++d)
          key += (d ? "x" : "") + std::to_string(shape[d]);
        key += "]";
      }
      if (!op.perm.empty()) {
        key += " perm";
        for (int64_t d : op.perm)
          key += " " + std::to_string(d);
      }
      if (op.intAttr("bf16_operands", 0))
        key += " bf16";
      auto &g = groups[key];
      g.first += byOp[i];
      g.second += 1;
    }
    std::vector<const std::pair<const std::string, std::pair<double, int>> *>
        order;
    for (const auto &group : groups)
      order.push_back(&group);
    const size_t top =
        profileAll ? order.size() : std::min<size_t>(40, order.size());
    std::partial_sort(order.begin(), order.begin() + top, order.end(),
                      [](const auto *a, const auto *b) {
                        return a->second.first > b->second.first;
                      });
    for (size_t r = 0; r < top; ++r)
      std::fprintf(stderr, "tessel profile ops %8.3f ms %4d x %s\n",
                   order[r]->second.first, order[r]->second.second,
                   order[r]->first.c_str());
  }
  return Status::ok();
}

Status CudaExecutor::writeBuffer(int id, const void *src) {
  return copyBuffer(id, src, nullptr);
}

Status CudaExecutor::readBuffer(int id, void *dst) {
  return copyBuffer(id, nullptr, dst);
}

Status CudaExecutor::copyBuffer(int id, const void *src, void *dst) {
  const size_t bytes = prog->buffers[id].bytes;
  if (!bytes)
    return Status::ok();
  const bool in = src != nullptr;
  TSL_CUDA(cudaSetDevice(device), "cudaSetDevice");
  void *host = hostPtrs[id];
  if (host) {
    // Pinned host memory that kernels may still be using: idle first.
    TSL_CUDA(cudaStreamSynchronize(stream),
             in ? "writing a host state" : "reading a host state");
    std::memcpy(in ? host : dst, in ? src : host, bytes);
    return Status::ok();
  }
  const char *what = in ? "copying an input to the device"
                        : "copying an output from the device";
  TSL_CUDA(cudaMemcpyAsync(in ? ptrs[id] : dst, in ? src : ptrs[id], bytes,
                           in ? cudaMemcpyHostToDevice
                              : cudaMemcpyDeviceToHost,
                           stream),
           what);
  TSL_CUDA(cudaStreamSynchronize(stream), what);
  return Status::ok();
}

} // namespace

int deviceCount(std::string *why) {
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    cudaGetLastError(); // reset the error cudaGetDeviceCount left behind
    if (why)
      *why = std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e);
    return 0;
  }
  if (n == 0 && why)
    *why = "cudaGetDeviceCount found 0 devices";
  return n;
}

const void *bufferAddress(const Executor &exec, int id) {
  if (std::string(exec.backend()) != "cuda")
    return nullptr;
  return static_cast<const CudaExecutor &>(exec).address(id);
}

Status createCudaExecutor(std::shared_ptr<const Program> program,
                          const ExecutorOptions &options,
                          std::unique_ptr<Executor> &out) {
  // `threads` is a CPU notion. A multi-rank world must be an NCCL
  // communicator created on this device (CommOptions::device).
  // f64 is computed on the CPU only (docs/precision.md): refused before any
  // device work, naming the first buffer that holds it.
  for (const BufferInfo &b : program->buffers)
    if (b.dtype == DType::F64)
      return Status::error(
          "buffer " + std::to_string(b.id) +
          (b.name.empty() ? "" : " '" + b.name + "'") +
          " is f64, which the cuda backend does not compute; run f64 "
          "programs on the cpu backend (--device cpu)");
  std::string why;
  if (deviceCount(&why) == 0)
    return Status::error("no CUDA device (" + why + ")");
  int device = 0;
  TSL_CUDA(cudaGetDevice(&device), "cudaGetDevice");
  auto e = std::make_unique<CudaExecutor>(std::move(program), device,
                                          options.comm);
  TSL_RETURN_IF_ERROR(e->init());
  out = std::move(e);
  return Status::ok();
}

} // namespace tessel::runtime::cuda

// The entry point runtime/lib/Executor.cpp looks up after loading this
// library.
extern "C" __attribute__((visibility("default"))) void
tessel_cuda_create_executor(
    std::shared_ptr<const tessel::runtime::Program> *program,
    const tessel::runtime::ExecutorOptions *options,
    std::unique_ptr<tessel::runtime::Executor> *out,
    tessel::runtime::Status *status) {
  *status = tessel::runtime::cuda::createCudaExecutor(std::move(*program),
                                                      *options, *out);
}
