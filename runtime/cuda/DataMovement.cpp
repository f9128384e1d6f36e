//===- DataMovement.cpp - Copies, views and gather on CUDA ----------------===//
//
// reshape and copy are device copies (none when in place); transpose, slice,
// expand, concat and split are strided copies (launchStridedCopy); gather
// checks its indices first (see DeviceResources::addGatherCheck).
//
//===----------------------------------------------------------------------===//
#include "Broadcast.h"
#include "CudaKernelRegistry.h"
#include "CudaKernels.h"
#include "CudaStatus.h"
#include "IndexPlan.h"

namespace tessel::runtime::cuda {

Step deviceCopyStep(const void *x, void *y, size_t bytes, cudaStream_t s) {
  return [=] {
    if (x != y && bytes)
      TSL_CUDA(cudaMemcpyAsync(y, x, bytes, cudaMemcpyDeviceToDevice, s),
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

/// chunk_fetch (Gemini): every buffer of a CUDA run, the states included,
/// is device memory, so the chunk's move is a device-to-device copy per
/// parameter on the one stream (numbers as on the CPU). Host-resident
/// chunks (pinned host states) and a copy stream are not written yet
/// (docs/plugins.md#gemini).
Status makeChunkFetch(const KernelContext &ctx, Step &out) {
  std::vector<Step> copies;
  for (size_t i = 0; i < ctx.op.operands.size(); ++i)
    copies.push_back(deviceCopyStep(ctx.operand(i), ctx.result(i),
                                    ctx.in(i).bytes, ctx.stream));
  out = [copies = std::move(copies)] {
    for (const Step &copy : copies)
      if (Status s = copy(); !s)
        return s;
    return Status::ok();
  };
  return Status::ok();
}

/// The result gathered from the first operand through `ix` (element
/// offsets into the operand, by result index).
Step stridedCopyStep(const KernelContext &ctx, const Indexer &ix) {
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
  Indexer ix;
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
  Indexer ix;
  TSL_RETURN_IF_ERROR(stridedIndexer(r.shape, {srcStr}, ix));
  const size_t es = dtypeSize(a.dtype);
  const bool empty = r.numel == 0;
  const void *x = ctx.operand(0);
  void *y = ctx.result(0);
  cudaStream_t s = ctx.stream;
  out = [=] {
    if (empty)
      return Status::ok();
    return launched(launchStridedCopy(es,
                                      static_cast<const char *>(x) +
                                          offset * static_cast<int64_t>(es),
                                      y, ix, s),
                    "slice");
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
  const cpu::AxisView v = cpu::aroundAxis(whole.shape, op.axis);
  const size_t es = dtypeSize(whole.dtype);
  struct Piece {
    const void *src;
    void *dst;
    Indexer ix;
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
  Indexer ix;
  TSL_RETURN_IF_ERROR(stridedIndexer(
      r.shape, {cpu::broadcastStrides(a.shape, r.shape.size(), r.shape)}, ix));
  out = stridedCopyStep(ctx, ix);
  return Status::ok();
}

Status makeGather(const KernelContext &ctx, Step &out) {
  const Op &op = ctx.op;
  const BufferInfo &a = ctx.in(0), &idx = ctx.in(1);
  const cpu::AxisView v = cpu::aroundAxis(a.shape, op.axis);
  const int64_t outer = v.outer, dim = v.len, inner = v.inner;
  const LateAddress slot = ctx.resources.addGatherCheck(ctx.index, op);
  const void *x = ctx.operand(0), *indices = ctx.operand(1);
  void *y = ctx.result(0);
  const size_t es = dtypeSize(a.dtype);
  const DType indexType = idx.dtype;
  const int64_t numIndices = idx.numel;
  cudaStream_t s = ctx.stream;
  out = [=] {
    unsigned long long *sl = slot.get<unsigned long long>();
    TSL_RETURN_IF_ERROR(
        launched(launchGatherCheck(indexType, indices, numIndices, dim, sl, s),
                 "gather"));
    return launched(launchGather(es, x, indexType, indices, numIndices, outer,
                                 dim, inner, y, s),
                    "gather");
  };
  return Status::ok();
}

} // namespace

void registerDataMovementKernels(KernelRegistry &registry) {
  addKernels(registry, {{OpKind::Reshape, makeCopy},
                        {OpKind::Copy, makeCopy},
                        {OpKind::ChunkFetch, makeChunkFetch},
                        {OpKind::Transpose, makeTranspose},
                        {OpKind::Slice, makeSlice},
                        {OpKind::Concat, makeConcat},
                        {OpKind::Split, makeSplit},
                        {OpKind::Expand, makeExpand},
                        {OpKind::Gather, makeGather}});
}

} // namespace tessel::runtime::cuda
