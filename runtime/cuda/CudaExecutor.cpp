//===- CudaExecutor.cpp - The CUDA backend --------------------------------===//
//
// Mirrors cpu/CpuExecutor.cpp: at creation every instruction becomes a
// closure over resolved device pointers and precomputed index plans
// (Indexer) or GEMM call lists, so run() is a loop of kernel launches and
// cuBLAS calls on one stream, synchronised once at the end.
//
// Row-major GEMMs through column-major cuBLAS: a row-major [r, c] matrix is
// the column-major [c, r] matrix with leading dimension c, so
// C = op(A)·op(B) (row-major) is computed as C^T = op(B)^T·op(A)^T, i.e.
// cublasSgemm(opB, opA, n, m, k, B, ldb, A, lda, C, n) with the row-major
// leading dimensions.
//
// Gather's out-of-range indices cannot stop the stream: a check kernel
// records the first bad position in a per-instruction device slot, the
// gather writes zeros there, and run() reports the first failing gather
// after the final synchronisation, with the CPU backend's message.
//
// Collectives: on one rank they are device copies with the local
// communicator's semantics; with a multi-rank world (an NCCL communicator,
// whose tensors are device pointers) the CPU backend's Collectives drives it
// after the stream is synchronised.
//
//===----------------------------------------------------------------------===//
#include "CudaExecutor.h"

#include "Broadcast.h"
#include "Collectives.h"
#include "CudaKernels.h"
#include "GemmPlan.h"
#include "tessel/runtime/Communicator.h"
#include "tessel/runtime/Program.h"

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <functional>
#include <limits>

namespace tessel::runtime::cuda {

namespace {

Status cudaFail(cudaError_t e, const std::string &what) {
  return Status::error("CUDA error in " + what + ": " + cudaGetErrorName(e) +
                       " (" + cudaGetErrorString(e) + ")");
}

Status cublasFail(cublasStatus_t e, const std::string &what) {
  return Status::error("cuBLAS error in " + what + ": " +
                       cublasGetStatusString(e));
}

#define TSL_CUDA(expr, what)                                                   \
  do {                                                                         \
    cudaError_t tslErr_ = (expr);                                              \
    if (tslErr_ != cudaSuccess)                                                \
      return cudaFail(tslErr_, what);                                          \
  } while (false)

#define TSL_CUBLAS(expr, what)                                                 \
  do {                                                                         \
    cublasStatus_t tslErr_ = (expr);                                           \
    if (tslErr_ != CUBLAS_STATUS_SUCCESS)                                      \
      return cublasFail(tslErr_, what);                                        \
  } while (false)

/// Launch statuses of kernels: a failed launch names the instruction's kind
/// (run() adds its index and name).
Status launched(cudaError_t e, const char *kernel) {
  if (e == cudaSuccess)
    return Status::ok();
  return cudaFail(e, std::string(kernel) + " kernel");
}

std::vector<int64_t> rowMajorStrides(const Shape &s) {
  std::vector<int64_t> st(s.size(), 1);
  for (size_t d = s.size(); d-- > 1;)
    st[d - 1] = st[d] * s[d];
  return st;
}

/// Converts a CPU StridedPlan into the kernels' Indexer.
Status toIndexer(const cpu::StridedPlan &plan, Indexer &ix) {
  if (plan.dims.size() > static_cast<size_t>(kMaxDims))
    return Status::error("indexes " + std::to_string(plan.dims.size()) +
                         " non-mergeable dims; the cuda backend handles at "
                         "most " +
                         std::to_string(kMaxDims));
  if (plan.numOperands > kMaxOperands)
    return Status::error("too many operands for one kernel");
  ix = Indexer();
  ix.rank = static_cast<int>(plan.dims.size());
  ix.numOperands = plan.numOperands;
  ix.total = plan.total;
  for (size_t d = 0; d < plan.dims.size(); ++d) {
    ix.dims[d] = plan.dims[d];
    for (int k = 0; k < plan.numOperands; ++k)
      ix.strides[d][k] = plan.strides[d][k];
  }
  return Status::ok();
}

Status stridedIndexer(const Shape &dims,
                      const std::vector<std::vector<int64_t>> &strides,
                      Indexer &ix) {
  return toIndexer(cpu::makeStridedPlan(dims, strides), ix);
}

bool fitsInt(int64_t v) { return v >= 0 && v <= INT_MAX; }

class CudaExecutor : public Executor {
public:
  CudaExecutor(std::shared_ptr<const Program> program, int device,
               Communicator *comm)
      : Executor(std::move(program)), device(device), comm(comm) {}
  ~CudaExecutor() override;

  const char *backend() const override { return "cuda"; }
  Status init();
  Status run() override;

protected:
  Status writeBuffer(int id, const void *src) override;
  Status readBuffer(int id, void *dst) override;

private:
  using Step = std::function<Status()>;
  Status makeStep(const Op &op, Step &out);
  Status makeMatMul(const Op &op, Step &out);
  Status makeGemm(const Op &op, Step &out);
  Status makeConv2D(const Op &op, Step &out);
  Status makeNorm(const Op &op, Step &out);
  Status makeCollective(const Op &op, Step &out);
  Status gemmRowMajor(bool transA, bool transB, int m, int n, int k,
                      float alpha, const float *a, int lda, const float *b,
                      int ldb, float beta, float *c, int ldc);
  /// Reserves `bytes` (256-byte aligned) at the end of a region of `total`
  /// bytes; returns their offset.
  size_t reserve(size_t bytes, size_t &total) {
    size_t off = total;
    total += (bytes + 255) / 256 * 256;
    return off;
  }

  int device = 0;
  // The world of a multi-rank run (an NCCL communicator on this device), or
  // nullptr / a single rank: collectives are then device copies.
  Communicator *comm = nullptr;
  bool multiRank = false;
  cpu::Collectives collectives; // groups checked and created; NCCL steps
  cudaStream_t stream = nullptr;
  cublasHandle_t blas = nullptr;
  void *arena = nullptr;     // the program's arena
  void *constants = nullptr; // weights and constants, uploaded once
  void *scratch = nullptr;   // im2col columns (shared: one stream)
  void *extra = nullptr;     // expanded norm parameters, gather slots
  size_t scratchBytes = 0, extraBytes = 0;
  unsigned long long *slots = nullptr; // 2 per gather: position, value
  std::vector<std::pair<size_t, const Op *>> gathers; // instruction, op
  std::vector<void *> ptrs;
  std::vector<Step> steps;
  size_t initStep = 0; // index of the instruction being prepared
};

CudaExecutor::~CudaExecutor() {
  cudaSetDevice(device);
  if (stream)
    cudaStreamSynchronize(stream);
  if (blas)
    cublasDestroy(blas);
  for (void *p : {arena, constants, scratch, extra})
    if (p)
      cudaFree(p);
  if (stream)
    cudaStreamDestroy(stream);
}

Status CudaExecutor::init() {
  const Program &p = *prog;
  TSL_CUDA(cudaSetDevice(device), "cudaSetDevice");
  TSL_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking),
           "cudaStreamCreate");
  TSL_CUBLAS(cublasCreate(&blas), "cublasCreate");
  TSL_CUBLAS(cublasSetStream(blas, stream), "cublasSetStream");
  // Plain FP32 GEMMs (no TF32), so that results match the CPU backend.
  TSL_CUBLAS(cublasSetMathMode(blas, CUBLAS_DEFAULT_MATH), "cublasSetMathMode");

  // The arena, and one allocation for every weight and constant.
  TSL_CUDA(cudaMalloc(&arena, std::max<uint64_t>(p.arenaSize, 256)),
           "cudaMalloc of the arena (" + std::to_string(p.arenaSize) +
               " bytes)");
  size_t constBytes = 0;
  std::vector<size_t> constOff(p.buffers.size(), 0);
  for (const BufferInfo &b : p.buffers)
    if (b.kind != BufferInfo::Kind::Arena)
      constOff[b.id] = reserve(b.bytes, constBytes);
  TSL_CUDA(cudaMalloc(&constants, std::max<size_t>(constBytes, 256)),
           "cudaMalloc of the weights (" + std::to_string(constBytes) +
               " bytes)");
  ptrs.resize(p.buffers.size());
  for (const BufferInfo &b : p.buffers) {
    if (b.kind == BufferInfo::Kind::Arena) {
      ptrs[b.id] = static_cast<char *>(arena) + b.offset;
      continue;
    }
    ptrs[b.id] = static_cast<char *>(constants) + constOff[b.id];
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
  multiRank = comm && comm->size() > 1;
  if (multiRank && std::string(comm->backend()) != "nccl")
    return Status::error(
        std::string("a multi-rank run on the cuda backend needs an nccl "
                    "communicator; '") +
        comm->backend() + "' works on host memory");
  TSL_RETURN_IF_ERROR(collectives.init(p, comm));

  // Scratch for im2col; per-instruction extras are reserved by makeStep.
  for (const Op &op : p.ops) {
    if (op.kind != OpKind::Conv2D)
      continue;
    const Shape &w = p.buffers[op.operands[1]].shape;
    const Shape &x = p.buffers[op.operands[0]].shape;
    const Shape &y = p.buffers[op.results[0]].shape;
    int64_t cols = (x[1] / op.group) * w[2] * w[3] * y[2] * y[3];
    scratchBytes = std::max<size_t>(scratchBytes, cols * sizeof(float));
  }
  if (scratchBytes)
    TSL_CUDA(cudaMalloc(&scratch, scratchBytes), "cudaMalloc of the scratch");

  steps.reserve(p.ops.size());
  for (size_t i = 0; i < p.ops.size(); ++i) {
    const Op &op = p.ops[i];
    initStep = i;
    Step s;
    Status st = makeStep(op, s);
    if (!st)
      return Status::error("instruction " + std::to_string(i) + " (" +
                           opKindName(op.kind) +
                           (op.name.empty() ? "" : " '" + op.name + "'") +
                           "): " + st.message());
    steps.push_back(std::move(s));
  }
  // `extra` is allocated last, once every step has reserved its part:
  // closures hold the address of `extra` (or `slots`) and offsets into it.
  const size_t slotOff =
      reserve(gathers.size() * 2 * sizeof(unsigned long long), extraBytes);
  if (extraBytes) {
    TSL_CUDA(cudaMalloc(&extra, extraBytes), "cudaMalloc of the extras");
    slots = reinterpret_cast<unsigned long long *>(static_cast<char *>(extra) +
                                                   slotOff);
  }
  TSL_CUDA(cudaStreamSynchronize(stream), "initialising the executor");
  return Status::ok();
}

Status CudaExecutor::run() {
  TSL_CUDA(cudaSetDevice(device), "cudaSetDevice");
  if (!gathers.empty())
    TSL_CUDA(cudaMemsetAsync(slots, 0xff,
                             gathers.size() * 2 * sizeof(unsigned long long),
                             stream),
             "resetting the gather checks");
  // TESSEL_PROFILE=1: time per op kind (synchronising after each op),
  // printed to stderr after each run.
  static const bool profile = std::getenv("TESSEL_PROFILE") != nullptr;
  std::vector<double> byKind(profile ? 128 : 0, 0.0);
  for (size_t i = 0; i < steps.size(); ++i) {
    auto t0 = profile ? std::chrono::steady_clock::now()
                      : std::chrono::steady_clock::time_point();
    Status s = steps[i]();
    if (s && profile) {
      cudaError_t e = cudaStreamSynchronize(stream);
      if (e != cudaSuccess)
        s = cudaFail(e, "the instruction's kernels");
      byKind[static_cast<int>(prog->ops[i].kind) & 127] +=
          std::chrono::duration<double, std::milli>(
              std::chrono::steady_clock::now() - t0)
              .count();
    }
    if (!s) {
      const Op &op = prog->ops[i];
      cudaStreamSynchronize(stream);
      return Status::error("instruction " + std::to_string(i) + " (" +
                           opKindName(op.kind) +
                           (op.name.empty() ? "" : " '" + op.name + "'") +
                           "): " + s.message());
    }
  }
  TSL_CUDA(cudaStreamSynchronize(stream), "running the program");
  if (!gathers.empty()) {
    std::vector<unsigned long long> host(gathers.size() * 2);
    TSL_CUDA(cudaMemcpyAsync(host.data(), slots,
                             host.size() * sizeof(unsigned long long),
                             cudaMemcpyDeviceToHost, stream),
             "reading the gather checks");
    TSL_CUDA(cudaStreamSynchronize(stream), "reading the gather checks");
    for (size_t g = 0; g < gathers.size(); ++g) {
      if (host[2 * g] == ~0ull)
        continue;
      const Op &op = *gathers[g].second;
      const int64_t dim = prog->buffers[op.operands[0]].shape[op.axis];
      return Status::error(
          "instruction " + std::to_string(gathers[g].first) + " (gather" +
          (op.name.empty() ? "" : " '" + op.name + "'") + "): gather: index " +
          std::to_string(static_cast<int64_t>(host[2 * g + 1])) +
          " at position " + std::to_string(host[2 * g]) +
          " is out of range for an axis of size " + std::to_string(dim));
    }
  }
  if (profile) {
    std::fprintf(stderr, "tessel profile (ms, cuda):");
    for (int k = 0; k < 128; ++k)
      if (byKind[k] > 0)
        if (auto kind = opKindFromInt(k))
          std::fprintf(stderr, " %s=%.3f", opKindName(*kind), byKind[k]);
    std::fprintf(stderr, "\n");
  }
  return Status::ok();
}

Status CudaExecutor::writeBuffer(int id, const void *src) {
  const size_t bytes = prog->buffers[id].bytes;
  if (!bytes)
    return Status::ok();
  TSL_CUDA(cudaSetDevice(device), "cudaSetDevice");
  TSL_CUDA(cudaMemcpyAsync(ptrs[id], src, bytes, cudaMemcpyHostToDevice, stream),
           "copying an input to the device");
  TSL_CUDA(cudaStreamSynchronize(stream), "copying an input to the device");
  return Status::ok();
}

Status CudaExecutor::readBuffer(int id, void *dst) {
  const size_t bytes = prog->buffers[id].bytes;
  if (!bytes)
    return Status::ok();
  TSL_CUDA(cudaSetDevice(device), "cudaSetDevice");
  TSL_CUDA(cudaMemcpyAsync(dst, ptrs[id], bytes, cudaMemcpyDeviceToHost, stream),
           "copying an output from the device");
  TSL_CUDA(cudaStreamSynchronize(stream), "copying an output from the device");
  return Status::ok();
}

Status CudaExecutor::gemmRowMajor(bool transA, bool transB, int m, int n,
                                  int k, float alpha, const float *a, int lda,
                                  const float *b, int ldb, float beta,
                                  float *c, int /*ldc: always n*/) {
  cublasHandle_t h = blas;
  return issueRowMajorGemm(
      transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c,
      [h](bool tA, bool tB, int m2, int n2, int k2, float al, const float *A,
          int ldA, const float *B, int ldB, float be, float *C, int ldC) {
        TSL_CUBLAS(cublasSgemm(h, tA ? CUBLAS_OP_T : CUBLAS_OP_N,
                               tB ? CUBLAS_OP_T : CUBLAS_OP_N, m2, n2, k2, &al,
                               A, ldA, B, ldB, &be, C, ldC),
                   "cublasSgemm");
        return Status::ok();
      });
}

Status CudaExecutor::makeMatMul(const Op &op, Step &out) {
  const Program &p = *prog;
  MatMulPlan plan;
  TSL_RETURN_IF_ERROR(planMatMul(p.buffers[op.operands[0]].shape,
                                 p.buffers[op.operands[1]].shape,
                                 p.buffers[op.results[0]].shape, plan));
  const float *a = static_cast<const float *>(ptrs[op.operands[0]]);
  const float *b = static_cast<const float *>(ptrs[op.operands[1]]);
  float *y = static_cast<float *>(ptrs[op.results[0]]);
  const size_t bytes = p.buffers[op.results[0]].bytes;
  cudaStream_t s = stream;
  cublasHandle_t h = blas;
  out = [=] {
    if (plan.nothing)
      return Status::ok();
    if (plan.zeros) { // k = 0: an empty sum
      TSL_CUDA(cudaMemsetAsync(y, 0, bytes, s), "cudaMemsetAsync");
      return Status::ok();
    }
    return issueMatMul(
        plan, a, b, y,
        [h](int m, int n, int k, const float *A, int lda, long long sA,
            const float *B, int ldb, long long sB, float *C, int ldc,
            long long sC, int count) {
          const float one = 1.0f, zero = 0.0f;
          if (count == 1) {
            TSL_CUBLAS(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &one,
                                   A, lda, B, ldb, &zero, C, ldc),
                       "cublasSgemm");
          } else {
            TSL_CUBLAS(cublasSgemmStridedBatched(h, CUBLAS_OP_N, CUBLAS_OP_N, m,
                                                 n, k, &one, A, lda, sA, B, ldb,
                                                 sB, &zero, C, ldc, sC, count),
                       "cublasSgemmStridedBatched");
          }
          return Status::ok();
        });
  };
  return Status::ok();
}

Status CudaExecutor::makeGemm(const Op &op, Step &out) {
  const Program &p = *prog;
  const Shape &as = p.buffers[op.operands[0]].shape;
  const Shape &bs = p.buffers[op.operands[1]].shape;
  const bool hasC = op.operands.size() > 2;
  const float *a = static_cast<const float *>(ptrs[op.operands[0]]);
  const float *b = static_cast<const float *>(ptrs[op.operands[1]]);
  const void *c = hasC ? ptrs[op.operands[2]] : nullptr;
  float *y = static_cast<float *>(ptrs[op.results[0]]);
  const int64_t m = op.transA ? as[1] : as[0];
  const int64_t k = op.transA ? as[0] : as[1];
  const int64_t n = op.transB ? bs[0] : bs[1];
  if (!fitsInt(m) || !fitsInt(n) || !fitsInt(k) || !fitsInt(as[1]) ||
      !fitsInt(bs[1]) || !fitsInt(m * n))
    return Status::error("a matrix dim exceeds cuBLAS's int range");
  const bool useC = hasC && op.beta != 0.0f;
  Indexer cIx;
  if (useC) {
    Shape outShape = {m, n};
    TSL_RETURN_IF_ERROR(stridedIndexer(
        outShape,
        {cpu::broadcastStrides(p.buffers[op.operands[2]].shape, 2, outShape)},
        cIx));
  }
  const float beta = useC ? op.beta : 0.0f, alpha = op.alpha;
  const bool ta = op.transA, tb = op.transB;
  const int lda = static_cast<int>(as[1]), ldb = static_cast<int>(bs[1]);
  cudaStream_t s = stream;
  cublasHandle_t h = blas;
  CudaExecutor *self = this;
  out = [=] {
    if (m == 0 || n == 0)
      return Status::ok();
    if (useC) // Y = C broadcast to [m, n], then Y = alpha·A·B + beta·Y
      TSL_RETURN_IF_ERROR(
          launched(launchStridedCopy(4, c, y, cIx, s), "gemm bias"));
    if (k == 0) { // BLAS leaves this case to the implementation; be explicit
      if (beta == 0.0f) {
        TSL_CUDA(cudaMemsetAsync(y, 0, m * n * sizeof(float), s),
                 "cudaMemsetAsync");
      } else {
        TSL_CUBLAS(cublasSscal(h, static_cast<int>(m * n), &beta, y, 1),
                   "cublasSscal");
      }
      return Status::ok();
    }
    return self->gemmRowMajor(ta, tb, static_cast<int>(m), static_cast<int>(n),
                              static_cast<int>(k), alpha, a, lda, b, ldb, beta,
                              y, static_cast<int>(n));
  };
  return Status::ok();
}

Status CudaExecutor::makeConv2D(const Op &op, Step &out) {
  const Program &p = *prog;
  const Shape &xs = p.buffers[op.operands[0]].shape;
  const Shape &ws = p.buffers[op.operands[1]].shape;
  const Shape &ys = p.buffers[op.results[0]].shape;
  const float *x = static_cast<const float *>(ptrs[op.operands[0]]);
  const float *w = static_cast<const float *>(ptrs[op.operands[1]]);
  const float *bias = op.operands.size() > 2
                          ? static_cast<const float *>(ptrs[op.operands[2]])
                          : nullptr;
  float *y = static_cast<float *>(ptrs[op.results[0]]);
  const int64_t n = xs[0], c = xs[1], h = xs[2], wd = xs[3];
  const int64_t o = ws[0], kh = ws[2], kw = ws[3];
  const int64_t oh = ys[2], ow = ys[3];
  const int64_t cg = c / op.group, og = o / op.group;
  const int64_t kdim = cg * kh * kw, spatial = oh * ow;
  const int64_t group = op.group;
  const bool pointwise = kh == 1 && kw == 1 && op.strides[0] == 1 &&
                         op.strides[1] == 1 && op.pads[0] == 0 &&
                         op.pads[1] == 0 && op.pads[2] == 0 && op.pads[3] == 0;
  if (!fitsInt(og) || !fitsInt(kdim) || !fitsInt(spatial))
    return Status::error("a GEMM dim of the convolution exceeds cuBLAS's int "
                         "range");
  Conv2DGeom g;
  g.channels = cg;
  g.h = h;
  g.w = wd;
  g.kh = kh;
  g.kw = kw;
  g.oh = oh;
  g.ow = ow;
  g.sh = op.strides[0];
  g.sw = op.strides[1];
  g.pt = op.pads[0];
  g.pl = op.pads[1];
  g.dh = op.dilations[0];
  g.dw = op.dilations[1];
  float *col = static_cast<float *>(scratch);
  cudaStream_t s = stream;
  CudaExecutor *self = this;
  out = [=] {
    if (n * o * spatial == 0)
      return Status::ok();
    const float one = 1.0f, zero = 0.0f;
    for (int64_t b = 0; b < n; ++b)
      for (int64_t gi = 0; gi < group; ++gi) {
        const float *xg = x + (b * c + gi * cg) * h * wd;
        const float *cols = xg;
        if (!pointwise) {
          TSL_RETURN_IF_ERROR(launched(launchIm2Col(xg, g, col, s), "im2col"));
          cols = col;
        }
        // Y_g [og, spatial] = W_g [og, kdim] · cols [kdim, spatial]
        float *yg = y + (b * o + gi * og) * spatial;
        if (kdim == 0) {
          TSL_CUDA(cudaMemsetAsync(yg, 0, og * spatial * sizeof(float), s),
                   "cudaMemsetAsync");
          continue;
        }
        TSL_RETURN_IF_ERROR(self->gemmRowMajor(
            false, false, static_cast<int>(og), static_cast<int>(spatial),
            static_cast<int>(kdim), one, w + gi * og * kdim,
            static_cast<int>(kdim), cols, static_cast<int>(spatial), zero, yg,
            static_cast<int>(spatial)));
      }
    if (bias)
      TSL_RETURN_IF_ERROR(
          launched(launchAddBias(y, bias, n, o, spatial, s), "conv2d bias"));
    return Status::ok();
  };
  return Status::ok();
}

Status CudaExecutor::makeNorm(const Op &op, Step &out) {
  const Program &p = *prog;
  const BufferInfo &X = p.buffers[op.operands[0]];
  Shape norm(X.shape.begin() + op.axis, X.shape.end());
  const int64_t d = numElements(norm);
  int64_t rows = 1;
  for (int64_t i = 0; i < op.axis; ++i)
    rows *= X.shape[i];
  // Scale and bias that broadcast are expanded to the normalized shape on
  // every run (their contents may change between runs), into `extra`.
  struct Param {
    const float *src = nullptr;
    bool expand = false;
    size_t extraOff = 0;
    Indexer ix;
  };
  std::vector<Param> params;
  for (size_t i = 1; i < op.operands.size(); ++i) {
    const BufferInfo &b = p.buffers[op.operands[i]];
    Param pr;
    pr.src = static_cast<const float *>(ptrs[op.operands[i]]);
    if (b.numel != d) {
      pr.expand = true;
      pr.extraOff = reserve(d * sizeof(float), extraBytes);
      TSL_RETURN_IF_ERROR(stridedIndexer(
          norm, {cpu::broadcastStrides(b.shape, norm.size(), norm)}, pr.ix));
    }
    params.push_back(pr);
  }
  const float *x = static_cast<const float *>(ptrs[op.operands[0]]);
  float *y = static_cast<float *>(ptrs[op.results[0]]);
  const bool rms = op.kind == OpKind::RmsNorm;
  const float eps = op.epsilon;
  void *const *extraBase = &extra; // allocated after every step is made
  cudaStream_t s = stream;
  out = [=] {
    const float *sp[2] = {nullptr, nullptr};
    for (size_t i = 0; i < params.size() && i < 2; ++i) {
      if (!params[i].expand) {
        sp[i] = params[i].src;
        continue;
      }
      float *dst = reinterpret_cast<float *>(static_cast<char *>(*extraBase) +
                                             params[i].extraOff);
      TSL_RETURN_IF_ERROR(launched(
          launchStridedCopy(4, params[i].src, dst, params[i].ix, s), "expand"));
      sp[i] = dst;
    }
    return launched(launchLayerNorm(rms, x, rows, d, eps, sp[0], sp[1], y, s),
                    rms ? "rms_norm" : "layer_norm");
  };
  return Status::ok();
}

Status CudaExecutor::makeCollective(const Op &op, Step &out) {
  const Program &p = *prog;
  cudaStream_t s = stream;
  if (multiRank) {
    // NCCL runs synchronously on its own stream: the operands must be
    // complete first, and its results are complete when it returns.
    std::function<Status()> inner = collectives.step(p, op, ptrs);
    out = [=] {
      TSL_CUDA(cudaStreamSynchronize(s), "waiting for a collective's operands");
      return inner();
    };
    return Status::ok();
  }
  // One rank: what the local communicator does, on device memory.
  const CollectiveAttrs &c = op.coll;
  if (op.kind == OpKind::Send || op.kind == OpKind::Recv) {
    const std::string msg = std::string(op.kind == OpKind::Send ? "send to"
                                                                : "recv from") +
                            " rank " + std::to_string(c.peer) +
                            ": this run has a single rank";
    out = [msg] { return Status::error(msg); };
    return Status::ok();
  }
  if (op.kind == OpKind::Broadcast && c.root != 0) {
    const std::string msg = "root " + std::to_string(c.root) +
                            " is out of range for a group of 1";
    out = [msg] { return Status::error(msg); };
    return Status::ok();
  }
  void *x = ptrs[op.operands[0]], *y = ptrs[op.results[0]];
  const size_t bytes = p.buffers[op.results[0]].bytes;
  if (op.kind == OpKind::CollectivePermute && c.pairs.empty()) {
    // No (0, 0) pair: nobody sends to this rank, which gets zeros.
    out = [=] {
      if (bytes)
        TSL_CUDA(cudaMemsetAsync(y, 0, bytes, s), "cudaMemsetAsync");
      return Status::ok();
    };
    return Status::ok();
  }
  out = [=] {
    if (x != y && bytes)
      TSL_CUDA(cudaMemcpyAsync(y, x, bytes, cudaMemcpyDeviceToDevice, s),
               "cudaMemcpyAsync");
    return Status::ok();
  };
  return Status::ok();
}

Status CudaExecutor::makeStep(const Op &op, Step &out) {
  const Program &p = *prog;
  auto in = [&](size_t i) -> const BufferInfo & {
    return p.buffers[op.operands[i]];
  };
  void *x0 = op.operands.empty() ? nullptr : ptrs[op.operands[0]];
  void *y0 = ptrs[op.results.empty() ? 0 : op.results[0]];
  const BufferInfo *a = op.operands.empty() ? nullptr : &in(0);
  const BufferInfo *r = op.results.empty() ? nullptr : &p.buffers[op.results[0]];
  cudaStream_t s = stream;
  const Op *o = &op;

  // A plain device-to-device copy of the first operand into the result.
  auto copyStep = [=] {
    const size_t bytes = a->bytes;
    return [=] {
      if (x0 != y0 && bytes)
        TSL_CUDA(cudaMemcpyAsync(y0, x0, bytes, cudaMemcpyDeviceToDevice, s),
                 "cudaMemcpyAsync");
      return Status::ok();
    };
  };

  switch (op.kind) {
  case OpKind::Neg:
  case OpKind::Exp:
  case OpKind::Log:
  case OpKind::Sqrt:
  case OpKind::Rsqrt:
  case OpKind::Tanh:
  case OpKind::Erf:
  case OpKind::Sigmoid:
  case OpKind::Relu:
  case OpKind::Gelu:
  case OpKind::Reciprocal:
  case OpKind::Abs:
  case OpKind::Not:
    out = [=] {
      return launched(launchUnary(o->kind, o->tanhApproximation, a->dtype, x0,
                                  y0, a->numel, s),
                      opKindName(o->kind));
    };
    return Status::ok();
  case OpKind::Cast:
    out = [=] {
      return launched(launchCast(a->dtype, x0, o->to, y0, a->numel, s), "cast");
    };
    return Status::ok();
  case OpKind::Add:
  case OpKind::Sub:
  case OpKind::Mul:
  case OpKind::Div:
  case OpKind::Pow:
  case OpKind::Max:
  case OpKind::Min:
  case OpKind::Compare: {
    Indexer ix;
    TSL_RETURN_IF_ERROR(toIndexer(
        cpu::makeBroadcastPlan(r->shape, {&a->shape, &in(1).shape}), ix));
    void *x1 = ptrs[op.operands[1]];
    if (op.kind == OpKind::Compare) {
      const CmpPred pred = static_cast<CmpPred>(static_cast<int>(op.predicate));
      out = [=] {
        return launched(launchCompare(pred, a->dtype, x0, x1,
                                      static_cast<uint8_t *>(y0), ix, s),
                        "compare");
      };
      return Status::ok();
    }
    const bool bScalar = in(1).numel == 1;
    out = [=] {
      return launched(
          launchBinary(o->kind, a->dtype, x0, x1, y0, ix, bScalar, s),
          opKindName(o->kind));
    };
    return Status::ok();
  }
  case OpKind::Where: {
    Indexer ix;
    TSL_RETURN_IF_ERROR(toIndexer(
        cpu::makeBroadcastPlan(r->shape, {&a->shape, &in(1).shape, &in(2).shape}),
        ix));
    void *x1 = ptrs[op.operands[1]], *x2 = ptrs[op.operands[2]];
    const size_t es = dtypeSize(r->dtype);
    out = [=] {
      return launched(launchWhere(es, static_cast<const uint8_t *>(x0), x1, x2,
                                  y0, ix, s),
                      "where");
    };
    return Status::ok();
  }
  case OpKind::MatMul:
    return makeMatMul(op, out);
  case OpKind::Gemm:
    return makeGemm(op, out);
  case OpKind::ReduceSum:
  case OpKind::ReduceMean:
  case OpKind::ReduceMax: {
    const Shape &shape = a->shape;
    std::vector<bool> reduced(shape.size(), false);
    for (int64_t d : op.dims)
      reduced[d] = true;
    const std::vector<int64_t> st = rowMajorStrides(shape);
    Shape keptShape, redShape;
    std::vector<int64_t> keptStr, redStr;
    for (size_t d = 0; d < shape.size(); ++d) {
      (reduced[d] ? redShape : keptShape).push_back(shape[d]);
      (reduced[d] ? redStr : keptStr).push_back(st[d]);
    }
    Indexer kept, red;
    TSL_RETURN_IF_ERROR(stridedIndexer(keptShape, {keptStr}, kept));
    TSL_RETURN_IF_ERROR(stridedIndexer(redShape, {redStr}, red));
    const int64_t count = numElements(redShape);
    const float scale = count ? 1.0f / static_cast<float>(count)
                              : std::numeric_limits<float>::quiet_NaN();
    out = [=] {
      return launched(
          launchReduce(o->kind, a->dtype, x0, y0, kept, red, scale, s),
          opKindName(o->kind));
    };
    return Status::ok();
  }
  case OpKind::Softmax:
  case OpKind::LogSoftmax: {
    int64_t outer = 1, inner = 1, len = a->shape[op.axis];
    for (int64_t d = 0; d < op.axis; ++d)
      outer *= a->shape[d];
    for (size_t d = op.axis + 1; d < a->shape.size(); ++d)
      inner *= a->shape[d];
    const bool logS = op.kind == OpKind::LogSoftmax;
    out = [=] {
      return launched(launchSoftmax(logS, static_cast<const float *>(x0),
                                    static_cast<float *>(y0), outer, len,
                                    inner, s),
                      logS ? "log_softmax" : "softmax");
    };
    return Status::ok();
  }
  case OpKind::LayerNorm:
  case OpKind::RmsNorm:
    return makeNorm(op, out);
  case OpKind::BatchNorm: {
    const float *sc = static_cast<const float *>(ptrs[op.operands[1]]);
    const float *bi = static_cast<const float *>(ptrs[op.operands[2]]);
    const float *me = static_cast<const float *>(ptrs[op.operands[3]]);
    const float *va = static_cast<const float *>(ptrs[op.operands[4]]);
    const int64_t n = a->shape[0], c = a->shape[1];
    int64_t spatial = 1;
    for (size_t i = 2; i < a->shape.size(); ++i)
      spatial *= a->shape[i];
    const float eps = op.epsilon;
    out = [=] {
      return launched(launchBatchNorm(static_cast<const float *>(x0), n, c,
                                      spatial, sc, bi, me, va, eps,
                                      static_cast<float *>(y0), s),
                      "batch_norm");
    };
    return Status::ok();
  }
  case OpKind::Gather: {
    const BufferInfo *idx = &in(1);
    void *x1 = ptrs[op.operands[1]];
    int64_t outer = 1, inner = 1;
    const int64_t dim = a->shape[op.axis];
    for (int64_t d = 0; d < op.axis; ++d)
      outer *= a->shape[d];
    for (size_t d = op.axis + 1; d < a->shape.size(); ++d)
      inner *= a->shape[d];
    const size_t slot = gathers.size();
    gathers.emplace_back(initStep, &op);
    unsigned long long *const *slotBase = &slots; // allocated by init()
    const size_t es = dtypeSize(a->dtype);
    out = [=] {
      unsigned long long *sl = *slotBase + 2 * slot;
      TSL_RETURN_IF_ERROR(launched(
          launchGatherCheck(idx->dtype, x1, idx->numel, dim, sl, s), "gather"));
      return launched(launchGather(es, x0, idx->dtype, x1, idx->numel, outer,
                                   dim, inner, y0, s),
                      "gather");
    };
    return Status::ok();
  }
  case OpKind::AllReduce:
  case OpKind::AllGather:
  case OpKind::ReduceScatter:
  case OpKind::AllToAll:
  case OpKind::CollectivePermute:
  case OpKind::Broadcast:
  case OpKind::Send:
  case OpKind::Recv:
    return makeCollective(op, out);
  case OpKind::Reshape:
  case OpKind::Copy:
    out = copyStep();
    return Status::ok();
  case OpKind::Transpose: {
    const std::vector<int64_t> inStr = rowMajorStrides(a->shape);
    Shape outShape;
    std::vector<int64_t> srcStr;
    for (int64_t pd : op.perm) {
      outShape.push_back(a->shape[pd]);
      srcStr.push_back(inStr[pd]);
    }
    Indexer ix;
    TSL_RETURN_IF_ERROR(stridedIndexer(outShape, {srcStr}, ix));
    const size_t es = dtypeSize(a->dtype);
    out = [=] {
      return launched(launchStridedCopy(es, x0, y0, ix, s), "transpose");
    };
    return Status::ok();
  }
  case OpKind::Slice: {
    const std::vector<int64_t> inStr = rowMajorStrides(a->shape);
    int64_t offset = 0;
    std::vector<int64_t> srcStr(a->shape.size());
    for (size_t d = 0; d < a->shape.size(); ++d) {
      offset += op.starts[d] * inStr[d];
      srcStr[d] = op.steps[d] * inStr[d];
    }
    Indexer ix;
    TSL_RETURN_IF_ERROR(stridedIndexer(r->shape, {srcStr}, ix));
    const size_t es = dtypeSize(a->dtype);
    const bool empty = r->numel == 0;
    out = [=] {
      if (empty)
        return Status::ok();
      return launched(launchStridedCopy(es,
                                        static_cast<const char *>(x0) +
                                            offset * static_cast<int64_t>(es),
                                        y0, ix, s),
                      "slice");
    };
    return Status::ok();
  }
  case OpKind::Concat: {
    // Input k fills columns [prefix, prefix + size_k) of each of the
    // `outer` rows of the result viewed as [outer, axis * inner].
    const Shape &os = r->shape;
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < op.axis; ++d)
      outer *= os[d];
    for (size_t d = op.axis + 1; d < os.size(); ++d)
      inner *= os[d];
    const size_t es = dtypeSize(r->dtype);
    struct Piece {
      const void *src;
      int64_t dstOff; // elements
      Indexer ix;
    };
    std::vector<Piece> pieces;
    int64_t prefix = 0;
    for (size_t i = 0; i < op.operands.size(); ++i) {
      const int64_t size = in(i).shape[op.axis];
      Piece pc;
      pc.src = ptrs[op.operands[i]];
      pc.dstOff = prefix * inner;
      TSL_RETURN_IF_ERROR(stridedIndexer(
          {outer, size * inner}, {{size * inner, 1}, {os[op.axis] * inner, 1}},
          pc.ix));
      prefix += size;
      pieces.push_back(pc);
    }
    out = [=] {
      for (const Piece &pc : pieces)
        TSL_RETURN_IF_ERROR(launched(
            launchStridedCopy(es, pc.src,
                              static_cast<char *>(y0) +
                                  pc.dstOff * static_cast<int64_t>(es),
                              pc.ix, s),
            "concat"));
      return Status::ok();
    };
    return Status::ok();
  }
  case OpKind::Split: {
    const Shape &is = a->shape;
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < op.axis; ++d)
      outer *= is[d];
    for (size_t d = op.axis + 1; d < is.size(); ++d)
      inner *= is[d];
    const size_t es = dtypeSize(a->dtype);
    struct Piece {
      void *dst;
      int64_t srcOff; // elements
      Indexer ix;
    };
    std::vector<Piece> pieces;
    int64_t prefix = 0;
    for (size_t i = 0; i < op.results.size(); ++i) {
      const int64_t size = op.sizes[i];
      Piece pc;
      pc.dst = ptrs[op.results[i]];
      pc.srcOff = prefix * inner;
      TSL_RETURN_IF_ERROR(stridedIndexer({outer, size * inner},
                                         {{is[op.axis] * inner, 1}}, pc.ix));
      prefix += size;
      pieces.push_back(pc);
    }
    out = [=] {
      for (const Piece &pc : pieces)
        TSL_RETURN_IF_ERROR(launched(
            launchStridedCopy(es,
                              static_cast<const char *>(x0) +
                                  pc.srcOff * static_cast<int64_t>(es),
                              pc.dst, pc.ix, s),
            "split"));
      return Status::ok();
    };
    return Status::ok();
  }
  case OpKind::Expand: {
    Indexer ix;
    TSL_RETURN_IF_ERROR(stridedIndexer(
        r->shape, {cpu::broadcastStrides(a->shape, r->shape.size(), r->shape)},
        ix));
    const size_t es = dtypeSize(a->dtype);
    out = [=] {
      return launched(launchStridedCopy(es, x0, y0, ix, s), "expand");
    };
    return Status::ok();
  }
  case OpKind::Conv2D:
    return makeConv2D(op, out);
  case OpKind::MaxPool:
  case OpKind::AvgPool: {
    PoolGeom g;
    g.planes = a->shape[0] * a->shape[1];
    g.h = a->shape[2];
    g.w = a->shape[3];
    g.oh = r->shape[2];
    g.ow = r->shape[3];
    g.kh = op.kernel[0];
    g.kw = op.kernel[1];
    g.sh = op.strides[0];
    g.sw = op.strides[1];
    g.pt = op.pads[0];
    g.pl = op.pads[1];
    g.pb = op.pads[2];
    g.pr = op.pads[3];
    g.countIncludePad = op.countIncludePad;
    const bool isMax = op.kind == OpKind::MaxPool;
    out = [=] {
      const float *x = static_cast<const float *>(x0);
      float *y = static_cast<float *>(y0);
      return isMax ? launched(launchMaxPool(x, y, g, s), "max_pool")
                   : launched(launchAvgPool(x, y, g, s), "avg_pool");
    };
    return Status::ok();
  }
  case OpKind::GlobalAvgPool: {
    const int64_t planes = a->shape[0] * a->shape[1];
    int64_t spatial = 1;
    for (size_t d = 2; d < a->shape.size(); ++d)
      spatial *= a->shape[d];
    out = [=] {
      return launched(launchGlobalAvgPool(static_cast<const float *>(x0),
                                          static_cast<float *>(y0), planes,
                                          spatial, s),
                      "global_avg_pool");
    };
    return Status::ok();
  }
  }
  return Status::error("op not implemented by the cuda backend");
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

Status createCudaExecutor(std::shared_ptr<const Program> program,
                          const ExecutorOptions &options,
                          std::unique_ptr<Executor> &out) {
  // `threads` is a CPU notion. A multi-rank world must be an NCCL
  // communicator created on this device (CommOptions::device).
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
