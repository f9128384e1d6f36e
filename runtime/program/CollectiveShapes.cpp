//===- CollectiveShapes.cpp - The collectives' shape contracts ------------===//
#include "tessel/runtime/CollectiveShapes.h"

#include <algorithm>
#include <string>

namespace tessel::runtime {

namespace {

Status checkReduceDType(DType t, ReduceKind kind) {
  // Sums of halves accumulate in f32: the compiler casts around the
  // collective (-tessel-float-normalization), no transport adds halves.
  if (isHalf(t))
    return Status::error(std::string("a reduction of ") + dtypeName(t) +
                         " needs its operand cast to f32");
  if (kind == ReduceKind::Mean && t != DType::F32 && t != DType::F64)
    return Status::error(std::string("a mean needs f32 or f64, got ") +
                         dtypeName(t));
  if (t == DType::Bool && kind != ReduceKind::Max && kind != ReduceKind::Min)
    return Status::error(std::string("bool reduces only by max or min, not ") +
                         reduceKindName(kind));
  return Status::ok();
}

Status checkDim(const Shape &s, int64_t dim, const char *what) {
  if (dim < 0 || dim >= static_cast<int64_t>(s.size()))
    return Status::error(std::string(what) + " " + std::to_string(dim) +
                         " is out of range for rank " +
                         std::to_string(s.size()));
  return Status::ok();
}

/// `in` and `out` equal except along `dim`, where `out` has `want`.
Status expectShape(const TensorView &in, const TensorView &out,
                   const Shape &want) {
  if (in.dtype != out.dtype)
    return Status::error(std::string("result has dtype ") +
                         dtypeName(out.dtype) + ", operand " +
                         dtypeName(in.dtype));
  if (out.shape != want)
    return Status::error("result has shape " + shapeToString(out.shape) +
                         ", expected " + shapeToString(want) + " (operand " +
                         shapeToString(in.shape) + ")");
  return Status::ok();
}

} // namespace

Status checkAllReduceShapes(const TensorView &in, const TensorView &out,
                            ReduceKind kind) {
  TSL_RETURN_IF_ERROR(checkReduceDType(in.dtype, kind));
  return expectShape(in, out, in.shape);
}

Status checkAllGatherShapes(const TensorView &in, const TensorView &out,
                            int64_t dim, int n, int index) {
  TSL_RETURN_IF_ERROR(checkDim(in.shape, dim, "dim"));
  if (out.shape.size() != in.shape.size())
    return Status::error("result has shape " + shapeToString(out.shape) +
                         ", operand " + shapeToString(in.shape));
  Shape want = in.shape;
  want[dim] = out.shape[dim];
  TSL_RETURN_IF_ERROR(expectShape(in, out, want));
  int64_t mine = chunkSize(out.shape[dim], n, index);
  if (in.shape[dim] != mine)
    return Status::error("operand " + shapeToString(in.shape) + " has " +
                         std::to_string(in.shape[dim]) + " along dim " +
                         std::to_string(dim) + ", but member " +
                         std::to_string(index) + " of " + std::to_string(n) +
                         " owns " + std::to_string(mine) + " of the result's " +
                         std::to_string(out.shape[dim]));
  return Status::ok();
}

Status checkReduceScatterShapes(const TensorView &in, const TensorView &out,
                                ReduceKind kind, int64_t dim, int n,
                                int index) {
  TSL_RETURN_IF_ERROR(checkReduceDType(in.dtype, kind));
  TSL_RETURN_IF_ERROR(checkDim(in.shape, dim, "dim"));
  Shape want = in.shape;
  want[dim] = chunkSize(in.shape[dim], n, index);
  return expectShape(in, out, want);
}

Status checkAllToAllShapes(const TensorView &in, const TensorView &out,
                           int64_t splitDim, int64_t concatDim, int n,
                           int index) {
  TSL_RETURN_IF_ERROR(checkDim(in.shape, splitDim, "split_dim"));
  TSL_RETURN_IF_ERROR(checkDim(in.shape, concatDim, "concat_dim"));
  Shape want = in.shape;
  if (splitDim == concatDim) {
    if (in.shape[splitDim] % n)
      return Status::error(
          "split_dim = concat_dim = " + std::to_string(splitDim) + " has " +
          std::to_string(in.shape[splitDim]) + " entries, not a multiple of " +
          std::to_string(n));
  } else {
    want[splitDim] = chunkSize(in.shape[splitDim], n, index);
    want[concatDim] = in.shape[concatDim] * n;
  }
  return expectShape(in, out, want);
}

Status checkPermutePairs(const std::vector<std::pair<int, int>> &pairs, int n) {
  std::vector<bool> src(n), dst(n);
  for (auto [s, d] : pairs) {
    if (s < 0 || s >= n || d < 0 || d >= n)
      return Status::error(
          "pair (" + std::to_string(s) + ", " + std::to_string(d) +
          ") is out of range for a group of " + std::to_string(n));
    if (src[s])
      return Status::error("index " + std::to_string(s) + " is a source twice");
    if (dst[d])
      return Status::error("index " + std::to_string(d) +
                           " is a destination twice");
    src[s] = dst[d] = true;
  }
  return Status::ok();
}

} // namespace tessel::runtime
