//===- DataMovement.cpp - gather, transpose, slice, concat, split, expand -===//
#include "KernelRegistry.h"
#include "KernelResources.h"
#include "Kernels.h"
#include "PackedGemm.h"
#include "ThreadPool.h"
#include "tessel/ops/Broadcast.h"
#include "tessel/ops/DTypeDispatch.h"

#include <cstring>
#include <tuple>
#include <vector>

namespace tessel::runtime::cpu {

namespace {

constexpr int64_t kGrain = 32768;

template <typename T>
void stridedCopyTyped(const T *src, const StridedPlan &plan, T *dst,
                      ThreadPool &pool) {
  const int64_t inner = plan.strides.back()[0];
  pool.parallelFor(plan.total, kGrain, [&](int64_t b, int64_t e) {
    forEachRow(plan, b, e, [&](const int64_t *off, int64_t n) {
      const T *ps = src + off[0];
      T *pd = dst + off[1];
      if (inner == 1) {
        std::memcpy(pd, ps, n * sizeof(T));
      } else if (inner == 0) {
        const T v = *ps;
        for (int64_t i = 0; i < n; ++i)
          pd[i] = v;
      } else {
        for (int64_t i = 0; i < n; ++i)
          pd[i] = ps[i * inner];
      }
    });
  });
}

/// 2-D tiled transpose of a [rows, cols] matrix with a source row stride,
/// for copies whose innermost source stride is not 1.
template <typename T>
bool tryTiledTranspose(const T *src, const StridedPlan &plan, T *dst,
                       ThreadPool &pool) {
  // Pattern: merged dims [..., A, B] with source strides [..., 1, sB]:
  // dst[a][b] = src[a + b * sB] within each outer block.
  size_t r = plan.dims.size();
  if (r < 2 || plan.strides[r - 2][0] != 1 || plan.strides[r - 1][0] == 1)
    return false;
  const int64_t rowsA = plan.dims[r - 2], colsB = plan.dims[r - 1];
  const int64_t sB = plan.strides[r - 1][0];
  int64_t outer = 1;
  for (size_t d = 0; d + 2 < r; ++d)
    outer *= plan.dims[d];
  // Source offset of each outer block.
  std::vector<int64_t> outerOff(outer, 0);
  {
    std::vector<int64_t> idx(r, 0);
    for (int64_t o = 0; o < outer; ++o) {
      int64_t rem = o, off = 0;
      for (size_t d = r - 2; d-- > 0;) {
        off += (rem % plan.dims[d]) * plan.strides[d][0];
        rem /= plan.dims[d];
      }
      outerOff[o] = off;
    }
  }
  constexpr int64_t kTile = 32;
  const int64_t tilesA = (rowsA + kTile - 1) / kTile;
  pool.parallelFor(outer * tilesA, 4, [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) {
      const int64_t o = t / tilesA, a0 = (t % tilesA) * kTile;
      const int64_t a1 = std::min(rowsA, a0 + kTile);
      const T *s = src + outerOff[o];
      T *d = dst + o * rowsA * colsB;
      for (int64_t b0 = 0; b0 < colsB; b0 += kTile) {
        const int64_t b1 = std::min(colsB, b0 + kTile);
        for (int64_t a = a0; a < a1; ++a)
          for (int64_t bb = b0; bb < b1; ++bb)
            d[a * colsB + bb] = s[a + bb * sB];
      }
    }
  });
  return true;
}

} // namespace

void stridedCopy(size_t elemSize, const void *src, const Shape &dims,
                 const std::vector<int64_t> &srcStrides, void *dst,
                 ThreadPool &pool) {
  StridedPlan plan = makeStridedPlan(dims, {srcStrides});
  if (plan.total == 0)
    return;
  visitElementSize(elemSize, 0, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (sizeof(T) >= 4)
      if (tryTiledTranspose(static_cast<const T *>(src), plan,
                            static_cast<T *>(dst), pool))
        return 0;
    stridedCopyTyped(static_cast<const T *>(src), plan, static_cast<T *>(dst),
                     pool);
    return 0;
  });
}

namespace {
/// Index j of `indices` (i64, else i32) wrapped into [0, dim), in `out`;
/// an error naming `op`, the index and its position where it lies outside
/// [-dim, dim).
Status wrappedIndex(const char *op, DType indexType, const void *indices,
                    int64_t j, int64_t dim, int64_t &out) {
  const int64_t i = indexType == DType::I64
                        ? static_cast<const int64_t *>(indices)[j]
                        : static_cast<const int32_t *>(indices)[j];
  if (i < -dim || i >= dim)
    return Status::error(std::string(op) + ": index " + std::to_string(i) +
                         " at position " + std::to_string(j) +
                         " is out of range for an axis of size " +
                         std::to_string(dim));
  out = i < 0 ? i + dim : i;
  return Status::ok();
}
} // namespace

Status gatherKernel(size_t elemSize, const void *data, const Shape &dataShape,
                    DType indexType, const void *indices, int64_t numIndices,
                    int64_t axis, void *out) {
  const AxisView v = aroundAxis(dataShape, axis);
  const int64_t outer = v.outer, dim = v.len, inner = v.inner;
  std::vector<int64_t> wrapped(numIndices);
  for (int64_t j = 0; j < numIndices; ++j)
    TSL_RETURN_IF_ERROR(
        wrappedIndex("gather", indexType, indices, j, dim, wrapped[j]));
  const size_t row = inner * elemSize;
  const char *src = static_cast<const char *>(data);
  char *dst = static_cast<char *>(out);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < numIndices; ++j)
      std::memcpy(dst + (o * numIndices + j) * row,
                  src + (o * dim + wrapped[j]) * row, row);
  return Status::ok();
}

namespace {

template <typename T>
void gatherElementsTyped(const T *data, const std::vector<int64_t> &strides,
                         const std::vector<int64_t> &wrapped,
                         const Shape &idxShape, int64_t axis, T *out) {
  const int64_t rank = static_cast<int64_t>(idxShape.size());
  std::vector<int64_t> coord(rank, 0);
  for (size_t j = 0; j < wrapped.size(); ++j) {
    int64_t off = 0;
    for (int64_t d = 0; d < rank; ++d)
      off += (d == axis ? wrapped[j] : coord[d]) * strides[d];
    out[j] = data[off];
    for (int64_t d = rank - 1; d >= 0 && ++coord[d] == idxShape[d]; --d)
      coord[d] = 0;
  }
}

} // namespace

Status gatherElementsKernel(size_t elemSize, const void *data,
                            const Shape &dataShape, DType indexType,
                            const void *indices, const Shape &idxShape,
                            int64_t axis, void *out) {
  const int64_t dim = dataShape[axis], n = numElements(idxShape);
  std::vector<int64_t> wrapped(n);
  for (int64_t j = 0; j < n; ++j)
    TSL_RETURN_IF_ERROR(wrappedIndex("gather_elements", indexType, indices, j,
                                     dim, wrapped[j]));
  std::vector<int64_t> strides(dataShape.size(), 1);
  for (size_t d = dataShape.size(); d-- > 1;)
    strides[d - 1] = strides[d] * dataShape[d];
  visitElementSize(elemSize, 0, [&](auto tag) {
    using T = typename decltype(tag)::type;
    gatherElementsTyped(static_cast<const T *>(data), strides, wrapped,
                        idxShape, axis, static_cast<T *>(out));
    return 0;
  });
  return Status::ok();
}

void transposeKernel(size_t elemSize, const void *x, const Shape &shape,
                     const std::vector<int64_t> &perm, void *y,
                     ThreadPool &pool) {
  std::vector<int64_t> inStr(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;)
    inStr[d - 1] = inStr[d] * shape[d];
  Shape outShape;
  std::vector<int64_t> srcStr;
  for (int64_t p : perm) {
    outShape.push_back(shape[p]);
    srcStr.push_back(inStr[p]);
  }
  stridedCopy(elemSize, x, outShape, srcStr, y, pool);
}

void sliceKernel(size_t elemSize, const void *x, const Shape &shape,
                 const std::vector<int64_t> &starts,
                 const std::vector<int64_t> &steps, void *y,
                 const Shape &outShape, ThreadPool &pool) {
  if (numElements(outShape) == 0)
    return;
  std::vector<int64_t> inStr(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;)
    inStr[d - 1] = inStr[d] * shape[d];
  int64_t offset = 0;
  std::vector<int64_t> srcStr(shape.size());
  for (size_t d = 0; d < shape.size(); ++d) {
    offset += starts[d] * inStr[d];
    srcStr[d] = steps[d] * inStr[d];
  }
  const char *src = static_cast<const char *>(x) + offset * elemSize;
  // A view the buffer planner placed where the slice lies in its operand.
  if (src == y)
    return;
  stridedCopy(elemSize, src, outShape, srcStr, y, pool);
}

void concatKernel(size_t elemSize, const std::vector<const void *> &inputs,
                  const std::vector<const Shape *> &shapes, int64_t axis,
                  void *out, const Shape &outShape) {
  const AxisView v = aroundAxis(outShape, axis);
  const int64_t outer = v.outer, inner = v.inner;
  char *dst = static_cast<char *>(out);
  for (int64_t o = 0; o < outer; ++o)
    for (size_t k = 0; k < inputs.size(); ++k) {
      size_t chunk = (*shapes[k])[axis] * inner * elemSize;
      std::memcpy(dst, static_cast<const char *>(inputs[k]) + o * chunk, chunk);
      dst += chunk;
    }
}

void splitKernel(size_t elemSize, const void *x, const Shape &shape,
                 int64_t axis, const std::vector<int64_t> &sizes,
                 const std::vector<void *> &outs) {
  const AxisView v = aroundAxis(shape, axis);
  const int64_t outer = v.outer, inner = v.inner;
  const char *src = static_cast<const char *>(x);
  for (int64_t o = 0; o < outer; ++o)
    for (size_t k = 0; k < outs.size(); ++k) {
      size_t chunk = sizes[k] * inner * elemSize;
      std::memcpy(static_cast<char *>(outs[k]) + o * chunk, src, chunk);
      src += chunk;
    }
}

void expandKernel(size_t elemSize, const void *x, const Shape &shape, void *y,
                  const Shape &outShape, ThreadPool &pool) {
  stridedCopy(elemSize, x, outShape,
              broadcastStrides(shape, outShape.size(), outShape), y, pool);
}

namespace {

Step copyStep(const KernelContext &c) {
  const BufferInfo *a = &c.in(0);
  void *x0 = c.operand(0), *y0 = c.result(0);
  return [=] {
    if (x0 != y0)
      std::memcpy(y0, x0, a->bytes);
    return Status::ok();
  };
}

/// chunk_fetch (Gemini): each parameter of the chunk copied from its host
/// buffer (the state) into its device buffer (the arena). On the CPU both
/// are host memory, two distinct allocations; the device budget is the
/// compiler's (-tessel-gemini-placement).
Step chunkFetchStep(const KernelContext &c) {
  std::vector<std::tuple<const void *, void *, size_t>> copies;
  for (size_t i = 0; i < c.op.operands.size(); ++i)
    copies.emplace_back(c.operand(i), c.result(i), c.in(i).bytes);
  return [copies = std::move(copies)] {
    for (const auto &[x, y, bytes] : copies)
      std::memcpy(y, x, bytes);
    return Status::ok();
  };
}

/// A gather of rows of a table whose packed copy a head keeps
/// (KernelResources::packedGathers): the indices checked as gatherKernel
/// does, each row read from the packed columns.
Step packedGatherStep(const KernelContext &c, const PackedGemm *g) {
  const BufferInfo *idx = &c.in(1);
  const void *x1 = c.operand(1);
  float *y0 = static_cast<float *>(c.result(0));
  return [=] {
    const int64_t dim = g->n(), row = g->k();
    for (int64_t j = 0, i; j < idx->numel; ++j) {
      TSL_RETURN_IF_ERROR(wrappedIndex("gather", idx->dtype, x1, j, dim, i));
      g->column(i, y0 + j * row);
    }
    return Status::ok();
  };
}

Step gatherStep(const KernelContext &c) {
  if (const PackedGemm *g = c.resources.packedGathers[c.index])
    return packedGatherStep(c, g);
  const Op *o = &c.op;
  const BufferInfo *a = &c.in(0), *idx = &c.in(1);
  void *x0 = c.operand(0), *x1 = c.operand(1), *y0 = c.result(0);
  return [=] {
    return gatherKernel(dtypeSize(a->dtype), x0, a->shape, idx->dtype, x1,
                        idx->numel, o->axis, y0);
  };
}

Step gatherElementsStep(const KernelContext &c) {
  const Op *o = &c.op;
  const BufferInfo *a = &c.in(0), *idx = &c.in(1);
  void *x0 = c.operand(0), *x1 = c.operand(1), *y0 = c.result(0);
  return [=] {
    return gatherElementsKernel(dtypeSize(a->dtype), x0, a->shape, idx->dtype,
                                x1, idx->shape, o->axis, y0);
  };
}

Step transposeStep(const KernelContext &c) {
  return kernelStep(c, [](const StepArgs &s) {
    transposeKernel(dtypeSize(s.a->dtype), s.x0, s.a->shape, s.o->perm, s.y0,
                    *s.tp);
  });
}

Step sliceStep(const KernelContext &c) {
  return kernelStep(c, [](const StepArgs &s) {
    sliceKernel(dtypeSize(s.a->dtype), s.x0, s.a->shape, s.o->starts,
                s.o->steps, s.y0, s.r->shape, *s.tp);
  });
}

Step concatStep(const KernelContext &c) {
  const Op *o = &c.op;
  const BufferInfo *a = &c.in(0), *r = &c.out(0);
  void *y0 = c.result(0);
  std::vector<const void *> inputs;
  std::vector<const Shape *> shapes;
  for (size_t i = 0; i < o->operands.size(); ++i) {
    inputs.push_back(c.operand(i));
    shapes.push_back(&c.in(i).shape);
  }
  return [=] {
    concatKernel(dtypeSize(a->dtype), inputs, shapes, o->axis, y0, r->shape);
    return Status::ok();
  };
}

Step splitStep(const KernelContext &c) {
  const Op *o = &c.op;
  const BufferInfo *a = &c.in(0);
  void *x0 = c.operand(0);
  std::vector<void *> outs;
  for (int id : o->results)
    outs.push_back(c.ptrs[id]);
  return [=] {
    splitKernel(dtypeSize(a->dtype), x0, a->shape, o->axis, o->sizes, outs);
    return Status::ok();
  };
}

Step expandStep(const KernelContext &c) {
  return kernelStep(c, [](const StepArgs &s) {
    expandKernel(dtypeSize(s.a->dtype), s.x0, s.a->shape, s.y0, s.r->shape,
                 *s.tp);
  });
}

} // namespace

void registerDataMovementKernels(KernelRegistry &r) {
  addKernels(r, {{OpKind::Reshape, copyStep},
                 {OpKind::Copy, copyStep},
                 {OpKind::ChunkFetch, chunkFetchStep},
                 {OpKind::Gather, gatherStep},
                 {OpKind::GatherElements, gatherElementsStep},
                 {OpKind::Transpose, transposeStep},
                 {OpKind::Slice, sliceStep},
                 {OpKind::Concat, concatStep},
                 {OpKind::Split, splitStep},
                 {OpKind::Expand, expandStep}});
}

} // namespace tessel::runtime::cpu
