//===- LayoutChecks.cpp - Checks of the ops that move and window data -----===//
//
// OpChecker's families for transpose, slice, concat, split, expand,
// convolution and pooling (forward and backward) and collectives: their
// attributes against the operand and result shapes (OpChecker.h).
//
//===----------------------------------------------------------------------===//
#include "OpChecker.h"

#include "CollectiveAttrs.h"
#include "tessel/runtime/Artifact.h"
#include "tessel/support/Checked.h"

#include <algorithm>

namespace tessel::runtime::verifier {

Status OpChecker::checkTranspose() {
  TSL_RETURN_IF_ERROR(counts(1, 1, 1));
  TSL_RETURN_IF_ERROR(sameDType(in(0), out(0), "result"));
  size_t rank = in(0).shape.size();
  std::vector<int64_t> dflt;
  for (size_t i = 0; i < rank; ++i)
    dflt.push_back(static_cast<int64_t>(rank - 1 - i));
  TSL_RETURN_IF_ERROR(ints("perm", op.perm, false, dflt));
  if (op.perm.size() != rank)
    return fail("perm has " + std::to_string(op.perm.size()) +
                " entries for rank " + std::to_string(rank));
  std::vector<bool> seen(rank, false);
  Shape r;
  for (int64_t p : op.perm) {
    if (p < 0 || p >= static_cast<int64_t>(rank) || seen[p])
      return fail("perm is not a permutation of 0.." +
                  std::to_string(rank - 1));
    seen[p] = true;
    r.push_back(in(0).shape[p]);
  }
  return shapeIs(out(0), r, "result");
}

Status OpChecker::checkSlice() {
  TSL_RETURN_IF_ERROR(counts(1, 1, 1));
  TSL_RETURN_IF_ERROR(sameDType(in(0), out(0), "result"));
  size_t rank = in(0).shape.size();
  TSL_RETURN_IF_ERROR(ints("starts", op.starts, true));
  TSL_RETURN_IF_ERROR(ints("ends", op.ends, true));
  TSL_RETURN_IF_ERROR(
      ints("steps", op.steps, false, std::vector<int64_t>(rank, 1)));
  if (op.starts.size() != rank || op.ends.size() != rank ||
      op.steps.size() != rank)
    return fail("starts, ends and steps need one entry per dim (rank " +
                std::to_string(rank) + ")");
  Shape r;
  for (size_t i = 0; i < rank; ++i) {
    int64_t dim = in(0).shape[i], s = op.starts[i], e = op.ends[i],
            st = op.steps[i];
    int64_t count = 0;
    std::string d = "dim " + std::to_string(i) + ": ";
    if (st == 0)
      return fail(d + "step is 0");
    if (st > 0) {
      if (s < 0 || s > dim || e < 0 || e > dim)
        return fail(d + "start " + std::to_string(s) + " / end " +
                    std::to_string(e) + " outside [0, " + std::to_string(dim) +
                    "] (slices must be normalized)");
      count = e > s ? (e - s + st - 1) / st : 0;
    } else {
      if (s < -1 || s >= dim || e < -1 || e >= dim)
        if (!(dim == 0 && s == -1 && e == -1))
          return fail(d + "start " + std::to_string(s) + " / end " +
                      std::to_string(e) + " outside [-1, " +
                      std::to_string(dim - 1) +
                      "] (slices must be normalized)");
      count = s > e ? (s - e + (-st) - 1) / (-st) : 0;
    }
    r.push_back(count);
  }
  return shapeIs(out(0), r, "result");
}

Status OpChecker::checkConcat() {
  TSL_RETURN_IF_ERROR(counts(1, 1u << 20, 1));
  TSL_RETURN_IF_ERROR(axisOf(in(0).shape, "operands", 0));
  const int64_t rank = static_cast<int64_t>(in(0).shape.size());
  Shape r = in(0).shape;
  r[op.axis] = 0;
  for (size_t i = 0; i < op.operands.size(); ++i) {
    TSL_RETURN_IF_ERROR(sameDType(in(0), in(i), "operand"));
    const Shape &s = in(i).shape;
    bool ok = static_cast<int64_t>(s.size()) == rank;
    for (int64_t d = 0; ok && d < rank; ++d)
      ok = d == op.axis || s[d] == in(0).shape[d];
    if (!ok)
      return fail("operand " + std::to_string(i) + " has shape " + shapeStr(s) +
                  ", incompatible with " + shapeStr(in(0).shape) + " on axis " +
                  std::to_string(op.axis));
    r[op.axis] += s[op.axis];
  }
  TSL_RETURN_IF_ERROR(sameDType(in(0), out(0), "result"));
  return shapeIs(out(0), r, "result");
}

Status OpChecker::checkSplit() {
  TSL_RETURN_IF_ERROR(counts(1, 1, 0));
  if (op.results.empty())
    return fail("expects at least one result");
  TSL_RETURN_IF_ERROR(axisOf(in(0).shape, "operand", 0));
  int64_t dim = in(0).shape[op.axis];
  int64_t n = static_cast<int64_t>(op.results.size());
  std::vector<int64_t> dflt;
  if (dim % n == 0)
    dflt.assign(n, dim / n);
  TSL_RETURN_IF_ERROR(ints("sizes", op.sizes, false, dflt));
  if (static_cast<int64_t>(op.sizes.size()) != n)
    return fail("'sizes' needs one entry per result (" + std::to_string(n) +
                ")");
  int64_t total = 0;
  for (size_t i = 0; i < op.sizes.size(); ++i) {
    if (op.sizes[i] < 0)
      return fail("negative split size");
    total += op.sizes[i];
    Shape r = in(0).shape;
    r[op.axis] = op.sizes[i];
    TSL_RETURN_IF_ERROR(sameDType(in(0), out(i), "result"));
    TSL_RETURN_IF_ERROR(shapeIs(out(i), r, "result"));
  }
  if (total != dim)
    return fail("split sizes sum to " + std::to_string(total) + ", axis has " +
                std::to_string(dim));
  return Status::ok();
}

Status OpChecker::checkExpand() {
  TSL_RETURN_IF_ERROR(counts(1, 1, 1));
  TSL_RETURN_IF_ERROR(sameDType(in(0), out(0), "result"));
  Shape b;
  if (!broadcastShapes(in(0).shape, out(0).shape, b) || b != out(0).shape)
    return fail("operand " + shapeStr(in(0).shape) +
                " does not broadcast to the result " + shapeStr(out(0).shape));
  return Status::ok();
}

Status OpChecker::convAttrs() {
  TSL_RETURN_IF_ERROR(pairAttr("strides", op.strides, 1, 2, false, 1));
  TSL_RETURN_IF_ERROR(pairAttr("pads", op.pads, 0, 4, false, 0));
  TSL_RETURN_IF_ERROR(pairAttr("dilations", op.dilations, 1, 2, false, 1));
  return intAttr("group", op.group, 1);
}

// `y` must be the conv2d of `x` [N, C, H, W] with `w` [O, C/group, KH, KW]
// and the op's (parsed) attributes.
Status OpChecker::convResultIs(const Shape &x, const Shape &w,
                               const BufferInfo &y, const char *what) {
  if (x.size() != 4 || w.size() != 4)
    return fail("input and weight must have rank 4 (NCHW, OIHW), got " +
                shapeStr(x) + " and " + shapeStr(w));
  if (op.group < 1 || x[1] % op.group || w[0] % op.group)
    return fail("group " + std::to_string(op.group) +
                " does not divide the channels " + std::to_string(x[1]) +
                " and filters " + std::to_string(w[0]));
  if (w[1] != x[1] / op.group)
    return fail("weight " + shapeStr(w) + " expects " + std::to_string(w[1]) +
                " channels per group, input gives " +
                std::to_string(x[1] / op.group));
  Shape r = {x[0], w[0], 0, 0};
  for (int i = 0; i < 2; ++i) {
    int64_t span = op.dilations[i] * (w[2 + i] - 1) + 1;
    int64_t padded = x[2 + i] + op.pads[i] + op.pads[i + 2];
    if (padded < span)
      return fail("kernel is larger than the padded input");
    r[2 + i] = (padded - span) / op.strides[i] + 1;
  }
  return shapeIs(y, r, what);
}

Status OpChecker::checkConv() {
  TSL_RETURN_IF_ERROR(counts(2, 3, 1));
  for (size_t i = 0; i < op.operands.size(); ++i)
    TSL_RETURN_IF_ERROR(dtypeIs(in(i), "operand", {DType::F32}));
  TSL_RETURN_IF_ERROR(sameDType(in(0), out(0), "result"));
  TSL_RETURN_IF_ERROR(convAttrs());
  if (op.operands.size() == 3 && in(1).shape.size() == 4)
    TSL_RETURN_IF_ERROR(shapeIs(in(2), {in(1).shape[0]}, "bias"));
  return convResultIs(in(0).shape, in(1).shape, out(0), "result");
}

// conv2d_backward_data (dy, w) -> dx; conv2d_backward_weight (x, dy) -> dw:
// the forward conv2d of dx with w (of x with dw) must give dy.
Status OpChecker::checkConvBackward() {
  TSL_RETURN_IF_ERROR(counts(2, 2, 1));
  for (size_t i = 0; i < 2; ++i)
    TSL_RETURN_IF_ERROR(dtypeIs(in(i), "operand", {DType::F32}));
  TSL_RETURN_IF_ERROR(sameDType(in(0), out(0), "result"));
  TSL_RETURN_IF_ERROR(convAttrs());
  if (op.kind == OpKind::Conv2DBackwardData)
    return convResultIs(out(0).shape, in(1).shape, in(0), "operand 0 (grad)");
  return convResultIs(in(0).shape, out(0).shape, in(1), "operand 1 (grad)");
}

Status OpChecker::poolAttrs() {
  TSL_RETURN_IF_ERROR(pairAttr("kernel", op.kernel, 1, 2, true, 1));
  TSL_RETURN_IF_ERROR(pairAttr("strides", op.strides, 1, 2, false, 1));
  TSL_RETURN_IF_ERROR(pairAttr("pads", op.pads, 0, 4, false, 0));
  int64_t cip;
  TSL_RETURN_IF_ERROR(intAttr("count_include_pad", cip, 0));
  op.countIncludePad = cip != 0;
  return Status::ok();
}

// `y` must be a pooling of `x` [N, C, H, W] with the op's attributes (floor
// or ceil mode).
Status OpChecker::poolResultIs(const Shape &x, const BufferInfo &y,
                               const char *what) {
  if (x.size() != 4)
    return fail("input must have rank 4 (NCHW), got " + shapeStr(x));
  const Shape &r = y.shape;
  if (r.size() != 4 || r[0] != x[0] || r[1] != x[1])
    return fail(std::string(what) + " has shape " + shapeStr(r) +
                ", expected [" + std::to_string(x[0]) + ", " +
                std::to_string(x[1]) + ", OH, OW]");
  for (int i = 0; i < 2; ++i) {
    int64_t padded = x[2 + i] + op.pads[i] + op.pads[i + 2];
    if (padded < op.kernel[i])
      return fail("kernel is larger than the padded input");
    int64_t floorO = (padded - op.kernel[i]) / op.strides[i] + 1;
    int64_t ceilO =
        (padded - op.kernel[i] + op.strides[i] - 1) / op.strides[i] + 1;
    // ceil mode: the last window must start inside the input or left pad.
    if (ceilO > floorO && (ceilO - 1) * op.strides[i] >= x[2 + i] + op.pads[i])
      ceilO = floorO;
    if (r[2 + i] != floorO && r[2 + i] != ceilO)
      return fail(std::string(what) + " has shape " + shapeStr(r) +
                  ", expected spatial dim " + std::to_string(i) + " to be " +
                  std::to_string(floorO) +
                  (ceilO != floorO
                       ? " (or " + std::to_string(ceilO) + " in ceil mode)"
                       : std::string()));
  }
  return Status::ok();
}

Status OpChecker::checkPool() {
  TSL_RETURN_IF_ERROR(counts(1, 1, 1));
  TSL_RETURN_IF_ERROR(dtypeIs(in(0), "operand", {DType::F32}));
  TSL_RETURN_IF_ERROR(sameDType(in(0), out(0), "result"));
  TSL_RETURN_IF_ERROR(poolAttrs());
  return poolResultIs(in(0).shape, out(0), "result");
}

// max_pool_backward (x, dy) -> dx shaped as x; avg_pool_backward (dy) -> dx:
// a pooling of dx's shape must give dy's.
Status OpChecker::checkPoolBackward() {
  const bool max = op.kind == OpKind::MaxPoolBackward;
  TSL_RETURN_IF_ERROR(counts(max ? 2 : 1, max ? 2 : 1, 1));
  for (size_t i = 0; i < op.operands.size(); ++i)
    TSL_RETURN_IF_ERROR(dtypeIs(in(i), "operand", {DType::F32}));
  TSL_RETURN_IF_ERROR(sameDType(in(0), out(0), "result"));
  TSL_RETURN_IF_ERROR(poolAttrs());
  if (max)
    TSL_RETURN_IF_ERROR(shapeIs(out(0), in(0).shape, "result"));
  return poolResultIs(out(0).shape, in(max ? 1 : 0), "grad");
}

Status OpChecker::checkGlobalPool() {
  TSL_RETURN_IF_ERROR(counts(1, 1, 1));
  TSL_RETURN_IF_ERROR(dtypeIs(in(0), "operand", {DType::F32}));
  TSL_RETURN_IF_ERROR(sameDType(in(0), out(0), "result"));
  const Shape &x = in(0).shape;
  if (x.size() < 3)
    return fail("input must have rank >= 3 ([N, C, spatial...])");
  Shape r(x.begin(), x.begin() + 2);
  r.resize(x.size(), 1);
  return shapeIs(out(0), r, "result");
}

Status OpChecker::checkCollective() {
  if (Status s = checkCollectiveInstruction(inst, p, op); !s)
    return fail(s.message());
  return Status::ok();
}

} // namespace tessel::runtime::verifier
