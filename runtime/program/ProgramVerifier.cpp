//===- ProgramVerifier.cpp - An instruction's load-time checks ------------===//
//
// Everything an artifact says of an instruction is checked here, once, at
// load time: operand and result counts, dtypes, shapes and attributes, by
// the check family the op table gives its kind (TESSEL_RUNTIME_OP_CHECKS),
// then the attribute types the op table declares (TESSEL_RUNTIME_OP_ATTRS);
// and how its results may alias its operands. Backends then execute without
// checks; a corrupted artifact gives an error, never a crash.
//
//===----------------------------------------------------------------------===//
#include "ProgramVerifier.h"
#include "OpChecker.h"

#include "CollectiveAttrs.h"
#include "artifact.pb.h"
#include "tessel/runtime/Artifact.h"
#include "tessel/runtime/Attention.h"
#include "tessel/runtime/FusedProgram.h"
#include "tessel/runtime/BufferPlanner.h"
#include "tessel/runtime/CustomOp.h"
#include "tessel/support/Checked.h"

#include <algorithm>
#include <cmath>
#include <set>

namespace tessel::runtime::verifier {

CheckFamily checkFamilyOf(OpKind kind) {
  switch (kind) {
#define TESSEL_X(E, F)                                                         \
  case OpKind::E:                                                              \
    return CheckFamily::F;
    TESSEL_RUNTIME_OP_CHECKS(TESSEL_X)
#undef TESSEL_X
  }
  return CheckFamily::Unary;
}

namespace {

enum class AttrType { Int, Ints, Float, Str };

struct DeclaredAttr {
  OpKind kind;
  const char *name;
  AttrType type;
};

constexpr DeclaredAttr kDeclaredAttrs[] = {
#define TESSEL_X(E, N, T) {OpKind::E, N, AttrType::T},
    TESSEL_RUNTIME_OP_ATTRS(TESSEL_X)
#undef TESSEL_X
};

} // namespace

Status OpChecker::check() {
  TSL_RETURN_IF_ERROR(checkFamily());
  // Attributes the op table declares for this kind have their declared type.
  for (const DeclaredAttr &d : kDeclaredAttrs) {
    if (d.kind != op.kind)
      continue;
    const artifact::Attribute *a = attr(d.name);
    if (!a)
      continue;
    bool ok = false;
    switch (d.type) {
    case AttrType::Int:
      ok = a->value_case() == artifact::Attribute::kInts &&
           a->ints().values_size() == 1;
      break;
    case AttrType::Ints:
      ok = a->value_case() == artifact::Attribute::kInts;
      break;
    case AttrType::Float:
      ok = (a->value_case() == artifact::Attribute::kFloats &&
            a->floats().values_size() == 1) ||
           (a->value_case() == artifact::Attribute::kInts &&
            a->ints().values_size() == 1);
      break;
    case AttrType::Str:
      ok = a->value_case() == artifact::Attribute::kStr;
      break;
    }
    if (!ok) {
      static const char *const kWhat[] = {"one integer", "an int list",
                                          "one float", "a string"};
      return fail("attribute '" + std::string(d.name) + "' must be " +
                  kWhat[static_cast<int>(d.type)]);
    }
  }
  return Status::ok();
}

Status OpChecker::checkFamily() {
  switch (op.kind) {
#define TESSEL_X(E, F)                                                         \
  case OpKind::E:                                                              \
    return check##F();
    TESSEL_RUNTIME_OP_CHECKS(TESSEL_X)
#undef TESSEL_X
  }
  return fail("unknown op");
}

Status OpChecker::checkReshape() {
  TSL_RETURN_IF_ERROR(counts(1, 1, 1));
  TSL_RETURN_IF_ERROR(sameDType(in(0), out(0), "result"));
  if (in(0).numel != out(0).numel)
    return fail("result has " + std::to_string(out(0).numel) +
                " elements, operand has " + std::to_string(in(0).numel));
  return Status::ok();
}

// wait(in, out) of an asynchronous all_reduce(in) -> out (the same
// shape), all_gather(in) -> out (whole blocks of in) or
// reduce_scatter(in) -> out (a whole block of in); which one is matched
// when the executor is created.
Status OpChecker::checkWait() {
  TSL_RETURN_IF_ERROR(counts(2, 2, 0));
  if (!op.results.empty())
    return fail("expects no results, got " + std::to_string(op.results.size()));
  TSL_RETURN_IF_ERROR(sameDType(in(0), in(1), "operand 1"));
  if (in(1).shape != in(0).shape &&
      (in(1).shape.size() != in(0).shape.size() || in(0).numel == 0 ||
       in(1).numel == 0 ||
       (in(1).numel % in(0).numel != 0 && in(0).numel % in(1).numel != 0)))
    return fail("operand 1 has shape " + shapeStr(in(1).shape) + ", expected " +
                shapeStr(in(0).shape) +
                ", whole blocks of it (an all_gather's) or a whole block "
                "of it (a reduce_scatter's)");
  return Status::ok();
}

// A plugin's op: its target is registered and its kernel accepts the
// instance (CustomOp.h); the operands and results are whatever it takes.
Status OpChecker::checkCustom() {
  std::string target;
  TSL_RETURN_IF_ERROR(strAttr("target", target, true));
  ext::CpuKernelFn run;
  if (Status s = buildCustomKernel(p.buffers, op, run); !s)
    return fail(s.message());
  return Status::ok();
}

// chunk_fetch (Gemini): each result a copy of the operand at its position.
Status OpChecker::checkChunk() {
  if (op.operands.empty())
    return fail("expects at least one operand");
  if (op.results.size() != op.operands.size())
    return fail("expects as many results as operands (" +
                std::to_string(op.operands.size()) + "), got " +
                std::to_string(op.results.size()));
  int64_t chunk;
  TSL_RETURN_IF_ERROR(intAttr("chunk", chunk, 0));
  if (chunk < 0)
    return fail("attribute 'chunk' = " + std::to_string(chunk) +
                " is negative");
  for (size_t i = 0; i < op.operands.size(); ++i) {
    TSL_RETURN_IF_ERROR(sameDType(in(i), out(i), "result"));
    TSL_RETURN_IF_ERROR(shapeIs(out(i), in(i).shape, "result"));
  }
  return Status::ok();
}

Status OpChecker::checkUnary() {
  TSL_RETURN_IF_ERROR(counts(1, 1, 1));
  TSL_RETURN_IF_ERROR(shapeIs(out(0), in(0).shape, "result"));
  switch (op.kind) {
  case OpKind::Cast: {
    std::string to;
    TSL_RETURN_IF_ERROR(strAttr("to", to, true));
    auto t = parseDType(to);
    if (!t)
      return fail("attribute 'to' = '" + to +
                  "' is not one of f32, i64, i32, bool, bf16, f16, f64");
    op.to = *t;
    if (out(0).dtype != op.to)
      return fail("result has dtype " + std::string(dtypeName(out(0).dtype)) +
                  " but 'to' is " + to);
    return Status::ok();
  }
  case OpKind::Not:
    TSL_RETURN_IF_ERROR(dtypeIs(in(0), "operand", {DType::Bool}));
    return dtypeIs(out(0), "result", {DType::Bool});
  case OpKind::Neg:
  case OpKind::Abs:
  case OpKind::Relu:
    TSL_RETURN_IF_ERROR(dtypeIs(
        in(0), "operand", {DType::F32, DType::F64, DType::I64, DType::I32}));
    return sameDType(in(0), out(0), "result");
  case OpKind::Gelu: {
    int64_t approx;
    TSL_RETURN_IF_ERROR(intAttr("tanh_approximation", approx, 0));
    if (approx != 0 && approx != 1)
      return fail("attribute 'tanh_approximation' must be 0 or 1");
    op.tanhApproximation = approx == 1;
    [[fallthrough]];
  }
  default:
    if (op.kind == OpKind::RoundFloat) {
      // The kernels' bit arithmetic covers these formats only (C2 of the
      // op: dialects/tessel/TrainingOps.td).
      int64_t e, m;
      TSL_RETURN_IF_ERROR(intAttr("exponent_bits", e, 8));
      TSL_RETURN_IF_ERROR(intAttr("mantissa_bits", m, 7));
      if (e < 2 || e > 8)
        return fail("attribute 'exponent_bits' must be in [2, 8], got " +
                    std::to_string(e));
      if (m < 0 || m > 23)
        return fail("attribute 'mantissa_bits' must be in [0, 23], got " +
                    std::to_string(m));
    }
    // round_float's bit arithmetic is f32's; the scalar functions take f64
    // too (ScalarOps.h).
    if (op.kind == OpKind::RoundFloat)
      TSL_RETURN_IF_ERROR(dtypeIs(in(0), "operand", {DType::F32}));
    else
      TSL_RETURN_IF_ERROR(dtypeIs(in(0), "operand", {DType::F32, DType::F64}));
    return sameDType(in(0), out(0), "result");
  }
}

Status OpChecker::checkBinary() {
  TSL_RETURN_IF_ERROR(counts(2, 2, 1));
  if (op.kind == OpKind::GeluGrad || op.kind == OpKind::ReluGrad) {
    // input (relu_grad: output), grad and result: one f32 shape.
    TSL_RETURN_IF_ERROR(dtypeIs(in(0), "input", {DType::F32}));
    TSL_RETURN_IF_ERROR(sameDType(in(0), in(1), "grad"));
    TSL_RETURN_IF_ERROR(sameDType(in(0), out(0), "result"));
    TSL_RETURN_IF_ERROR(shapeIs(in(1), in(0).shape, "grad"));
    TSL_RETURN_IF_ERROR(shapeIs(out(0), in(0).shape, "result"));
    if (op.kind == OpKind::ReluGrad)
      return Status::ok();
    int64_t approx;
    TSL_RETURN_IF_ERROR(intAttr("tanh_approximation", approx, 0));
    if (approx != 0 && approx != 1)
      return fail("attribute 'tanh_approximation' must be 0 or 1");
    op.tanhApproximation = approx == 1;
    return Status::ok();
  }
  // The dtypes of the op's scalar function (the op table's
  // TESSEL_RUNTIME_BINARY_SCALAR_OPS: Float, Numeric or Integer).
  enum class Types { Float, Numeric, Integer } types = Types::Numeric;
  switch (op.kind) {
#define TESSEL_BINARY_SCALAR(Kind, T)                                          \
  case OpKind::Kind:                                                           \
    types = Types::T;                                                          \
    break;
    TESSEL_RUNTIME_BINARY_SCALAR_OPS(TESSEL_BINARY_SCALAR)
#undef TESSEL_BINARY_SCALAR
  default:
    break;
  }
  if (types == Types::Float)
    TSL_RETURN_IF_ERROR(dtypeIs(in(0), "operand 0", {DType::F32, DType::F64}));
  else if (types == Types::Integer)
    TSL_RETURN_IF_ERROR(dtypeIs(in(0), "operand 0", {DType::I64, DType::I32}));
  else
    TSL_RETURN_IF_ERROR(dtypeIs(
        in(0), "operand 0", {DType::F32, DType::F64, DType::I64, DType::I32}));
  TSL_RETURN_IF_ERROR(pairLike(0));
  return broadcastResult();
}

Status OpChecker::checkCompare() {
  TSL_RETURN_IF_ERROR(counts(2, 2, 1));
  std::string pred;
  TSL_RETURN_IF_ERROR(strAttr("predicate", pred, true));
  static const std::pair<const char *, ComparePredicate> preds[] = {
      {"eq", ComparePredicate::Eq}, {"ne", ComparePredicate::Ne},
      {"lt", ComparePredicate::Lt}, {"le", ComparePredicate::Le},
      {"gt", ComparePredicate::Gt}, {"ge", ComparePredicate::Ge}};
  bool found = false;
  for (auto &[n, v] : preds)
    if (pred == n) {
      op.predicate = v;
      found = true;
    }
  if (!found)
    return fail("attribute 'predicate' = '" + pred +
                "' is not one of eq, ne, lt, le, gt, ge");
  TSL_RETURN_IF_ERROR(
      dtypeIs(in(0), "operand 0",
              {DType::F32, DType::F64, DType::I64, DType::I32, DType::Bool}));
  TSL_RETURN_IF_ERROR(sameDType(in(0), in(1), "operand 1"));
  TSL_RETURN_IF_ERROR(dtypeIs(out(0), "result", {DType::Bool}));
  return broadcastResult();
}

Status OpChecker::checkWhere() {
  TSL_RETURN_IF_ERROR(counts(3, 3, 1));
  TSL_RETURN_IF_ERROR(dtypeIs(in(0), "condition", {DType::Bool}));
  TSL_RETURN_IF_ERROR(pairLike(1));
  return broadcastResult();
}

Status OpChecker::checkMatmul() {
  TSL_RETURN_IF_ERROR(counts(2, 2, 1));
  // A half GEMM: half operands and result, f32 sums (docs/precision.md).
  TSL_RETURN_IF_ERROR(dtypeIs(
      in(0), "operand 0", {DType::F32, DType::BF16, DType::F16, DType::F64}));
  TSL_RETURN_IF_ERROR(pairLike(0));
  Shape a = in(0).shape, b = in(1).shape;
  if (a.empty() || b.empty())
    return fail("operands must have rank >= 1");
  bool vecA = a.size() == 1, vecB = b.size() == 1;
  if (vecA)
    a.insert(a.begin(), 1);
  if (vecB)
    b.push_back(1);
  int64_t k = a.back(), k2 = b[b.size() - 2];
  if (k != k2)
    return fail("contraction dims differ: operand 0 " + shapeStr(in(0).shape) +
                ", operand 1 " + shapeStr(in(1).shape));
  Shape batch;
  if (!broadcastShapes(Shape(a.begin(), a.end() - 2),
                       Shape(b.begin(), b.end() - 2), batch))
    return fail("batch dims of " + shapeStr(in(0).shape) + " and " +
                shapeStr(in(1).shape) + " do not broadcast");
  Shape r = batch;
  if (!vecA)
    r.push_back(a[a.size() - 2]);
  if (!vecB)
    r.push_back(b.back());
  return shapeIs(out(0), r, "result");
}

Status OpChecker::checkGemm() {
  TSL_RETURN_IF_ERROR(counts(2, 3, 1));
  TSL_RETURN_IF_ERROR(dtypeIs(
      in(0), "operand", {DType::F32, DType::BF16, DType::F16, DType::F64}));
  for (size_t i = 1; i < op.operands.size(); ++i)
    TSL_RETURN_IF_ERROR(sameDType(in(0), in(i), "operand"));
  TSL_RETURN_IF_ERROR(sameDType(in(0), out(0), "result"));
  int64_t ta, tb;
  TSL_RETURN_IF_ERROR(intAttr("trans_a", ta, 0));
  TSL_RETURN_IF_ERROR(intAttr("trans_b", tb, 0));
  op.transA = ta != 0;
  op.transB = tb != 0;
  TSL_RETURN_IF_ERROR(floatAttr("alpha", op.alpha, 1.0f));
  TSL_RETURN_IF_ERROR(floatAttr("beta", op.beta, 1.0f));
  if (in(0).shape.size() != 2 || in(1).shape.size() != 2)
    return fail("A and B must have rank 2, got " + shapeStr(in(0).shape) +
                " and " + shapeStr(in(1).shape));
  int64_t m = op.transA ? in(0).shape[1] : in(0).shape[0];
  int64_t k = op.transA ? in(0).shape[0] : in(0).shape[1];
  int64_t k2 = op.transB ? in(1).shape[1] : in(1).shape[0];
  int64_t n = op.transB ? in(1).shape[0] : in(1).shape[1];
  if (k != k2)
    return fail("contraction dims differ: A " + shapeStr(in(0).shape) + ", B " +
                shapeStr(in(1).shape));
  Shape r = {m, n};
  if (op.operands.size() == 3) {
    Shape b;
    if (in(2).shape.size() > 2 || !broadcastShapes(in(2).shape, r, b) || b != r)
      return fail("C " + shapeStr(in(2).shape) + " does not broadcast to " +
                  shapeStr(r));
  }
  return shapeIs(out(0), r, "result");
}

Status OpChecker::checkReduce() {
  TSL_RETURN_IF_ERROR(counts(1, 1, 1));
  if (op.kind == OpKind::ReduceMean)
    TSL_RETURN_IF_ERROR(dtypeIs(in(0), "operand", {DType::F32, DType::F64}));
  else
    TSL_RETURN_IF_ERROR(dtypeIs(
        in(0), "operand", {DType::F32, DType::F64, DType::I64, DType::I32}));
  TSL_RETURN_IF_ERROR(sameDType(in(0), out(0), "result"));
  int64_t rank = static_cast<int64_t>(in(0).shape.size());
  std::vector<int64_t> dims;
  TSL_RETURN_IF_ERROR(ints("dims", dims, false));
  if (dims.empty())
    for (int64_t i = 0; i < rank; ++i)
      dims.push_back(i);
  for (int64_t &d : dims) {
    if (d < -rank || d >= rank)
      return fail("dim " + std::to_string(d) + " is out of range for rank " +
                  std::to_string(rank));
    if (d < 0)
      d += rank;
  }
  std::sort(dims.begin(), dims.end());
  dims.erase(std::unique(dims.begin(), dims.end()), dims.end());
  op.dims = dims;
  int64_t keep;
  TSL_RETURN_IF_ERROR(intAttr("keep_dims", keep, 1));
  op.keepDims = keep != 0;
  Shape r;
  for (int64_t i = 0; i < rank; ++i) {
    bool reduced = std::binary_search(dims.begin(), dims.end(), i);
    if (reduced && in(0).shape[i] == 0 && op.kind == OpKind::ReduceMax)
      return fail("reduce_max over an empty dim");
    if (!reduced)
      r.push_back(in(0).shape[i]);
    else if (op.keepDims)
      r.push_back(1);
  }
  return shapeIs(out(0), r, "result");
}

Status OpChecker::checkSoftmax() {
  TSL_RETURN_IF_ERROR(counts(1, 1, 1));
  TSL_RETURN_IF_ERROR(dtypeIs(in(0), "operand", {DType::F32, DType::F64}));
  TSL_RETURN_IF_ERROR(sameDType(in(0), out(0), "result"));
  TSL_RETURN_IF_ERROR(shapeIs(out(0), in(0).shape, "result"));
  return axisOf(in(0).shape, "operand", -1);
}

Status OpChecker::checkNorm() {
  bool layer = op.kind == OpKind::LayerNorm;
  TSL_RETURN_IF_ERROR(counts(2, layer ? 3 : 2, 1));
  TSL_RETURN_IF_ERROR(dtypeIs(in(0), "operand", {DType::F32, DType::F64}));
  for (size_t i = 1; i < op.operands.size(); ++i)
    TSL_RETURN_IF_ERROR(sameDType(in(0), in(i), "operand"));
  TSL_RETURN_IF_ERROR(sameDType(in(0), out(0), "result"));
  TSL_RETURN_IF_ERROR(shapeIs(out(0), in(0).shape, "result"));
  TSL_RETURN_IF_ERROR(axisOf(in(0).shape, "operand", -1));
  TSL_RETURN_IF_ERROR(floatAttr("epsilon", op.epsilon, 1e-5f));
  Shape norm(in(0).shape.begin() + op.axis, in(0).shape.end());
  for (size_t i = 1; i < op.operands.size(); ++i) {
    Shape b;
    if (!broadcastShapes(in(i).shape, norm, b) || b != norm)
      return fail(std::string(i == 1 ? "scale " : "bias ") +
                  shapeStr(in(i).shape) + " does not broadcast to " +
                  shapeStr(norm));
  }
  return Status::ok();
}

Status OpChecker::checkBatchNorm() {
  TSL_RETURN_IF_ERROR(counts(5, 5, 1));
  TSL_RETURN_IF_ERROR(dtypeIs(in(0), "operand", {DType::F32, DType::F64}));
  for (size_t i = 1; i < 5; ++i)
    TSL_RETURN_IF_ERROR(sameDType(in(0), in(i), "operand"));
  TSL_RETURN_IF_ERROR(sameDType(in(0), out(0), "result"));
  TSL_RETURN_IF_ERROR(shapeIs(out(0), in(0).shape, "result"));
  if (in(0).shape.size() < 2)
    return fail("operand must have rank >= 2 ([N, C, ...])");
  TSL_RETURN_IF_ERROR(floatAttr("epsilon", op.epsilon, 1e-5f));
  static const char *roles[] = {"", "scale", "bias", "mean", "var"};
  for (size_t i = 1; i < 5; ++i)
    TSL_RETURN_IF_ERROR(shapeIs(in(i), {in(0).shape[1]}, roles[i]));
  return Status::ok();
}

// The pieces of training-mode BatchNorm: batch_norm_variance (x, mean) ->
// var, batch_norm_grad_sums (grad, x, mean) -> (sum_grad,
// sum_grad_centred) and batch_norm_grad_input (grad, x, mean, grad_mean,
// proj, coef) -> dx: f32 throughout; grad and x one [N, C, ...] shape, the
// per-channel values [C].
Status OpChecker::checkBatchNormTrain() {
  const bool var = op.kind == OpKind::BatchNormVariance,
             sums = op.kind == OpKind::BatchNormGradSums;
  const size_t operands = var ? 2 : sums ? 3 : 6;
  TSL_RETURN_IF_ERROR(counts(operands, operands, sums ? 2 : 1));
  for (size_t i = 0; i < op.operands.size(); ++i)
    TSL_RETURN_IF_ERROR(dtypeIs(in(i), "operand", {DType::F32}));
  for (size_t i = 0; i < op.results.size(); ++i)
    TSL_RETURN_IF_ERROR(dtypeIs(out(i), "result", {DType::F32}));
  if (in(0).shape.size() < 2)
    return fail(std::string(var ? "input" : "grad") +
                " must have rank >= 2 ([N, C, ...])");
  const Shape channels = {in(0).shape[1]};
  const size_t firstPerChannel = var ? 1 : 2;
  if (!var)
    TSL_RETURN_IF_ERROR(shapeIs(in(1), in(0).shape, "input"));
  for (size_t i = firstPerChannel; i < op.operands.size(); ++i)
    TSL_RETURN_IF_ERROR(shapeIs(in(i), channels, "per-channel operand"));
  if (var)
    return shapeIs(out(0), channels, "result");
  if (sums) {
    TSL_RETURN_IF_ERROR(shapeIs(out(0), channels, "sum_grad"));
    return shapeIs(out(1), channels, "sum_grad_centred");
  }
  return shapeIs(out(0), in(0).shape, "result");
}

// attention (q, kt, v[, mask][, nan_fill]) -> (out, lse) and attention_grad
// (q, kt, v, out, lse, grad[, mask][, nan_fill]) -> (dq, dkt, dv)
// (tessel/ops/Attention.h): q, kt, v, out, grad and the gradients of one
// type, f32, bf16 or f16 (a half attention: f32 sums, docs/precision.md);
// mask, nan_fill and lse f32, keep bool. `has_mask`, `has_nan_fill` and
// `has_keep` say which of the optional operands follow; `has_masked_score`
// (with a mask) that the scores it hides are the finite `masked_score`.
Status OpChecker::checkAttention() {
  const bool grad = op.kind == OpKind::AttentionGrad;
  const size_t base = grad ? 6 : 3;
  int64_t hasMask = 0, hasFill = 0, hasKeep = 0;
  TSL_RETURN_IF_ERROR(intAttr("has_mask", hasMask, 0));
  TSL_RETURN_IF_ERROR(intAttr("has_nan_fill", hasFill, 0));
  TSL_RETURN_IF_ERROR(intAttr("has_keep", hasKeep, 0));
  int64_t hasMasked = 0;
  TSL_RETURN_IF_ERROR(intAttr("has_masked_score", hasMasked, 0));
  if ((hasMask != 0 && hasMask != 1) || (hasFill != 0 && hasFill != 1) ||
      (hasMasked != 0 && hasMasked != 1) || (hasKeep != 0 && hasKeep != 1))
    return fail("attributes 'has_mask', 'has_nan_fill', 'has_keep' and "
                "'has_masked_score' must be 0 or 1");
  if (hasKeep && !hasMasked)
    return fail("attribute 'has_keep' needs a masked_score "
                "(has_masked_score 1)");
  if (hasMasked) {
    float masked;
    TSL_RETURN_IF_ERROR(floatAttr("masked_score", masked, 0.0f));
    if (!std::isfinite(masked))
      return fail("attribute 'masked_score' must be finite, got " +
                  std::to_string(masked));
    if (!hasMask)
      return fail("attribute 'has_masked_score' needs a mask (has_mask 1)");
  }
  const size_t n = base + hasMask + hasFill + hasKeep;
  TSL_RETURN_IF_ERROR(counts(n, n, grad ? 3 : 2));
  const size_t keepAt = base + hasMask + hasFill;
  TSL_RETURN_IF_ERROR(
      dtypeIs(in(0), "q", {DType::F32, DType::BF16, DType::F16}));
  const std::vector<int> typed = attentionTypedOperands(op.kind);
  for (size_t i = 0; i < op.operands.size(); ++i) {
    static const char *names[] = {"q", "kt", "v", "result", "lse", "grad"};
    const bool own =
        std::find(typed.begin(), typed.end(), int(i)) != typed.end();
    const char *name = i < base                 ? names[i]
                       : i == base && hasMask   ? "mask"
                       : hasKeep && i == keepAt ? "keep"
                                                : "nan_fill";
    if (own)
      TSL_RETURN_IF_ERROR(sameDType(in(0), in(i), name));
    else if (hasKeep && i == keepAt)
      TSL_RETURN_IF_ERROR(dtypeIs(in(i), name, {DType::Bool}));
    else
      TSL_RETURN_IF_ERROR(dtypeIs(in(i), name, {DType::F32}));
  }
  for (size_t i = 0; i < op.results.size(); ++i) {
    if (!grad && i == 1)
      TSL_RETURN_IF_ERROR(dtypeIs(out(i), "lse", {DType::F32}));
    else
      TSL_RETURN_IF_ERROR(sameDType(in(0), out(i), "result"));
  }
  AttentionDims dims;
  const std::string bad =
      makeAttentionDims(in(0).shape, in(1).shape, in(2).shape,
                        hasMask ? &in(base).shape : nullptr, dims,
                        hasKeep ? &in(keepAt).shape : nullptr);
  if (!bad.empty())
    return fail(bad + " (q " + shapeStr(in(0).shape) + ", kt " +
                shapeStr(in(1).shape) + ", v " + shapeStr(in(2).shape) +
                (hasMask ? ", mask " + shapeStr(in(base).shape) : "") +
                (hasKeep ? ", keep " + shapeStr(in(keepAt).shape) : "") + ")");
  if (hasFill)
    TSL_RETURN_IF_ERROR(shapeIs(in(base + hasMask), {}, "nan_fill"));
  float scale;
  TSL_RETURN_IF_ERROR(floatAttr("scale", scale, 1.0f));
  Shape rows(in(0).shape.begin(), in(0).shape.end() - 1);
  Shape o = rows;
  o.push_back(dims.dv);
  if (!grad) {
    TSL_RETURN_IF_ERROR(shapeIs(out(0), o, "result"));
    return shapeIs(out(1), rows, "lse");
  }
  TSL_RETURN_IF_ERROR(shapeIs(in(3), o, "result"));
  TSL_RETURN_IF_ERROR(shapeIs(in(4), rows, "lse"));
  TSL_RETURN_IF_ERROR(shapeIs(in(5), o, "grad"));
  for (size_t i = 0; i < 3; ++i)
    TSL_RETURN_IF_ERROR(shapeIs(out(i), in(i).shape,
                                i == 0 ? "dq" : i == 1 ? "dkt" : "dv"));
  return Status::ok();
}

// fused_elementwise (inputs...) -> result, f32, bf16 or f16, by its
// program (tessel/runtime/FusedProgram.h).
Status OpChecker::checkFused() {
  TSL_RETURN_IF_ERROR(counts(1, 64, 1));
  const std::initializer_list<DType> floats = {DType::F32, DType::BF16,
                                               DType::F16};
  for (size_t i = 0; i < op.operands.size(); ++i)
    TSL_RETURN_IF_ERROR(dtypeIs(in(i), "operand", floats));
  TSL_RETURN_IF_ERROR(dtypeIs(out(0), "result", floats));
  std::vector<int64_t> program;
  TSL_RETURN_IF_ERROR(ints("program", program, true));
  std::vector<Shape> shapes;
  std::vector<DType> dtypes;
  for (size_t i = 0; i < op.operands.size(); ++i) {
    shapes.push_back(in(i).shape);
    dtypes.push_back(in(i).dtype);
  }
  FusedProgram decoded;
  const std::string bad = decodeFusedProgram(
      program, shapes, dtypes, out(0).shape, out(0).dtype, decoded);
  return bad.empty() ? Status::ok() : fail(bad);
}

Status OpChecker::checkGather() {
  // The operands counted before one is read (gatherAxis counts them too,
  // but its argument is read first).
  TSL_RETURN_IF_ERROR(counts(2, 2, 1));
  TSL_RETURN_IF_ERROR(
      gatherAxis(in(0).shape, "data", "gather from an empty axis"));
  return shapeIs(out(0), gatheredShape(in(0).shape), "result");
}

// gather_elements: data, indices (data's rank, no dim but `axis` larger)
// -> result (the indices' shape, data's dtype).
Status OpChecker::checkGatherElements() {
  TSL_RETURN_IF_ERROR(counts(2, 2, 1));
  TSL_RETURN_IF_ERROR(dtypeIs(in(1), "indices", {DType::I64, DType::I32}));
  TSL_RETURN_IF_ERROR(sameDType(in(0), out(0), "result"));
  const Shape &data = in(0).shape, &idx = in(1).shape;
  TSL_RETURN_IF_ERROR(axisOf(data, "data", 0));
  const int64_t rank = static_cast<int64_t>(data.size());
  if (static_cast<int64_t>(idx.size()) != rank)
    return fail("indices " + shapeStr(idx) + " and data " + shapeStr(data) +
                " have different ranks");
  for (int64_t d = 0; d < rank; ++d)
    if (d != op.axis && idx[d] > data[d])
      return fail("indices " + shapeStr(idx) + " are larger than data " +
                  shapeStr(data) + " in dim " + std::to_string(d));
  if (data[op.axis] == 0 && in(1).numel > 0)
    return fail("gather from an empty axis");
  return shapeIs(out(0), idx, "result");
}

// cumsum: one f32, f64, i64 or i32 operand -> result of its type; `axis`.
Status OpChecker::checkCumsum() {
  TSL_RETURN_IF_ERROR(counts(1, 1, 1));
  TSL_RETURN_IF_ERROR(dtypeIs(
      in(0), "operand", {DType::F32, DType::F64, DType::I64, DType::I32}));
  TSL_RETURN_IF_ERROR(sameDType(in(0), out(0), "result"));
  TSL_RETURN_IF_ERROR(shapeIs(out(0), in(0).shape, "result"));
  return axisOf(in(0).shape, "operand", 0);
}

// gather_grad: grad [data[:axis] ++ indices ++ data[axis+1:]], indices ->
// result (data's shape).
Status OpChecker::checkGatherGrad() {
  TSL_RETURN_IF_ERROR(counts(2, 2, 1));
  TSL_RETURN_IF_ERROR(dtypeIs(in(0), "grad", {DType::F32}));
  TSL_RETURN_IF_ERROR(
      gatherAxis(out(0).shape, "result", "scatter into an empty axis"));
  return shapeIs(in(0), gatheredShape(out(0).shape), "grad");
}

// adam_update: param, grad, exp_avg, exp_avg_sq, step_size, sqrt_bc2, decay
// -> param, exp_avg, exp_avg_sq; sgd_update: param, grad, momentum_buffer, lr
// -> param, momentum_buffer. Tensors of one f32 shape, f32 scalars.
Status OpChecker::checkOptimizerUpdate() {
  const bool adam = op.kind == OpKind::AdamUpdate;
  const size_t tensors = adam ? 4 : 3, scalars = adam ? 3 : 1;
  TSL_RETURN_IF_ERROR(
      counts(tensors + scalars, tensors + scalars, adam ? 3 : 2));
  TSL_RETURN_IF_ERROR(dtypeIs(in(0), "param", {DType::F32}));
  for (size_t i = 1; i < op.operands.size(); ++i) {
    std::string what = "operand " + std::to_string(i);
    TSL_RETURN_IF_ERROR(dtypeIs(in(i), what.c_str(), {DType::F32}));
    if (i < tensors)
      TSL_RETURN_IF_ERROR(shapeIs(in(i), in(0).shape, what.c_str()));
    else if (in(i).numel != 1)
      return fail(what + " must be a scalar, got " + shapeStr(in(i).shape));
  }
  for (size_t i = 0; i < op.results.size(); ++i) {
    std::string what = "result " + std::to_string(i);
    TSL_RETURN_IF_ERROR(dtypeIs(out(i), what.c_str(), {DType::F32}));
    TSL_RETURN_IF_ERROR(shapeIs(out(i), in(0).shape, what.c_str()));
  }
  return Status::ok();
}

// log_softmax_grad: output, grad -> result, one f32 shape; `axis`.
Status OpChecker::checkSoftmaxGrad() {
  TSL_RETURN_IF_ERROR(counts(2, 2, 1));
  TSL_RETURN_IF_ERROR(dtypeIs(in(0), "output", {DType::F32}));
  TSL_RETURN_IF_ERROR(sameDType(in(0), in(1), "grad"));
  TSL_RETURN_IF_ERROR(sameDType(in(0), out(0), "result"));
  TSL_RETURN_IF_ERROR(shapeIs(in(1), in(0).shape, "grad"));
  TSL_RETURN_IF_ERROR(shapeIs(out(0), in(0).shape, "result"));
  return axisOf(in(0).shape, "operand", -1);
}

namespace {

bool mayAliasInPlace(OpKind k) {
  switch (checkFamilyOf(k)) {
  case CheckFamily::Unary:
  case CheckFamily::Binary:
  case CheckFamily::Compare:
  case CheckFamily::Where:
  case CheckFamily::Reshape:
  case CheckFamily::Collective:
  case CheckFamily::OptimizerUpdate: // per element: reads all, then writes
    return true;
  default:
    return false;
  }
}

/// A slice's result placed inside its operand's bytes where it lies there
/// (contiguousSliceOffset; the buffer planner's views): the kernel skips
/// the copy.
bool isSliceView(const BufferInfo &x, const BufferInfo &y,
                 const std::vector<int64_t> &starts,
                 const std::vector<int64_t> &steps) {
  if (x.kind != BufferInfo::Kind::Arena || x.dtype != y.dtype)
    return false;
  int64_t at = contiguousSliceOffset(x.shape, starts, steps, y.shape);
  return at >= 0 &&
         y.offset == x.offset + static_cast<uint64_t>(at) * dtypeSize(x.dtype);
}

} // namespace

Status checkInstruction(const artifact::Instruction &inst, Program &p, Op &op,
                        const std::string &where) {
  OpChecker checker(inst, p, op, where);
  return checker.check();
}

Status checkAliasing(const Program &p, const Op &op, const std::string &where) {
  auto fail = [&](const std::string &m) { return Status::error(where + m); };
  // Results may alias an operand only exactly, and only for elementwise
  // ops; they must never overlap one another. Arena buffers overlap by
  // their bytes; a STATE buffer (storage of its own) only with itself.
  for (size_t r = 0; r < op.results.size(); ++r) {
    const BufferInfo &rb = p.buffers[op.results[r]];
    if (!rb.bytes)
      continue;
    const bool rState = rb.kind == BufferInfo::Kind::State;
    auto overlaps = [&](const BufferInfo &o) {
      if (rState || o.kind == BufferInfo::Kind::State)
        return o.id == rb.id;
      return o.kind == BufferInfo::Kind::Arena && o.bytes &&
             o.offset < rb.offset + rb.bytes && rb.offset < o.offset + o.bytes;
    };
    for (int id : op.operands) {
      const BufferInfo &ob = p.buffers[id];
      if (!overlaps(ob))
        continue;
      bool exact =
          ob.id == rb.id || (ob.offset == rb.offset && ob.bytes == rb.bytes);
      if (op.kind == OpKind::Slice && !rState &&
          isSliceView(ob, rb, op.starts, op.steps))
        continue;
      if (!exact || !mayAliasInPlace(op.kind))
        return fail(": result buffer " + std::to_string(rb.id) +
                    " overlaps operand buffer " + std::to_string(id) +
                    (rState ? "" : " in the arena"));
    }
    for (size_t r2 = r + 1; r2 < op.results.size(); ++r2)
      if (overlaps(p.buffers[op.results[r2]]))
        return fail(": result buffers " + std::to_string(rb.id) + " and " +
                    std::to_string(op.results[r2]) + " overlap");
  }
  return Status::ok();
}

} // namespace tessel::runtime::verifier