//===- CpuExecutor.cpp - The CPU backend ----------------------------------===//
//
// At creation every instruction is turned into a closure over resolved
// pointers and precomputed shapes, built by its kind's kernel factory
// (KernelRegistry.h), so run() is a tight loop of kernel calls.
//
//===----------------------------------------------------------------------===//
#include "Gemm.h"
#include "KernelRegistry.h"
#include "KernelResources.h"
#include "Kernels.h"
#include "ThreadPool.h"
#include "tessel/runtime/Executor.h"
#include "tessel/runtime/MappedFile.h"
#include "tessel/runtime/Numerics.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <sys/mman.h>
#include <unistd.h>

namespace tessel::runtime::cpu {

LayoutReorder *KernelResources::reorderFor(const Shape &shape, Layout from,
                                           Layout to) {
  reorders.push_back(createLayoutReorder(dnnl, shape, from, to));
  if (!reorders.back() && stepError.isOk())
    stepError = Status::error("oneDNN has no reorder between layouts of " +
                              shapeToString(shape));
  return reorders.back().get();
}

namespace {

struct DnnlChoices;

class CpuExecutor : public Executor, private KernelResources {
public:
  CpuExecutor(std::shared_ptr<const Program> program, int threads,
              Communicator *comm, CollectiveOverlap overlap)
      : Executor(std::move(program)), threads(threads), pool(threads),
        comm(comm), overlap(overlap) {}
  ~CpuExecutor() override {
    if (arena && arenaBytes)
      munmap(arena, arenaBytes);
    if (stateBlock && stateBytes)
      munmap(stateBlock, stateBytes);
  }

  const char *backend() const override { return "cpu"; }
  Status init();
  Status run() override;
  bool setCheckNumerics(bool on) override;

protected:
  Status writeBuffer(int id, const void *src) override {
    std::memcpy(ptrs[id], src, prog->buffers[id].bytes);
    return Status::ok();
  }
  Status readBuffer(int id, void *dst) override {
    std::memcpy(dst, ptrs[id], prog->buffers[id].bytes);
    return Status::ok();
  }

private:
  /// "instruction I (KIND 'NAME')", as messages name instruction i.
  std::string where(size_t i) const;
  Step makeStep(size_t i);
  Step makeStepWithLayouts(size_t i);
  Status initConvs();
  void planDnnlConvs(const DnnlChoices &c, std::vector<Layout> &writes,
                     int64_t &scratchSize);
  void planPackedGemms();
  void planDnnlMatMuls(const DnnlChoices &c);
  Status planDnnlPoolsAndLayouts(const DnnlChoices &c,
                                 const std::vector<Layout> &writes);
  Status allocateConvScratch(int64_t scratchSize);
  void dropPrepackedWeightPages();
  Status initBf16Gemms();
  Status initStates();
  /// Numerics checks (setCheckNumerics): scans what instruction `i`
  /// completed; records the first finding in `numerics`.
  void checkCompleted(size_t i);
  Finiteness finitenessOf(int id);

  int threads;
  ThreadPool pool;
  unsigned char *arena = nullptr;
  size_t arenaBytes = 0;
  // The state buffers, 64-byte aligned in one mapping of their own: they
  // persist from run to run.
  unsigned char *stateBlock = nullptr;
  size_t stateBytes = 0;
  std::vector<void *> ptrs;
  std::vector<Step> steps;
  // Instructions that block on peers (recv, wait): RunStats::idleUs.
  std::vector<bool> blocks;
  // Ops folded into others (ConvPlan.h), and the NCHW copies of NHWC
  // operands, by operand position.
  std::vector<bool> skipped;
  std::vector<AlignedBuffer> plainCopies;
  Communicator *comm;
  CollectiveOverlap overlap;
  // Numerics checks: by instruction, the (instruction, result position,
  // buffer) triples complete once it has run (an asynchronous collective's
  // at its wait; a fused op's in the buffer its kernel writes); the
  // operands each instruction reads (a fused conv's addend too); what each
  // buffer held in this run (Unknown: not yet known), and the weights' and
  // constants', known for good once scanned.
  struct Completed {
    size_t op;
    int result;
    int id;
  };
  bool checkNumerics = false;
  std::vector<std::vector<Completed>> completes;
  std::vector<std::vector<int>> reads;
  std::vector<Finiteness> held, readOnlyHeld;
  std::vector<bool> isInput;
};

std::string CpuExecutor::where(size_t i) const {
  const Op &op = prog->ops[i];
  return "instruction " + std::to_string(i) + " (" + opKindName(op.kind) +
         (op.name.empty() ? "" : " '" + op.name + "'") + ")";
}

Status CpuExecutor::init() {
  // Every instruction's kernel, found now: a kind this backend lacks fails
  // the load, not a run.
  for (size_t i = 0; i < prog->ops.size(); ++i) {
    KernelFactory factory;
    if (Status s = cpuKernels().lookup(prog->ops[i].kind, factory); !s)
      return Status::error(where(i) + ": " + s.message());
  }
  // oneDNN's convs fix their thread count when created: create them for
  // this executor's.
  setGemmThreads(threads);
  // Anonymous memory: page aligned, zeroed lazily, untouched until used.
  arenaBytes = std::max<size_t>((prog->arenaSize + 4095) / 4096 * 4096, 4096);
  // The mapping is lazy (overcommitted): an arena larger than the machine
  // would be accepted here and killed later. Refuse it now.
  const uint64_t memory = physicalMemoryBytes();
  if (memory && arenaBytes > memory) {
    arenaBytes = 0;
    return Status::error("the program's arena needs " +
                         std::to_string(prog->arenaSize) +
                         " bytes; this machine has " + std::to_string(memory) +
                         " bytes of memory");
  }
  void *mem = mmap(nullptr, arenaBytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) {
    arenaBytes = 0;
    return Status::error("cannot allocate the arena: it needs " +
                         std::to_string(prog->arenaSize) +
                         " bytes; this machine has " + std::to_string(memory) +
                         " bytes of memory (" + std::strerror(errno) + ")");
  }
  arena = static_cast<unsigned char *>(mem);
  for (const BufferInfo &b : prog->buffers)
    ptrs.push_back(b.kind == BufferInfo::Kind::Arena
                       ? arena + b.offset
                       : const_cast<void *>(b.data));
  TSL_RETURN_IF_ERROR(initStates());
  TSL_RETURN_IF_ERROR(initConvs());
  TSL_RETURN_IF_ERROR(initBf16Gemms());
  TSL_RETURN_IF_ERROR(collectives.init(
      *prog, comm,
      overlapsCollectives(overlap, comm ? comm->backend() : "local",
                          getAllowedCores(), threads)));
  for (size_t i = 0; i < prog->ops.size(); ++i) {
    steps.push_back(skipped[i] ? Step([] { return Status::ok(); })
                               : makeStepWithLayouts(i));
    blocks.push_back(prog->ops[i].kind == OpKind::Recv ||
                     prog->ops[i].kind == OpKind::Wait);
  }
  return stepError;
}

Status CpuExecutor::initStates() {
  size_t total = 0;
  for (const BufferInfo &b : prog->buffers)
    if (b.kind == BufferInfo::Kind::State)
      total += (b.bytes + 63) / 64 * 64;
  if (!total)
    return Status::ok();
  // Anonymous memory is zeros: states without an initial value stay so.
  stateBytes = (total + 4095) / 4096 * 4096;
  void *mem = mmap(nullptr, stateBytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) {
    stateBytes = 0;
    return Status::error("cannot allocate the " + std::to_string(total) +
                         " bytes of state buffers");
  }
  stateBlock = static_cast<unsigned char *>(mem);
  size_t off = 0;
  for (const BufferInfo &b : prog->buffers) {
    if (b.kind != BufferInfo::Kind::State)
      continue;
    ptrs[b.id] = stateBlock + off;
    off += (b.bytes + 63) / 64 * 64;
    if (!b.data)
      continue;
    std::memcpy(ptrs[b.id], b.data, b.bytes);
    // The initial value is not read again: its file pages can go.
    if (b.fileBacked)
      dropFileBackedPages(b.data, b.bytes);
  }
  return Status::ok();
}

/// How the CPU executor runs convolutions, matmul epilogues and pooling.
/// For comparisons (runtime/README.md): TESSEL_CONV=im2col keeps every
/// conv on im2col + GEMM; TESSEL_LAYOUT=nchw keeps every buffer NCHW,
/// =nhwc builds convs for NHWC (brgconv), =blocked (the default) for
/// nChw16c (jit kernels, Winograd for 3x3 stride-1 convs unless
/// TESSEL_WINOGRAD=0); TESSEL_FUSE=0 folds nothing into convs.
struct DnnlChoices {
  bool useDnnl = true, useNhwc = true, winograd = true, fuse = true;
  Layout convLayout = Layout::NChw16c;
};

DnnlChoices dnnlChoicesFromEnvironment() {
  auto env = [](const char *name) {
    const char *v = std::getenv(name);
    return std::string(v ? v : "");
  };
  DnnlChoices c;
  c.useDnnl = env("TESSEL_CONV") != "im2col";
  const std::string layoutMode = env("TESSEL_LAYOUT");
  c.useNhwc = c.useDnnl && layoutMode != "nchw";
  c.convLayout = layoutMode == "nhwc"   ? Layout::NHWC
                 : layoutMode == "nchw" ? Layout::NCHW
                                        : Layout::NChw16c;
  c.winograd = c.convLayout == Layout::NChw16c && env("TESSEL_WINOGRAD") != "0";
  c.fuse = env("TESSEL_FUSE") != "0";
  return c;
}

Status CpuExecutor::initConvs() {
  const DnnlChoices c = dnnlChoicesFromEnvironment();
  const size_t nOps = prog->ops.size();
  skipped.assign(nOps, false);
  dnnlWrites.assign(nOps, -1);
  std::vector<Layout> writes(nOps, Layout::NCHW);
  int64_t scratchSize = 0;
  planDnnlConvs(c, writes, scratchSize);
  planPackedGemms();
  planDnnlMatMuls(c);
  TSL_RETURN_IF_ERROR(planDnnlPoolsAndLayouts(c, writes));
  TSL_RETURN_IF_ERROR(allocateConvScratch(scratchSize));
  dropPrepackedWeightPages();
  return Status::ok();
}

void CpuExecutor::planDnnlConvs(const DnnlChoices &c,
                                std::vector<Layout> &writes,
                                int64_t &scratchSize) {
  const size_t nOps = prog->ops.size();
  const auto &B = prog->buffers;
  const bool useDnnl = c.useDnnl, useNhwc = c.useNhwc, winograd = c.winograd;
  const Layout convLayout = c.convLayout;
  // Convs with constant weights run on oneDNN; pointwise stride-1 ones only
  // where layouts may stay NHWC (as NCHW GEMMs they need no reorders).
  std::vector<bool> eligible(nOps, false);
  for (size_t i = 0; i < nOps; ++i) {
    const Op &op = prog->ops[i];
    if (!useDnnl || op.kind != OpKind::Conv2D)
      continue;
    auto isConst = [&](size_t k) {
      return k < op.operands.size() && B[op.operands[k]].isReadOnly();
    };
    const Shape &w = B[op.operands[1]].shape;
    const bool pointwise = w.size() == 4 && w[2] == 1 && w[3] == 1 &&
                           op.strides == std::vector<int64_t>{1, 1} &&
                           op.pads == std::vector<int64_t>{0, 0, 0, 0};
    eligible[i] = (useNhwc || !pointwise) && isConst(1) &&
                  (op.operands.size() < 3 || isConst(2));
  }
  fusions =
      c.fuse ? planConvFusion(*prog, eligible) : std::vector<ConvFusion>(nOps);

  dnnlConvs.resize(nOps);
  for (size_t i = 0; i < nOps; ++i) {
    const Op &op = prog->ops[i];
    if (op.kind != OpKind::Conv2D)
      continue;
    if (eligible[i]) {
      if (!dnnl)
        dnnl = createDnnlContext();
      // The chosen layout where the channels allow it (a 3-channel image
      // in nChw16c would be 16 channels of mostly padding): else oneDNN's.
      ConvAlgo algo;
      algo.winograd = winograd;
      const Shape &ws = B[op.operands[1]].shape;
      if (convLayout != Layout::NChw16c || (ws[0] % 16 == 0 && ws[1] % 16 == 0))
        algo.layout = convLayout;
      auto create = [&](ConvPostOps post) {
        return DnnlConv::create(
            dnnl, B[op.operands[0]].shape, B[op.operands[1]].shape,
            B[op.results[0]].shape, op.strides, op.pads, op.dilations, op.group,
            static_cast<const float *>(B[op.operands[1]].data),
            op.operands.size() > 2
                ? static_cast<const float *>(B[op.operands[2]].data)
                : nullptr,
            post, algo);
      };
      ConvFusion &f = fusions[i];
      if (f.writes >= 0) {
        ConvPostOps post;
        post.sum = f.addend >= 0;
        post.relu = f.relu >= 0;
        dnnlConvs[i] = create(post);
      }
      if (!dnnlConvs[i]) {
        f = ConvFusion(); // no kernel with those post-ops: unfused
        dnnlConvs[i] = create(ConvPostOps());
      }
    }
    if (dnnlConvs[i]) {
      const ConvFusion &f = fusions[i];
      dnnlWrites[i] = f.writes >= 0 ? f.writes : op.results[0];
      if (f.add >= 0)
        skipped[f.add] = true;
      if (f.relu >= 0)
        skipped[f.relu] = true;
      writes[i] = useNhwc ? dnnlConvs[i]->dstLayout() : Layout::NCHW;
      continue;
    }
    scratchSize = std::max(scratchSize,
                           conv2dScratchSize(B[op.operands[0]].shape,
                                             B[op.operands[1]].shape,
                                             B[op.results[0]].shape, op.strides,
                                             op.pads, op.dilations, op.group));
  }
}

/// f32 matmuls and gemms on constant weights, on CPUs where PackedGemm is
/// faster than oneDNN's sgemm (PackedGemm.h): their B packed now, and the
/// gathers of a tied embedding served from its head's packed copy.
void CpuExecutor::planPackedGemms() {
  PackedWeights w =
      packedGemmPreferred() ? packConstantWeights(*prog) : PackedWeights();
  packedGemms = std::move(w.gemms);
  packedGathers = std::move(w.gathers);
  packedGemms.resize(prog->ops.size());
  packedGathers.resize(prog->ops.size(), nullptr);
}

/// matmul + constant bias + gelu as one oneDNN matmul (ConvPlan.h).
void CpuExecutor::planDnnlMatMuls(const DnnlChoices &c) {
  const size_t nOps = prog->ops.size();
  const auto &B = prog->buffers;
  const bool useDnnl = c.useDnnl;
  dnnlMatMuls.resize(nOps);
  matmulWrites.assign(nOps, -1);
  std::vector<bool> mmEligible(nOps, false);
  for (size_t i = 0; i < nOps; ++i) {
    const Op &op = prog->ops[i];
    if (!useDnnl || op.kind != OpKind::MatMul || op.operands.size() != 2 ||
        packedGemms[i])
      continue;
    const BufferInfo &a = B[op.operands[0]], &w = B[op.operands[1]],
                     &r = B[op.results[0]];
    mmEligible[i] = a.dtype == DType::F32 && w.dtype == DType::F32 &&
                    a.shape.size() >= 2 && w.shape.size() == 2 &&
                    w.shape[0] > 0 && w.shape[1] > 0 && w.isReadOnly() &&
                    a.shape.back() == w.shape[0] && r.numel > 0 &&
                    r.shape.back() == w.shape[1] &&
                    r.numel / w.shape[1] == a.numel / w.shape[0];
  }
  std::vector<MatMulEpilogue> epilogues =
      c.fuse ? planMatMulEpilogue(*prog, mmEligible)
             : std::vector<MatMulEpilogue>(nOps);
  for (size_t i = 0; i < nOps; ++i) {
    const MatMulEpilogue &e = epilogues[i];
    if (e.add < 0)
      continue;
    const Op &op = prog->ops[i];
    const BufferInfo &a = B[op.operands[0]], &w = B[op.operands[1]];
    if (!dnnl)
      dnnl = createDnnlContext();
    dnnlMatMuls[i] = createDnnlMatMul(
        dnnl, a.numel / w.shape[0], w.shape[0], w.shape[1],
        static_cast<const float *>(w.data),
        static_cast<const float *>(B[e.bias].data), e.tanhForm);
    if (!dnnlMatMuls[i])
      continue;
    matmulWrites[i] = e.writes;
    skipped[e.add] = true;
    skipped[e.gelu] = true;
  }
}

/// max_pool on oneDNN too where activations may keep its layouts (it reads
/// and writes any, and keeps its input's); then every buffer's layout.
Status CpuExecutor::planDnnlPoolsAndLayouts(const DnnlChoices &c,
                                            const std::vector<Layout> &writes) {
  const size_t nOps = prog->ops.size();
  const auto &B = prog->buffers;
  const bool useNhwc = c.useNhwc;
  dnnlPools.resize(nOps);
  std::vector<bool> onDnnlPool(nOps, false);
  std::vector<int> sameLayoutAs(nOps, -1);
  for (size_t i = 0; i < nOps; ++i) {
    const Op &op = prog->ops[i];
    if (useNhwc && op.kind == OpKind::MaxPool &&
        B[op.operands[0]].dtype == DType::F32 &&
        B[op.operands[0]].shape.size() == 4) {
      onDnnlPool[i] = true;
      dnnlWrites[i] = op.results[0];
      sameLayoutAs[i] = op.operands[0];
    }
  }
  for (size_t i = 0; i < nOps; ++i)
    if (dnnlConvs[i] && fusions[i].inPlace)
      sameLayoutAs[i] = fusions[i].addend;
  layouts = planLayouts(*prog, dnnlWrites, writes, sameLayoutAs, skipped);
  for (size_t i = 0; i < nOps; ++i) {
    if (!onDnnlPool[i])
      continue;
    const Op &op = prog->ops[i];
    if (!dnnl)
      dnnl = createDnnlContext();
    dnnlPools[i] = createDnnlMaxPool(
        dnnl, B[op.operands[0]].shape, B[op.results[0]].shape, op.kernel,
        op.strides, op.pads, layouts.layout[op.operands[0]],
        layouts.layout[op.results[0]]);
    if (!dnnlPools[i])
      return Status::error("instruction " + std::to_string(i) +
                           " (max_pool): oneDNN has no max pooling for " +
                           shapeToString(B[op.operands[0]].shape));
  }
  return Status::ok();
}

/// Scratch: im2col columns; the copies a conv's reorders need; the NCHW
/// copies of NHWC operands, by operand position.
Status CpuExecutor::allocateConvScratch(int64_t scratchSize) {
  const size_t nOps = prog->ops.size();
  const auto &B = prog->buffers;
  size_t srcBytes = 0, dstBytes = 0;
  std::vector<size_t> plainBytes;
  for (size_t i = 0; i < nOps; ++i) {
    if (DnnlConv *conv = dnnlConvs[i].get()) {
      TSL_RETURN_IF_ERROR(
          conv->setBufferLayouts(layouts.layout[prog->ops[i].operands[0]],
                                 layouts.layout[dnnlWrites[i]]));
      srcBytes = std::max(srcBytes, conv->srcScratchBytes());
      dstBytes = std::max(dstBytes, conv->dstScratchBytes());
    }
    for (int k : layouts.toPlain[i]) {
      plainBytes.resize(std::max<size_t>(plainBytes.size(), k + 1), 0);
      plainBytes[k] =
          std::max<size_t>(plainBytes[k], B[prog->ops[i].operands[k]].bytes);
    }
  }
  scratch.resize(scratchSize);
  auto aligned = [](size_t bytes) {
    return AlignedBuffer(
        static_cast<float *>(
            bytes ? std::aligned_alloc(64, (bytes + 63) / 64 * 64) : nullptr),
        std::free);
  };
  convSrc = aligned(srcBytes);
  convDst = aligned(dstBytes);
  size_t total = srcBytes + dstBytes;
  bool failed = (srcBytes && !convSrc) || (dstBytes && !convDst);
  for (size_t bytes : plainBytes) {
    plainCopies.push_back(aligned(bytes));
    total += bytes;
    failed = failed || (bytes && !plainCopies.back());
  }
  if (failed)
    return Status::error("cannot allocate " + std::to_string(total) +
                         " bytes of convolution scratch");
  return Status::ok();
}

/// Weights read only by prepacked convs and GEMMs: their file pages can
/// go (the checksum pass or the prepacking made them resident).
void CpuExecutor::dropPrepackedWeightPages() {
  const size_t nOps = prog->ops.size();
  const auto &B = prog->buffers;
  std::vector<int> readers(B.size(), 0), prepacked(readers);
  for (size_t i = 0; i < nOps; ++i)
    for (int id : prog->ops[i].operands) {
      ++readers[id];
      prepacked[id] += dnnlConvs[i] != nullptr ||
                       (packedGathers[i] && id == prog->ops[i].operands[0]) ||
                       ((dnnlMatMuls[i] || packedGemms[i]) &&
                        id == prog->ops[i].operands[1]);
    }
  for (const BufferInfo &b : B)
    if (b.fileBacked && readers[b.id] > 0 && readers[b.id] == prepacked[b.id])
      dropFileBackedPages(b.data, b.bytes);
}

namespace {
/// A round_float to bf16 (8 exponent, 7 mantissa bits).
bool isBf16Round(const Op &op) {
  return op.kind == OpKind::RoundFloat && op.intAttr("exponent_bits", 8) == 8 &&
         op.intAttr("mantissa_bits", 7) == 7;
}
} // namespace

Status CpuExecutor::initBf16Gemms() {
  const size_t nOps = prog->ops.size();
  const auto &B = prog->buffers;
  bf16MatMuls.resize(nOps);
  bf16Operands.resize(nOps);
  bf16RoundCopies.assign(nOps, nullptr);
  bf16RoundCopyOnly.assign(nOps, false);
  // Each operand's value: its buffer and the instruction that last wrote it
  // before the GEMM (-1: none in this program, a weight or a state as the
  // step found it). The same value read by several GEMMs is one key.
  std::vector<int> lastWriter(B.size(), -1);
  std::map<std::pair<int, int>, std::vector<std::pair<size_t, int>>> readers;
  std::map<std::pair<int, int>, size_t> reads; // every reader's, by key
  bool checked = false, available = false;
  for (size_t i = 0; i < nOps; ++i) {
    const Op &op = prog->ops[i];
    for (int id : op.operands)
      ++reads[{id, lastWriter[id]}];
    if ((op.kind == OpKind::MatMul || op.kind == OpKind::Gemm) &&
        op.intAttr("bf16_operands", 0) && !dnnlMatMuls[i] && !skipped[i]) {
      if (!checked) {
        checked = true;
        available = bf16KernelsUsable();
      }
      if (available) {
        if (!dnnl)
          dnnl = createDnnlContext();
        bf16MatMuls[i] = Bf16MatMul::create(dnnl, *prog, op);
        if (bf16MatMuls[i])
          for (int k = 0; k < 2; ++k)
            readers[{op.operands[k], lastWriter[op.operands[k]]}].push_back(
                {i, k});
      }
    }
    for (int r : op.results)
      lastWriter[r] = static_cast<int>(i);
  }
  // Where each value's bf16 copy lives. A parameter's rounded value has a
  // copy of its own for the executor's life. An activation that a
  // round_float rounds, or that several GEMMs read, has a copy from its
  // round_float (or first reader) to its last reader, packed with the
  // others by those intervals into one block; the rest convert per GEMM
  // into the shared scratch of their position.
  struct Interval {
    size_t start, end, bytes, offset = 0;
    std::pair<int, int> key;
  };
  std::vector<Interval> intervals;
  auto isOutput = [&](int id) {
    return std::any_of(prog->outputs.begin(), prog->outputs.end(),
                       [&](const auto &o) { return o.second == id; });
  };
  // The copy of `key` is at `copy`: its round_float writes it (alone where
  // the GEMMs are the f32 result's only readers), else its first reader.
  auto place = [&](const std::pair<int, int> &key, uint16_t *copy) {
    const auto [id, writer] = key;
    const std::vector<std::pair<size_t, int>> &list = readers[key];
    const bool rounds = writer >= 0 && isBf16Round(prog->ops[writer]);
    if (rounds) {
      bf16RoundCopies[writer] = copy;
      bf16RoundCopyOnly[writer] = !isOutput(id) && reads[key] == list.size();
    }
    for (size_t j = 0; j < list.size(); ++j) {
      auto [op, k] = list[j];
      bf16Operands[op].copy[k] = copy;
      bf16Operands[op].convert[k] = !rounds && j == 0;
    }
  };
  for (auto &[key, list] : readers) {
    const auto [id, writer] = key;
    // A bf16 weight widened by a cast (a bf16 model's operand, through
    // -tessel-float-normalization): the GEMMs read the weight's own bf16
    // bytes, and the cast runs only where something else reads its result.
    if (writer >= 0 && prog->ops[writer].kind == OpKind::Cast) {
      const int src = prog->ops[writer].operands[0];
      if (B[src].dtype == DType::BF16 &&
          (B[src].kind == BufferInfo::Kind::Weight ||
           B[src].kind == BufferInfo::Kind::Constant)) {
        for (auto [op, k] : list) {
          bf16Operands[op].copy[k] = static_cast<uint16_t *>(ptrs[src]);
          bf16Operands[op].convert[k] = false;
        }
        if (!isOutput(id) && reads[key] == list.size())
          skipped[writer] = true;
        continue;
      }
    }
    const bool rounds = writer >= 0 && isBf16Round(prog->ops[writer]);
    const size_t bytes = (B[id].numel * sizeof(uint16_t) + 63) / 64 * 64;
    if (rounds &&
        B[prog->ops[writer].operands[0]].kind != BufferInfo::Kind::Arena) {
      bf16Copies.emplace_back(
          static_cast<float *>(std::aligned_alloc(64, bytes)), std::free);
      if (!bf16Copies.back())
        return Status::error("cannot allocate " + std::to_string(bytes) +
                             " bytes for the bf16 copy of buffer " +
                             std::to_string(id));
      place(key, reinterpret_cast<uint16_t *>(bf16Copies.back().get()));
      continue;
    }
    if (rounds || list.size() > 1) {
      intervals.push_back({rounds ? size_t(writer) : list.front().first,
                           list.back().first, bytes, 0, key});
      continue;
    }
    for (auto [op, k] : list)
      if (!bf16Scratch[k].reserve(B[id].numel * sizeof(uint16_t)))
        return Status::error("cannot allocate the bf16 copy of buffer " +
                             std::to_string(id));
  }
  // First fit, by start: the lowest offset clear of every placed copy whose
  // interval overlaps.
  std::sort(
      intervals.begin(), intervals.end(),
      [](const Interval &a, const Interval &b) { return a.start < b.start; });
  size_t total = 0;
  for (size_t n = 0; n < intervals.size(); ++n) {
    Interval &v = intervals[n];
    std::vector<std::pair<size_t, size_t>> taken; // [offset, offset + bytes)
    for (size_t m = 0; m < n; ++m)
      if (intervals[m].end >= v.start)
        taken.emplace_back(intervals[m].offset,
                           intervals[m].offset + intervals[m].bytes);
    std::sort(taken.begin(), taken.end());
    size_t offset = 0;
    for (auto [from, to] : taken) {
      if (offset + v.bytes <= from)
        break;
      offset = std::max(offset, to);
    }
    v.offset = offset;
    total = std::max(total, offset + v.bytes);
  }
  if (total) {
    bf16Copies.emplace_back(static_cast<float *>(std::aligned_alloc(64, total)),
                            std::free);
    if (!bf16Copies.back())
      return Status::error("cannot allocate " + std::to_string(total) +
                           " bytes for the bf16 copies of activations");
    auto *block = reinterpret_cast<unsigned char *>(bf16Copies.back().get());
    for (const Interval &v : intervals)
      place(v.key, reinterpret_cast<uint16_t *>(block + v.offset));
  }
  return Status::ok();
}

// makeStep for op i, reading its NHWC operands through NCHW copies.
Step CpuExecutor::makeStepWithLayouts(size_t i) {
  const Op &op = prog->ops[i];
  if (layouts.toPlain[i].empty())
    return makeStep(i);
  std::vector<std::pair<int, void *>> saved;
  std::vector<std::pair<LayoutReorder *, std::pair<const void *, void *>>> pre;
  for (int k : layouts.toPlain[i]) {
    const int id = op.operands[k];
    if (std::any_of(saved.begin(), saved.end(),
                    [&](auto &p) { return p.first == id; }))
      continue; // the same buffer at two positions: one copy
    LayoutReorder *reorder =
        reorderFor(prog->buffers[id].shape, layouts.layout[id], Layout::NCHW);
    void *copy = plainCopies[k].get();
    pre.push_back({reorder, {ptrs[id], copy}});
    saved.emplace_back(id, ptrs[id]);
    ptrs[id] = copy;
  }
  Step inner = makeStep(i);
  for (auto &[id, p] : saved)
    ptrs[id] = p;
  return [pre, inner] {
    for (auto &[reorder, io] : pre)
      TSL_RETURN_IF_ERROR(reorder->run(io.first, io.second));
    return inner();
  };
}

Status CpuExecutor::run() {
  setGemmThreads(threads);
  // TESSEL_PROFILE=1: time per op kind, printed to stderr after each run;
  // TESSEL_PROFILE=ops: the 20 slowest instructions too; =all: every
  // instruction, slowest first.
  static const char *profileEnv = std::getenv("TESSEL_PROFILE");
  static const bool profile = profileEnv != nullptr;
  static const bool all = profile && std::string(profileEnv) == "all";
  static const bool perOp =
      all || (profile && std::string(profileEnv) == "ops");
  std::vector<double> byKind(profile ? 256 : 0, 0.0);
  std::vector<std::pair<double, size_t>> byOp;
  const bool timed = profile || tracing;
  if (tracing)
    traceEvents.clear();
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  Clock::duration idle{};
  numerics = NumericsFinding();
  if (checkNumerics)
    held.assign(prog->buffers.size(), Finiteness::Unknown);
  // Alone, a run stops at its first finding; with peers it goes on, so
  // that every rank's collectives match.
  const bool alone = !comm || comm->size() == 1;
  for (size_t i = 0; i < steps.size(); ++i) {
    // Receives whose buffer nobody touches from here to their recv.
    if (collectives.postsBefore(i))
      if (Status s = collectives.post(*prog, i, ptrs); !s) {
        collectives.drain();
        return s;
      }
    auto t0 = timed || blocks[i] ? Clock::now() : Clock::time_point();
    Status s = steps[i]();
    const auto t1 = timed || blocks[i] ? Clock::now() : t0;
    if (blocks[i])
      idle += t1 - t0;
    if (tracing && !skipped[i]) {
      using us = std::chrono::duration<double, std::micro>;
      traceEvents.push_back({static_cast<int>(i),
                             us(t0.time_since_epoch()).count(),
                             us(t1 - t0).count()});
    }
    if (profile) {
      double ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
      byKind[static_cast<int>(prog->ops[i].kind) & 255] += ms;
      if (perOp)
        byOp.emplace_back(ms, i);
    }
    if (!s) {
      collectives.drain(); // nothing in flight may outlive the run
      return Status::error(where(i) + ": " + s.message());
    }
    if (checkNumerics && !numerics.found) {
      checkCompleted(i);
      if (numerics.found && alone)
        break;
    }
  }
  if (Status s = collectives.finish(*prog); !s) {
    collectives.drain();
    return s;
  }
  {
    using us = std::chrono::duration<double, std::micro>;
    runStats.wallUs = us(Clock::now() - start).count();
    runStats.idleUs = us(idle).count();
  }
  if (profile) {
    std::fprintf(stderr, "tessel profile (ms):");
    for (int k = 0; k < 256; ++k)
      if (byKind[k] > 0)
        if (auto kind = opKindFromInt(k))
          std::fprintf(stderr, " %s=%.2f", opKindName(*kind), byKind[k]);
    std::fprintf(stderr, "\n");
    std::sort(byOp.rbegin(), byOp.rend());
    for (size_t j = 0; j < std::min<size_t>(byOp.size(), all ? SIZE_MAX : 20);
         ++j) {
      const Op &op = prog->ops[byOp[j].second];
      std::string shapes;
      for (int id : op.operands)
        shapes += (shapes.empty() ? "" : ", ") +
                  shapeToString(prog->buffers[id].shape);
      const char *kernel = packedGemms[byOp[j].second]     ? " on packed B"
                           : packedGathers[byOp[j].second] ? " from packed B"
                                                           : "";
      std::fprintf(stderr, "  %8.3f ms  #%zu %s '%s' (%s)%s\n", byOp[j].first,
                   byOp[j].second, opKindName(op.kind), op.name.c_str(),
                   shapes.c_str(), kernel);
    }
  }
  return Status::ok();
}

bool CpuExecutor::setCheckNumerics(bool on) {
  checkNumerics = on;
  if (!on || !completes.empty())
    return true;
  const size_t n = prog->ops.size();
  completes.assign(n, {});
  reads.assign(n, {});
  readOnlyHeld.assign(prog->buffers.size(), Finiteness::Unknown);
  isInput.assign(prog->buffers.size(), false);
  for (const auto &[name, id] : prog->inputs)
    isInput[id] = true;
  for (size_t i = 0; i < n; ++i) {
    if (skipped[i])
      continue; // folded into another op, which writes its result
    const Op &op = prog->ops[i];
    reads[i] = op.operands;
    if (!fusions.empty() && fusions[i].addend >= 0)
      reads[i].push_back(fusions[i].addend);
    const int64_t wait = collectives.completedBy(i);
    const size_t at = wait >= 0 ? static_cast<size_t>(wait) : i;
    // The buffer the kernel writes where a fusion moved it (a conv's
    // folded relu or add, a matmul's bias and gelu); none where a
    // round_float writes its bf16 copy alone.
    int moved = !dnnlWrites.empty() && dnnlWrites[i] >= 0 ? dnnlWrites[i]
                : !matmulWrites.empty() && matmulWrites[i] >= 0
                    ? matmulWrites[i]
                    : -1;
    if (!bf16RoundCopyOnly.empty() && bf16RoundCopyOnly[i])
      continue;
    for (size_t r = 0; r < op.results.size(); ++r)
      completes[at].push_back({i, static_cast<int>(r),
                               moved >= 0 && r == 0 ? moved : op.results[r]});
  }
  return true;
}

Finiteness CpuExecutor::finitenessOf(int id) {
  const BufferInfo &b = prog->buffers[id];
  if (b.dtype != DType::F32)
    return Finiteness::Finite;
  if (held[id] != Finiteness::Unknown)
    return held[id];
  if (b.isReadOnly() && readOnlyHeld[id] != Finiteness::Unknown)
    return held[id] = readOnlyHeld[id];
  int64_t first = 0;
  held[id] = scanFinite(static_cast<const float *>(ptrs[id]), b.numel, first);
  if (b.isReadOnly())
    readOnlyHeld[id] = held[id];
  return held[id];
}

void CpuExecutor::checkCompleted(size_t j) {
  for (const Completed &c : completes[j]) {
    const BufferInfo &b = prog->buffers[c.id];
    if (b.dtype != DType::F32)
      continue;
    int64_t first = 0;
    const Finiteness f =
        scanFinite(static_cast<const float *>(ptrs[c.id]), b.numel, first);
    held[c.id] = f;
    if (f == Finiteness::Finite)
      continue;
    // Made here, or carried in from an operand: a NaN from a source (a
    // weight, constant, state or input: no instruction of the run wrote
    // it) is a finding at its first reader; a NaN from an earlier result
    // was found there; an infinity from any operand is carried (an
    // additive mask's -inf).
    int source = -1;
    bool carried = false;
    for (size_t k = 0; k < reads[c.op].size(); ++k) {
      const int id = reads[c.op][k];
      const Finiteness o = finitenessOf(id);
      if (f == Finiteness::NaN && o == Finiteness::NaN) {
        const BufferInfo &ob = prog->buffers[id];
        if (ob.kind != BufferInfo::Kind::Arena || isInput[id]) {
          if (source < 0)
            source = static_cast<int>(k);
        } else {
          carried = true;
        }
      } else if (f == Finiteness::Inf && o != Finiteness::Finite) {
        carried = true;
      }
    }
    if (carried && source < 0)
      continue;
    numerics.found = true;
    numerics.op = static_cast<int>(c.op);
    numerics.result = c.result;
    numerics.element = first;
    numerics.plainLayout =
        layouts.layout.empty() || layouts.layout[c.id] == Layout::NCHW;
    numerics.value = static_cast<const float *>(ptrs[c.id])[first];
    numerics.sourceOperand = source;
    return;
  }
}

Step CpuExecutor::makeStep(size_t i) {
  const Op &op = prog->ops[i];
  KernelContext ctx{{*prog, op, i, ptrs}, pool, *this};
  return cpuKernels().find(op.kind)(ctx);
}

} // namespace

Status createCpuExecutor(std::shared_ptr<const Program> program,
                         const ExecutorOptions &options,
                         std::unique_ptr<Executor> &out) {
  auto e = std::make_unique<CpuExecutor>(std::move(program), options.threads,
                                         options.comm, options.overlap);
  TSL_RETURN_IF_ERROR(e->init());
  out = std::move(e);
  return Status::ok();
}

} // namespace tessel::runtime::cpu
