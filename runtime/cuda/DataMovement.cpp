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

namespace {

/// A plain device-to-device copy of the first operand into the result.
Status makeCopy(const KernelContext &ctx, Step &out) {
  const void *x = ctx.operand(0);
  void *y = ctx.result(0);
  const size_t bytes = ctx.in(0).bytes;
  cudaStream_t s = ctx.stream;
  out = [=] {
    if (x != y && bytes)
      TSL_CUDA(cudaMemcpyAsync(y, x, bytes, cudaMemcpyDeviceToDevice, s),
               "cudaMemcpyAsync");
    return Status::ok();
  };
  return Status::ok();
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
  const void *x = ctx.operand(0);
  void *y = ctx.result(0);
  const size_t es = dtypeSize(a.dtype);
  cudaStream_t s = ctx.stream;
  out = [=] {
    return launched(launchStridedCopy(es, x, y, ix, s), "transpose");
  };
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

Status makeConcat(const KernelContext &ctx, Step &out) {
  // Input k fills columns [prefix, prefix + size_k) of each of the `outer`
  // rows of the result viewed as [outer, axis * inner].
  const Op &op = ctx.op;
  const Shape &os = ctx.out(0).shape;
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < op.axis; ++d)
    outer *= os[d];
  for (size_t d = op.axis + 1; d < os.size(); ++d)
    inner *= os[d];
  const size_t es = dtypeSize(ctx.out(0).dtype);
  struct Piece {
    const void *src;
    int64_t dstOff; // elements
    Indexer ix;
  };
  std::vector<Piece> pieces;
  int64_t prefix = 0;
  for (size_t i = 0; i < op.operands.size(); ++i) {
    const int64_t size = ctx.in(i).shape[op.axis];
    Piece pc;
    pc.src = ctx.operand(i);
    pc.dstOff = prefix * inner;
    TSL_RETURN_IF_ERROR(
        stridedIndexer({outer, size * inner},
                       {{size * inner, 1}, {os[op.axis] * inner, 1}}, pc.ix));
    prefix += size;
    pieces.push_back(pc);
  }
  void *y = ctx.result(0);
  cudaStream_t s = ctx.stream;
  out = [=] {
    for (const Piece &pc : pieces)
      TSL_RETURN_IF_ERROR(
          launched(launchStridedCopy(es, pc.src,
                                     static_cast<char *>(y) +
                                         pc.dstOff * static_cast<int64_t>(es),
                                     pc.ix, s),
                   "concat"));
    return Status::ok();
  };
  return Status::ok();
}

Status makeSplit(const KernelContext &ctx, Step &out) {
  const Op &op = ctx.op;
  const Shape &is = ctx.in(0).shape;
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < op.axis; ++d)
    outer *= is[d];
  for (size_t d = op.axis + 1; d < is.size(); ++d)
    inner *= is[d];
  const size_t es = dtypeSize(ctx.in(0).dtype);
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
    pc.dst = ctx.result(i);
    pc.srcOff = prefix * inner;
    TSL_RETURN_IF_ERROR(stridedIndexer({outer, size * inner},
                                       {{is[op.axis] * inner, 1}}, pc.ix));
    prefix += size;
    pieces.push_back(pc);
  }
  const void *x = ctx.operand(0);
  cudaStream_t s = ctx.stream;
  out = [=] {
    for (const Piece &pc : pieces)
      TSL_RETURN_IF_ERROR(
          launched(launchStridedCopy(es,
                                     static_cast<const char *>(x) +
                                         pc.srcOff * static_cast<int64_t>(es),
                                     pc.dst, pc.ix, s),
                   "split"));
    return Status::ok();
  };
  return Status::ok();
}

Status makeExpand(const KernelContext &ctx, Step &out) {
  const BufferInfo &a = ctx.in(0), &r = ctx.out(0);
  Indexer ix;
  TSL_RETURN_IF_ERROR(stridedIndexer(
      r.shape, {cpu::broadcastStrides(a.shape, r.shape.size(), r.shape)}, ix));
  const void *x = ctx.operand(0);
  void *y = ctx.result(0);
  const size_t es = dtypeSize(a.dtype);
  cudaStream_t s = ctx.stream;
  out = [=] { return launched(launchStridedCopy(es, x, y, ix, s), "expand"); };
  return Status::ok();
}

Status makeGather(const KernelContext &ctx, Step &out) {
  const Op &op = ctx.op;
  const BufferInfo &a = ctx.in(0), &idx = ctx.in(1);
  int64_t outer = 1, inner = 1;
  const int64_t dim = a.shape[op.axis];
  for (int64_t d = 0; d < op.axis; ++d)
    outer *= a.shape[d];
  for (size_t d = op.axis + 1; d < a.shape.size(); ++d)
    inner *= a.shape[d];
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
  registry.add(OpKind::Reshape, makeCopy);
  registry.add(OpKind::Copy, makeCopy);
  registry.add(OpKind::Transpose, makeTranspose);
  registry.add(OpKind::Slice, makeSlice);
  registry.add(OpKind::Concat, makeConcat);
  registry.add(OpKind::Split, makeSplit);
  registry.add(OpKind::Expand, makeExpand);
  registry.add(OpKind::Gather, makeGather);
}

} // namespace tessel::runtime::cuda
