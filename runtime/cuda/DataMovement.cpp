//===- DataMovement.cpp - Copies, views and gather on CUDA ----------------===//
//
// reshape and copy are device copies (none when in place); transpose, slice,
// expand, concat and split are strided copies (launchStridedCopy); gather
// and gather_elements check their indices first (see
// DeviceResources::addGatherCheck);
// chunk_fetch copies host chunks on the copy stream (DeviceResources::moves).
//
//===----------------------------------------------------------------------===//
#include "tessel/ops/Broadcast.h"
#include "CudaKernelRegistry.h"
#include "CudaKernels.h"
#include "CudaStatus.h"
#include "IndexPlan.h"

#include <algorithm>

namespace tessel::runtime::cuda {

Step deviceCopyStep(const void *x, void *y, size_t bytes, cudaStream_t s) {
  // cudaMemcpyDefault: either side may be a state in pinned host memory (an
  // assign into a host chunk's parameter), the direction follows from the
  // addresses (unified addressing).
  return [=] {
    if (x != y && bytes)
      TSL_CUDA(cudaMemcpyAsync(y, x, bytes, cudaMemcpyDefault, s),
               "cudaMemcpyAsync");
    return Status::ok();
  };
}

namespace {

/// A plain device-to-device copy of the first operand into the result.
Status makeCopy(const KernelContext &ctx, Step &out) {
  out = deviceCopyStep(ctx.operand(0), ctx.result(0), ctx.in(0).bytes,
                       ctx.stream);
  return Status::ok();
}

/// The first instruction after `index` that reads or writes buffer `id`,
/// or ops.size() when none does.
size_t firstUseAfter(const Program &p, size_t index, int id) {
  for (size_t j = index + 1; j < p.ops.size(); ++j) {
    const Op &op = p.ops[j];
    if (std::find(op.operands.begin(), op.operands.end(), id) !=
            op.operands.end() ||
        std::find(op.results.begin(), op.results.end(), id) != op.results.end())
      return j;
  }
  return p.ops.size();
}

bool isOutput(const Program &p, int id) {
  return std::any_of(p.outputs.begin(), p.outputs.end(),
                     [&](const auto &o) { return o.second == id; });
}

/// chunk_fetch (Gemini): a copy of each parameter of a host chunk into the
/// arena. A parameter kept in host memory (a STATE with Buffer.host: pinned
/// host memory) is copied on the copy stream (DeviceResources::moves):
/// when the compute stream reaches the fetch it records an event that the
/// copy stream waits on (what ran before, the update that wrote the
/// parameter and the last reader of the arena bytes the copy takes
/// included), the copies follow (cudaMemcpyAsync, host to device) and an
/// event after them, which the compute stream waits on right before the
/// first instruction that reads a copy: the instructions in between, which
/// by the buffer planner touch none of the copies' bytes, overlap the copy.
/// The CPU backend orders it the same way, synchronously (a memcpy at the
/// fetch). A copy that no instruction reads (its parameter is not read in
/// this stay: its bytes may be reused at once) is not made. A parameter in
/// device memory is copied on the compute stream.
Status makeChunkFetch(const KernelContext &ctx, Step &out) {
  const Program &p = ctx.program;
  struct Copy {
    const void *src;
    void *dst;
    size_t bytes;
  };
  std::vector<Copy> fromHost;
  std::vector<Step> onCompute;
  size_t firstReader = p.ops.size();
  for (size_t i = 0; i < ctx.op.operands.size(); ++i) {
    const BufferInfo &x = ctx.in(i);
    const int copy = ctx.op.results[i];
    const size_t first = firstUseAfter(p, ctx.index, copy);
    if (x.kind != BufferInfo::Kind::State || !x.host || isOutput(p, copy)) {
      onCompute.push_back(deviceCopyStep(ctx.operand(i), ctx.result(i),
                                         x.bytes, ctx.stream));
      continue;
    }
    if (first == p.ops.size() || !x.bytes)
      continue; // never read
    fromHost.push_back({ctx.operand(i), ctx.result(i), x.bytes});
    firstReader = std::min(firstReader, first);
  }
  cudaStream_t compute = ctx.stream, copies = nullptr;
  cudaEvent_t ready = nullptr, done = nullptr;
  if (!fromHost.empty()) {
    ChunkMoves &moves = ctx.resources.moves;
    TSL_CUDA(moves.copyStream(copies), "creating the chunk copy stream");
    TSL_CUDA(moves.newEvent(ready), "creating a chunk fetch's event");
    TSL_CUDA(moves.newEvent(done), "creating a chunk fetch's event");
    moves.waits.emplace_back(firstReader, done);
  }
  out = [=, fromHost = std::move(fromHost),
         onCompute = std::move(onCompute)]() -> Status {
    if (!fromHost.empty()) {
      TSL_CUDA(cudaEventRecord(ready, compute), "cudaEventRecord");
      TSL_CUDA(cudaStreamWaitEvent(copies, ready, 0), "cudaStreamWaitEvent");
      for (const Copy &c : fromHost)
        TSL_CUDA(cudaMemcpyAsync(c.dst, c.src, c.bytes, cudaMemcpyDefault,
                                 copies),
                 "cudaMemcpyAsync of a host chunk");
      TSL_CUDA(cudaEventRecord(done, copies), "cudaEventRecord");
    }
    for (const Step &copy : onCompute)
      if (Status s = copy(); !s)
        return s;
    return Status::ok();
  };
  return Status::ok();
}

/// The result gathered from the first operand through `ix` (element
/// offsets into the operand, by result index).
Step stridedCopyStep(const KernelContext &ctx, const StridedIndex &ix) {
  const void *x = ctx.operand(0);
  void *y = ctx.result(0);
  const size_t es = dtypeSize(ctx.in(0).dtype);
  return launchStep(
      ctx, [=](cudaStream_t s) { return launchStridedCopy(es, x, y, ix, s); });
}

Status makeTranspose(const KernelContext &ctx, Step &out) {
  const BufferInfo &a = ctx.in(0);
  const std::vector<int64_t> inStr = rowMajorStrides(a.shape);
  Shape outShape;
  std::vector<int64_t> srcStr;
  for (int64_t pd : ctx.op.perm) {
    outShape.push_back(a.shape[pd]);
    srcStr.push_back(inStr[pd]);
  }
  StridedIndex ix;
  TSL_RETURN_IF_ERROR(stridedIndexer(outShape, {srcStr}, ix));
  out = stridedCopyStep(ctx, ix);
  return Status::ok();
}

Status makeSlice(const KernelContext &ctx, Step &out) {
  const Op &op = ctx.op;
  const BufferInfo &a = ctx.in(0), &r = ctx.out(0);
  const std::vector<int64_t> inStr = rowMajorStrides(a.shape);
  int64_t offset = 0;
  std::vector<int64_t> srcStr(a.shape.size());
  for (size_t d = 0; d < a.shape.size(); ++d) {
    offset += op.starts[d] * inStr[d];
    srcStr[d] = op.steps[d] * inStr[d];
  }
  StridedIndex ix;
  TSL_RETURN_IF_ERROR(stridedIndexer(r.shape, {srcStr}, ix));
  const size_t es = dtypeSize(a.dtype);
  const bool empty = r.numel == 0;
  const void *x = ctx.operand(0);
  void *y = ctx.result(0);
  cudaStream_t s = ctx.stream;
  out = [=] {
    const char *src =
        static_cast<const char *>(x) + offset * static_cast<int64_t>(es);
    // Empty, or a view the buffer planner placed where the slice lies in
    // its operand.
    if (empty || src == y)
      return Status::ok();
    return launched(launchStridedCopy(es, src, y, ix, s), "slice");
  };
  return Status::ok();
}

/// concat (`concat`) or split along op.axis: part i, [outer, size_i,
/// inner], is columns [prefix_i, prefix_i + size_i) of the rows of the whole
/// tensor (the result of concat, the operand of split) viewed as
/// [outer, len * inner].
Status makeParts(const KernelContext &ctx, Step &out, bool concat) {
  const Op &op = ctx.op;
  const BufferInfo &whole = concat ? ctx.out(0) : ctx.in(0);
  char *w = static_cast<char *>(concat ? ctx.result(0) : ctx.operand(0));
  const AxisView v = aroundAxis(whole.shape, op.axis);
  const size_t es = dtypeSize(whole.dtype);
  struct Piece {
    const void *src;
    void *dst;
    StridedIndex ix;
  };
  std::vector<Piece> pieces;
  int64_t prefix = 0;
  const size_t parts = concat ? op.operands.size() : op.results.size();
  for (size_t i = 0; i < parts; ++i) {
    const int64_t size = concat ? ctx.in(i).shape[op.axis] : op.sizes[i];
    void *part = concat ? ctx.operand(i) : ctx.result(i);
    char *at = w + prefix * v.inner * static_cast<int64_t>(es);
    Piece pc;
    pc.src = concat ? part : at;
    pc.dst = concat ? at : part;
    // Source strides, then (concat) the result's; a split writes its part
    // contiguously.
    std::vector<std::vector<int64_t>> strides = {{v.len * v.inner, 1}};
    if (concat)
      strides.insert(strides.begin(), std::vector<int64_t>{size * v.inner, 1});
    TSL_RETURN_IF_ERROR(
        stridedIndexer({v.outer, size * v.inner}, strides, pc.ix));
    prefix += size;
    pieces.push_back(pc);
  }
  const char *name = opKindName(op.kind);
  cudaStream_t s = ctx.stream;
  out = [=] {
    for (const Piece &pc : pieces)
      TSL_RETURN_IF_ERROR(
          launched(launchStridedCopy(es, pc.src, pc.dst, pc.ix, s), name));
    return Status::ok();
  };
  return Status::ok();
}

Status makeConcat(const KernelContext &ctx, Step &out) {
  return makeParts(ctx, out, true);
}

Status makeSplit(const KernelContext &ctx, Step &out) {
  return makeParts(ctx, out, false);
}

Status makeExpand(const KernelContext &ctx, Step &out) {
  const BufferInfo &a = ctx.in(0), &r = ctx.out(0);
  StridedIndex ix;
  TSL_RETURN_IF_ERROR(stridedIndexer(
      r.shape, {broadcastStrides(a.shape, r.shape.size(), r.shape)}, ix));
  out = stridedCopyStep(ctx, ix);
  return Status::ok();
}

/// The step of gather or gather_elements: the indices checked against the
/// size `dim` of data's axis (DeviceResources::addGatherCheck), then
/// launch(x, indexType, indices, numIndices, y, s) gathers.
template <typename Launch>
Step checkedGatherStep(const KernelContext &ctx, int64_t dim, Launch launch) {
  const BufferInfo &idx = ctx.in(1);
  const LateAddress slot =
      ctx.resources.addGatherCheck(ctx.index, ctx.op, dim);
  const void *x = ctx.operand(0), *indices = ctx.operand(1);
  void *y = ctx.result(0);
  const DType indexType = idx.dtype;
  const int64_t numIndices = idx.numel;
  const char *name = opKindName(ctx.op.kind);
  cudaStream_t s = ctx.stream;
  return [=] {
    unsigned long long *sl = slot.get<unsigned long long>();
    TSL_RETURN_IF_ERROR(
        launched(launchGatherCheck(indexType, indices, numIndices, dim, sl, s),
                 name));
    return launched(launch(x, indexType, indices, numIndices, y, s), name);
  };
}

Status makeGather(const KernelContext &ctx, Step &out) {
  const AxisView v = aroundAxis(ctx.in(0).shape, ctx.op.axis);
  const int64_t outer = v.outer, dim = v.len, inner = v.inner;
  const size_t es = dtypeSize(ctx.in(0).dtype);
  out = checkedGatherStep(ctx, dim,
                          [=](const void *x, DType indexType,
                              const void *indices, int64_t numIndices, void *y,
                              cudaStream_t s) {
                            return launchGather(es, x, indexType, indices,
                                                numIndices, outer, dim, inner,
                                                y, s);
                          });
  return Status::ok();
}

/// The indices are checked as gather's are (one dim: data's axis); the
/// kernel reads data at each index's own position in every other dim.
Status makeGatherElements(const KernelContext &ctx, Step &out) {
  const Op &op = ctx.op;
  const BufferInfo &a = ctx.in(0), &idx = ctx.in(1);
  std::vector<int64_t> strides = rowMajorStrides(a.shape);
  const int64_t axisStride = strides[op.axis], dim = a.shape[op.axis];
  strides[op.axis] = 0;
  StridedIndex ix;
  TSL_RETURN_IF_ERROR(stridedIndexer(idx.shape, {strides}, ix));
  const size_t es = dtypeSize(a.dtype);
  const Indexer wide = ix.wide; // gather_elements' kernel indexes in 64 bits
  out = checkedGatherStep(
      ctx, dim,
      [=](const void *x, DType indexType, const void *indices, int64_t, void *y,
          cudaStream_t s) {
        return launchGatherElements(es, x, indexType, indices, wide, dim,
                                    axisStride, y, s);
      });
  return Status::ok();
}

} // namespace

void registerDataMovementKernels(KernelRegistry &registry) {
  registerFamily(registry, kDataMovementKinds, [](OpKind k) -> KernelFactory {
    switch (k) {
    case OpKind::Reshape:
    case OpKind::Copy:
      return makeCopy;
    case OpKind::ChunkFetch:
      return makeChunkFetch;
    case OpKind::Transpose:
      return makeTranspose;
    case OpKind::Slice:
      return makeSlice;
    case OpKind::Concat:
      return makeConcat;
    case OpKind::Split:
      return makeSplit;
    case OpKind::Expand:
      return makeExpand;
    case OpKind::Gather:
      return makeGather;
    case OpKind::GatherElements:
      return makeGatherElements;
    default:
      return nullptr;
    }
  });
}

} // namespace tessel::runtime::cuda
