//===- Program.cpp - Validating a per-rank program ------------------------===//
//
// Everything an artifact says is checked here, once, at load time: buffer
// ids, dtypes, shapes, arena bounds, and for every instruction its operand
// and result counts, dtypes, shapes and attributes. Backends may then execute
// without checks; a corrupted artifact gives an error, never a crash.
//
//===----------------------------------------------------------------------===//
#include "tessel/runtime/Program.h"
#include "tessel/runtime/CustomOp.h"

#include "CollectiveAttrs.h"
#include "tessel/runtime/MappedFile.h"
#include "artifact.pb.h"
#include "tessel/runtime/Artifact.h"
#include "tessel/runtime/BufferPlanner.h"
#include "tessel/support/Checked.h"

#include <algorithm>
#include <cstring>
#include <set>
#include <unistd.h>

namespace tessel::runtime {

namespace {

constexpr size_t kMaxRank = 16;

std::string shapeStr(const Shape &s) { return shapeToString(s); }

bool broadcastShapes(const Shape &a, const Shape &b, Shape &out) {
  size_t n = std::max(a.size(), b.size());
  out.assign(n, 1);
  for (size_t i = 0; i < n; ++i) {
    int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (da != db && da != 1 && db != 1)
      return false;
    out[i] = da == 1 ? db : da;
  }
  return true;
}

/// Checks one instruction and fills the parsed attributes of `op`.
class OpChecker {
public:
  OpChecker(const artifact::Instruction &inst, Program &p, Op &op,
            std::string where)
      : inst(inst), p(p), op(op), where(std::move(where)) {}

  Status check();

private:
  const artifact::Instruction &inst;
  Program &p;
  Op &op;
  std::string where;

  Status fail(const std::string &m) const {
    return Status::error(where + ": " + m);
  }
  const BufferInfo &in(size_t i) const { return p.buffers[op.operands[i]]; }
  const BufferInfo &out(size_t i) const { return p.buffers[op.results[i]]; }

  Status counts(size_t minOps, size_t maxOps, size_t results) const {
    if (op.operands.size() < minOps || op.operands.size() > maxOps) {
      std::string want = minOps == maxOps ? std::to_string(minOps)
                                          : std::to_string(minOps) + " to " +
                                                std::to_string(maxOps);
      return fail("expects " + want + " operands, got " +
                  std::to_string(op.operands.size()));
    }
    if (results && op.results.size() != results)
      return fail("expects " + std::to_string(results) + " results, got " +
                  std::to_string(op.results.size()));
    return Status::ok();
  }
  Status dtypeIs(const BufferInfo &b, const char *role,
                 std::initializer_list<DType> allowed) const {
    for (DType d : allowed)
      if (b.dtype == d)
        return Status::ok();
    std::string list;
    for (DType d : allowed)
      list += std::string(list.empty() ? "" : "|") + dtypeName(d);
    return fail(std::string(role) + " has dtype " + dtypeName(b.dtype) +
                ", expected " + list);
  }
  Status sameDType(const BufferInfo &a, const BufferInfo &b,
                   const char *role) const {
    if (a.dtype != b.dtype)
      return fail(std::string(role) + " has dtype " + dtypeName(b.dtype) +
                  ", expected " + dtypeName(a.dtype));
    return Status::ok();
  }
  Status shapeIs(const BufferInfo &b, const Shape &want,
                 const char *role) const {
    if (b.shape != want)
      return fail(std::string(role) + " has shape " + shapeStr(b.shape) +
                  ", expected " + shapeStr(want));
    return Status::ok();
  }
  /// Operand i + 1 and the result have operand i's dtype: the pair of
  /// operands an elementwise op or a matmul combines.
  Status pairLike(size_t i) const {
    const std::string next = "operand " + std::to_string(i + 1);
    TSL_RETURN_IF_ERROR(sameDType(in(i), in(i + 1), next.c_str()));
    return sameDType(in(i), out(0), "result");
  }
  /// The result has the shape of every operand broadcast together (numpy).
  Status broadcastResult() const {
    Shape b = in(0).shape;
    std::string shapes = shapeStr(b);
    bool ok = true;
    for (size_t i = 1; i < op.operands.size(); ++i) {
      Shape next;
      ok = ok && broadcastShapes(b, in(i).shape, next);
      b = next;
      shapes += (i + 1 == op.operands.size() ? " and " : ", ") +
                shapeStr(in(i).shape);
    }
    if (!ok)
      return fail("operand shapes " + shapes + " do not broadcast");
    return shapeIs(out(0), b, "result");
  }

  // Attributes.
  const artifact::Attribute *attr(const char *name) const {
    auto it = inst.attrs().find(name);
    return it == inst.attrs().end() ? nullptr : &it->second;
  }
  Status ints(const char *name, std::vector<int64_t> &v, bool required,
              std::vector<int64_t> dflt = {}) const {
    const artifact::Attribute *a = attr(name);
    if (!a) {
      if (required)
        return fail("missing attribute '" + std::string(name) + "'");
      v = std::move(dflt);
      return Status::ok();
    }
    if (a->value_case() != artifact::Attribute::kInts)
      return fail("attribute '" + std::string(name) + "' must be an int list");
    v.assign(a->ints().values().begin(), a->ints().values().end());
    return Status::ok();
  }
  Status intAttr(const char *name, int64_t &v, int64_t dflt) const {
    std::vector<int64_t> l;
    TSL_RETURN_IF_ERROR(ints(name, l, false, {dflt}));
    if (l.size() != 1)
      return fail("attribute '" + std::string(name) +
                  "' must hold one integer");
    v = l[0];
    return Status::ok();
  }
  Status floatAttr(const char *name, float &v, float dflt) const {
    const artifact::Attribute *a = attr(name);
    if (!a) {
      v = dflt;
      return Status::ok();
    }
    if (a->value_case() == artifact::Attribute::kFloats &&
        a->floats().values_size() == 1) {
      v = a->floats().values(0);
      return Status::ok();
    }
    if (a->value_case() == artifact::Attribute::kInts &&
        a->ints().values_size() == 1) {
      v = static_cast<float>(a->ints().values(0));
      return Status::ok();
    }
    return fail("attribute '" + std::string(name) + "' must hold one float");
  }
  Status strAttr(const char *name, std::string &v, bool required) const {
    const artifact::Attribute *a = attr(name);
    if (!a) {
      if (required)
        return fail("missing attribute '" + std::string(name) + "'");
      return Status::ok();
    }
    if (a->value_case() != artifact::Attribute::kStr)
      return fail("attribute '" + std::string(name) + "' must be a string");
    v = a->str();
    return Status::ok();
  }
  Status axisAttr(const char *name, int64_t rank, int64_t dflt,
                  int64_t &axis) const {
    TSL_RETURN_IF_ERROR(intAttr(name, axis, dflt));
    if (axis < -rank || axis >= rank)
      return fail("attribute '" + std::string(name) + "' = " +
                  std::to_string(axis) + " is out of range for rank " +
                  std::to_string(rank));
    if (axis < 0)
      axis += rank;
    return Status::ok();
  }
  /// op.axis from attribute "axis" (default `dflt`) over `shape`, which
  /// `role` names: rank 0 has no axis.
  Status axisOf(const Shape &shape, const char *role, int64_t dflt) const {
    const int64_t rank = static_cast<int64_t>(shape.size());
    if (rank == 0)
      return fail(std::string(role) + " must have rank >= 1");
    return axisAttr("axis", rank, dflt, op.axis);
  }
  /// gather's operands (data, i64|i32 indices; the result of data's dtype)
  /// and its axis over `data`, the side (`role`) whose dim the indices pick
  /// from: an empty one (`emptyAxis`) only with no indices.
  Status gatherAxis(const Shape &data, const char *role,
                    const char *emptyAxis) const {
    TSL_RETURN_IF_ERROR(counts(2, 2, 1));
    TSL_RETURN_IF_ERROR(dtypeIs(in(1), "indices", {DType::I64, DType::I32}));
    TSL_RETURN_IF_ERROR(sameDType(in(0), out(0), "result"));
    TSL_RETURN_IF_ERROR(axisOf(data, role, 0));
    if (data[op.axis] == 0 && in(1).numel > 0)
      return fail(emptyAxis);
    return Status::ok();
  }
  /// data[:axis] ++ indices ++ data[axis+1:]: what gather takes of `data`.
  Shape gatheredShape(const Shape &data) const {
    Shape r(data.begin(), data.begin() + op.axis);
    r.insert(r.end(), in(1).shape.begin(), in(1).shape.end());
    r.insert(r.end(), data.begin() + op.axis + 1, data.end());
    return r;
  }
  Status pairAttr(const char *name, std::vector<int64_t> &v, int64_t dflt,
                  size_t n, bool required, int64_t minValue) const {
    TSL_RETURN_IF_ERROR(ints(name, v, required, std::vector<int64_t>(n, dflt)));
    if (v.size() != n)
      return fail("attribute '" + std::string(name) + "' must hold " +
                  std::to_string(n) + " integers, got " +
                  std::to_string(v.size()));
    for (int64_t x : v)
      if (x < minValue || x > (int64_t(1) << 32))
        return fail("attribute '" + std::string(name) + "' holds " +
                    std::to_string(x) + ", below " + std::to_string(minValue));
    return Status::ok();
  }

  Status checkFamily();
  Status checkUnary();
  Status checkBinary();
  Status checkCompare();
  Status checkWhere();
  Status checkMatmul();
  Status checkGemm();
  Status checkReduce();
  Status checkSoftmax();
  Status checkNorm();
  Status checkBatchNorm();
  Status checkGather();
  Status checkReshape();
  Status checkWait();
  Status checkGatherElements();
  Status checkCumsum();
  Status checkTranspose();
  Status checkSlice();
  Status checkConcat();
  Status checkSplit();
  Status checkExpand();
  Status checkConv();
  Status checkPool();
  Status checkGlobalPool();
  Status checkConvBackward();
  Status checkPoolBackward();
  Status checkCollective();
  Status convAttrs();
  Status poolAttrs();
  Status convResultIs(const Shape &x, const Shape &w, const BufferInfo &y,
                      const char *what);
  Status poolResultIs(const Shape &x, const BufferInfo &y, const char *what);
  Status checkGatherGrad();
  Status checkOptimizerUpdate();
  Status checkSoftmaxGrad();
  Status checkBatchNormTrain();
  Status checkCustom();
  Status checkChunk();
};

// The check families of the op table (TESSEL_RUNTIME_OP_CHECKS): each kind
// is validated by its family's check (OpChecker::check<Family>), then its
// declared attributes by type.
enum class CheckFamily {
  Unary, Binary, Compare, Where, Matmul, Gemm, Reduce, Softmax, Norm,
  BatchNorm, Gather, Reshape, Transpose, Slice, Concat, Split, Expand, Conv,
  Pool, GlobalPool, ConvBackward, PoolBackward, Collective, Wait, GatherGrad,
  OptimizerUpdate, SoftmaxGrad, BatchNormTrain, Custom, Chunk,
  GatherElements, Cumsum
};

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
    return fail("expects no results, got " +
                std::to_string(op.results.size()));
  TSL_RETURN_IF_ERROR(sameDType(in(0), in(1), "operand 1"));
  if (in(1).shape != in(0).shape &&
      (in(1).shape.size() != in(0).shape.size() || in(0).numel == 0 ||
       in(1).numel == 0 ||
       (in(1).numel % in(0).numel != 0 && in(0).numel % in(1).numel != 0)))
    return fail("operand 1 has shape " + shapeStr(in(1).shape) +
                ", expected " + shapeStr(in(0).shape) +
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
                  "' is not one of f32, i64, i32, bool");
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
    TSL_RETURN_IF_ERROR(
        dtypeIs(in(0), "operand", {DType::F32, DType::I64, DType::I32}));
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
    TSL_RETURN_IF_ERROR(dtypeIs(in(0), "operand", {DType::F32}));
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
  if (op.kind == OpKind::Pow)
    TSL_RETURN_IF_ERROR(dtypeIs(in(0), "operand 0", {DType::F32}));
  else if (op.kind == OpKind::Mod)
    TSL_RETURN_IF_ERROR(dtypeIs(in(0), "operand 0", {DType::I64, DType::I32}));
  else
    TSL_RETURN_IF_ERROR(
        dtypeIs(in(0), "operand 0", {DType::F32, DType::I64, DType::I32}));
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
  TSL_RETURN_IF_ERROR(dtypeIs(in(0), "operand 0",
                              {DType::F32, DType::I64, DType::I32, DType::Bool}));
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
  TSL_RETURN_IF_ERROR(dtypeIs(in(0), "operand 0", {DType::F32}));
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
  if (!broadcastShapes(Shape(a.begin(), a.end() - 2), Shape(b.begin(), b.end() - 2),
                       batch))
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
  for (size_t i = 0; i < op.operands.size(); ++i)
    TSL_RETURN_IF_ERROR(dtypeIs(in(i), "operand", {DType::F32}));
  TSL_RETURN_IF_ERROR(dtypeIs(out(0), "result", {DType::F32}));
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
    return fail("contraction dims differ: A " + shapeStr(in(0).shape) +
                ", B " + shapeStr(in(1).shape));
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
    TSL_RETURN_IF_ERROR(dtypeIs(in(0), "operand", {DType::F32}));
  else
    TSL_RETURN_IF_ERROR(
        dtypeIs(in(0), "operand", {DType::F32, DType::I64, DType::I32}));
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
  TSL_RETURN_IF_ERROR(dtypeIs(in(0), "operand", {DType::F32}));
  TSL_RETURN_IF_ERROR(sameDType(in(0), out(0), "result"));
  TSL_RETURN_IF_ERROR(shapeIs(out(0), in(0).shape, "result"));
  return axisOf(in(0).shape, "operand", -1);
}

Status OpChecker::checkNorm() {
  bool layer = op.kind == OpKind::LayerNorm;
  TSL_RETURN_IF_ERROR(counts(2, layer ? 3 : 2, 1));
  for (size_t i = 0; i < op.operands.size(); ++i)
    TSL_RETURN_IF_ERROR(dtypeIs(in(i), "operand", {DType::F32}));
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
  for (size_t i = 0; i < 5; ++i)
    TSL_RETURN_IF_ERROR(dtypeIs(in(i), "operand", {DType::F32}));
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

// cumsum: one f32, i64 or i32 operand -> result of its type; `axis`.
Status OpChecker::checkCumsum() {
  TSL_RETURN_IF_ERROR(counts(1, 1, 1));
  TSL_RETURN_IF_ERROR(
      dtypeIs(in(0), "operand", {DType::F32, DType::I64, DType::I32}));
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
  TSL_RETURN_IF_ERROR(counts(tensors + scalars, tensors + scalars,
                             adam ? 3 : 2));
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
  TSL_RETURN_IF_ERROR(ints("steps", op.steps, false,
                           std::vector<int64_t>(rank, 1)));
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
                      std::to_string(dim - 1) + "] (slices must be normalized)");
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
      return fail("operand " + std::to_string(i) + " has shape " +
                  shapeStr(s) + ", incompatible with " +
                  shapeStr(in(0).shape) + " on axis " +
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
    return fail("split sizes sum to " + std::to_string(total) +
                ", axis has " + std::to_string(dim));
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
                  (ceilO != floorO ? " (or " + std::to_string(ceilO) +
                                         " in ceil mode)"
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

namespace {

/// Instruction.action, read through protobuf's reflection: the generated
/// accessors reference the generated descriptors, and this file is linked
/// into the CUDA plugin too (libtessel-cuda.so), which must not register a
/// second copy of them in the process (protobuf aborts on that).
void readAction(const google::protobuf::Message &inst, PipelineAction &out) {
  const google::protobuf::Descriptor *d = inst.GetDescriptor();
  const google::protobuf::Reflection *r = inst.GetReflection();
  const google::protobuf::FieldDescriptor *f = d->FindFieldByName("action");
  if (!f || !r->HasField(inst, f))
    return;
  const google::protobuf::Message &a = r->GetMessage(inst, f);
  const google::protobuf::Descriptor *ad = a.GetDescriptor();
  const google::protobuf::Reflection *ar = a.GetReflection();
  const auto *phase = ad->FindFieldByName("phase");
  const auto *stage = ad->FindFieldByName("stage");
  const auto *mb = ad->FindFieldByName("microbatch");
  if (!phase || !stage || !mb)
    return;
  out.phase = ar->GetString(a, phase);
  out.stage = ar->GetInt32(a, stage);
  out.microbatch = ar->GetInt32(a, mb);
}

} // namespace

std::string PipelineAction::label() const {
  if (phase.empty())
    return "";
  std::string s = phase + " " + std::to_string(stage);
  if (microbatch >= 0)
    s += "." + std::to_string(microbatch);
  return s;
}

float Op::floatAttr(const std::string &name, float dflt) const {
  auto it = attrs.find(name);
  if (it == attrs.end())
    return dflt;
  const AttrValue &a = it->second;
  if (a.kind == AttrValue::Kind::Floats && a.floats.size() == 1)
    return a.floats[0];
  if (a.kind == AttrValue::Kind::Ints && a.ints.size() == 1)
    return static_cast<float>(a.ints[0]);
  return dflt;
}

int64_t Op::intAttr(const std::string &name, int64_t dflt) const {
  auto it = attrs.find(name);
  if (it == attrs.end() || it->second.kind != AttrValue::Kind::Ints ||
      it->second.ints.size() != 1)
    return dflt;
  return it->second.ints[0];
}

std::string Program::namesOf(
    const std::vector<std::pair<std::string, int>> &bindings) {
  std::string known;
  for (const auto &[n, b] : bindings)
    known += (known.empty() ? "" : ", ") + n;
  return known.empty() ? "none" : known;
}

int Program::findInput(const std::string &name) const {
  for (auto &[n, id] : inputs)
    if (n == name)
      return id;
  return -1;
}

int Program::findOutput(const std::string &name) const {
  for (auto &[n, id] : outputs)
    if (n == name)
      return id;
  return -1;
}

int Program::findState(const std::string &name) const {
  for (auto &[n, id] : states)
    if (n == name)
      return id;
  return -1;
}

uint64_t physicalMemoryBytes() {
  const long pages = sysconf(_SC_PHYS_PAGES), pageSize = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || pageSize <= 0)
    return 0;
  return checkedMul(uint64_t(pages), uint64_t(pageSize)).value_or(UINT64_MAX);
}

Status Program::create(const artifact::Program &proto,
                       const std::vector<const void *> &weightData,
                       std::vector<std::shared_ptr<Storage>> keepAlive,
                       const std::string &what,
                       std::shared_ptr<const Program> &out,
                       const std::vector<bool> *fileBacked) {
  auto fail = [&](const std::string &m) {
    return Status::error(what + ": " + m);
  };
  if (proto.format_version() != kFormatVersion)
    return fail("unsupported program format_version " +
                std::to_string(proto.format_version()) + " (this runtime reads " +
                std::to_string(kFormatVersion) + ")");
  auto p = std::make_shared<Program>();
  p->rank = proto.rank();
  p->arenaSize = proto.arena_size();
  p->storage = std::move(keepAlive);
  if (p->arenaSize > kMaxArenaBytes)
    return fail("the program's arena needs " + std::to_string(p->arenaSize) +
                " bytes, more than the " + std::to_string(kMaxArenaBytes) +
                " (64 TiB) a program may use; this machine has " +
                std::to_string(physicalMemoryBytes()) + " bytes of memory");

  // Buffers.
  int nb = proto.buffers_size();
  p->buffers.resize(nb);
  size_t constBytes = 0;
  std::set<std::string> stateNames;
  for (int i = 0; i < nb; ++i) {
    const artifact::Buffer &b = proto.buffers(i);
    BufferInfo &info = p->buffers[i];
    std::string bw = "buffer " + std::to_string(i) +
                     (b.name().empty() ? "" : " '" + b.name() + "'");
    if (b.id() != i)
      return fail(bw + ": id is " + std::to_string(b.id()) +
                  ", must equal its index");
    if (!isValidDType(b.dtype()))
      return fail(bw + ": invalid dtype " + std::to_string(b.dtype()));
    if (static_cast<size_t>(b.shape_size()) > kMaxRank)
      return fail(bw + ": rank " + std::to_string(b.shape_size()) +
                  " exceeds " + std::to_string(kMaxRank));
    info.id = i;
    info.dtype = static_cast<DType>(b.dtype());
    info.shape.assign(b.shape().begin(), b.shape().end());
    info.numel = numElements(info.shape);
    info.name = b.name();
    std::optional<uint64_t> bytes = byteSize(info.dtype, info.shape);
    if (info.numel < 0 || !bytes)
      return fail(bw + ": invalid shape " + shapeToString(info.shape) +
                  " (a negative dim, or more than 2^62 bytes of " +
                  dtypeName(info.dtype) + ")");
    info.bytes = *bytes;
    if (b.host() && b.kind() != artifact::Buffer::STATE)
      return fail(bw + ": only a STATE buffer can be kept in host memory "
                       "(Buffer.host)");
    switch (b.kind()) {
    case artifact::Buffer::ARENA:
      info.kind = BufferInfo::Kind::Arena;
      info.offset = b.offset();
      if (info.offset % dtypeSize(info.dtype))
        return fail(bw + ": offset " + std::to_string(info.offset) +
                    " is not aligned to its element size");
      if (!rangeInside(info.offset, info.bytes, p->arenaSize))
        return fail(bw + ": offset " + std::to_string(info.offset) +
                    " and length " + std::to_string(info.bytes) +
                    " lie outside the arena of " +
                    std::to_string(p->arenaSize) + " bytes");
      break;
    case artifact::Buffer::WEIGHT:
      info.kind = BufferInfo::Kind::Weight;
      break;
    case artifact::Buffer::STATE:
      // Its storage is the executor's; its initial value a Weight entry's
      // bytes (bound below) or zeros.
      info.kind = BufferInfo::Kind::State;
      if (info.name.empty())
        return fail(bw + ": a STATE buffer needs a name (its key)");
      if (!stateNames.insert(info.name).second)
        return fail(bw + ": another STATE buffer is named '" + info.name +
                    "'");
      p->states.emplace_back(info.name, i);
      info.host = b.host();
      if (b.global_shape_size() == 0 && b.global_offset_size() == 0) {
        // No layout recorded; a scalar is whole wherever it is.
        info.globalShape = info.shape;
        info.globalOffset.assign(info.shape.size(), 0);
        info.hasLayout = info.shape.empty();
        break;
      }
      info.hasLayout = true;
      info.globalShape.assign(b.global_shape().begin(), b.global_shape().end());
      info.globalOffset.assign(b.global_offset().begin(),
                               b.global_offset().end());
      if (info.globalShape.size() != info.shape.size() ||
          info.globalOffset.size() != info.shape.size())
        return fail(bw + ": STATE '" + info.name + "' has a global shape of " +
                    std::to_string(info.globalShape.size()) + " dims and " +
                    std::to_string(info.globalOffset.size()) +
                    " offsets for a block of " +
                    std::to_string(info.shape.size()) + " dims");
      for (size_t d = 0; d < info.shape.size(); ++d)
        if (info.globalShape[d] < 0 || info.globalOffset[d] < 0 ||
            info.globalOffset[d] > info.globalShape[d] ||
            info.globalShape[d] > (int64_t(1) << 48))
          return fail(bw + ": STATE '" + info.name + "': block at " +
                      shapeToString(info.globalOffset) + " of global shape " +
                      shapeToString(info.globalShape) + " is out of range");
      break;
    case artifact::Buffer::CONSTANT:
      info.kind = BufferInfo::Kind::Constant;
      if (b.data().size() != info.bytes)
        return fail(bw + ": constant holds " + std::to_string(b.data().size()) +
                    " bytes, " + dtypeName(info.dtype) + " " +
                    shapeToString(info.shape) + " needs " +
                    std::to_string(info.bytes));
      constBytes += (info.bytes + 63) / 64 * 64;
      break;
    default:
      return fail(bw + ": invalid kind " + std::to_string(b.kind()));
    }
  }
  // Constants: copied into one aligned block.
  if (constBytes) {
    auto block = std::make_shared<OwnedBytes>(constBytes);
    size_t off = 0;
    for (int i = 0; i < nb; ++i) {
      BufferInfo &info = p->buffers[i];
      if (info.kind != BufferInfo::Kind::Constant)
        continue;
      std::memcpy(block->data() + off, proto.buffers(i).data().data(),
                  info.bytes);
      info.data = block->data() + off;
      off += (info.bytes + 63) / 64 * 64;
    }
    p->storage.push_back(block);
  }

  // Weights.
  if (static_cast<size_t>(proto.weights_size()) != weightData.size() ||
      (fileBacked && fileBacked->size() != weightData.size()))
    return fail("internal: weight data count mismatch");
  for (int i = 0; i < proto.weights_size(); ++i) {
    const artifact::Weight &w = proto.weights(i);
    if (w.buffer() < 0 || w.buffer() >= nb)
      return fail("weight '" + w.name() + "': buffer " +
                  std::to_string(w.buffer()) + " does not exist");
    BufferInfo &info = p->buffers[w.buffer()];
    if (info.kind != BufferInfo::Kind::Weight &&
        info.kind != BufferInfo::Kind::State)
      return fail("weight '" + w.name() + "': buffer " +
                  std::to_string(w.buffer()) +
                  " is not of kind WEIGHT or STATE");
    if (info.kind == BufferInfo::Kind::State && w.name() != info.name)
      return fail("weight '" + w.name() + "': initialises STATE buffer " +
                  std::to_string(w.buffer()) + " '" + info.name +
                  "', whose weight entry must bear its name");
    if (info.data)
      return fail("weight '" + w.name() + "': buffer " +
                  std::to_string(w.buffer()) + " is bound twice");
    info.data = weightData[i];
    info.fileBacked = fileBacked && (*fileBacked)[i];
  }
  for (const BufferInfo &info : p->buffers)
    if (info.kind == BufferInfo::Kind::Weight && !info.data && info.bytes)
      return fail("buffer " + std::to_string(info.id) + " '" + info.name +
                  "' is a WEIGHT that no weight entry binds");

  // Inputs and outputs.
  std::set<std::string> names;
  for (int i = 0; i < proto.inputs_size(); ++i) {
    const artifact::Binding &b = proto.inputs(i);
    if (b.buffer() < 0 || b.buffer() >= nb)
      return fail("input '" + b.name() + "': buffer " +
                  std::to_string(b.buffer()) + " does not exist");
    if (p->buffers[b.buffer()].kind != BufferInfo::Kind::Arena)
      return fail("input '" + b.name() + "' is not an ARENA buffer");
    if (!names.insert(b.name()).second)
      return fail("input '" + b.name() + "' is declared twice");
    p->inputs.emplace_back(b.name(), b.buffer());
  }
  names.clear();
  for (int i = 0; i < proto.outputs_size(); ++i) {
    const artifact::Binding &b = proto.outputs(i);
    if (b.buffer() < 0 || b.buffer() >= nb)
      return fail("output '" + b.name() + "': buffer " +
                  std::to_string(b.buffer()) + " does not exist");
    if (!names.insert(b.name()).second)
      return fail("output '" + b.name() + "' is declared twice");
    p->outputs.emplace_back(b.name(), b.buffer());
  }

  // Instructions.
  p->ops.resize(proto.instructions_size());
  for (int i = 0; i < proto.instructions_size(); ++i) {
    const artifact::Instruction &inst = proto.instructions(i);
    Op &op = p->ops[i];
    auto kind = opKindFromInt(inst.op());
    std::string where = "instruction " + std::to_string(i);
    if (!kind)
      return fail(where + ": unknown op kind " + std::to_string(inst.op()));
    op.kind = *kind;
    op.name = inst.name();
    for (const auto &[key, value] : inst.attrs()) {
      AttrValue &a = op.attrs[key];
      switch (value.value_case()) {
      case artifact::Attribute::kInts:
        a.kind = AttrValue::Kind::Ints;
        a.ints.assign(value.ints().values().begin(), value.ints().values().end());
        break;
      case artifact::Attribute::kFloats:
        a.kind = AttrValue::Kind::Floats;
        a.floats.assign(value.floats().values().begin(),
                        value.floats().values().end());
        break;
      default:
        a.kind = AttrValue::Kind::Str;
        a.str = value.str();
        break;
      }
    }
    where += " (" + std::string(opKindName(op.kind)) +
             (op.name.empty() ? "" : " '" + op.name + "'") + ")";
    PipelineAction action;
    readAction(inst, action);
    if (!action.empty()) {
      static const char *const phases[] = {"F",    "B",    "W",   "BW",
                                           "STEP", "SEND", "RECV"};
      if (std::find(std::begin(phases), std::end(phases), action.phase) ==
          std::end(phases))
        return fail(where + ": pipeline action phase '" + action.phase +
                    "' is not one of F, B, W, BW, STEP, SEND, RECV");
      if (action.stage < 0 || action.microbatch < -1)
        return fail(where + ": pipeline action " + action.phase +
                    " has stage " + std::to_string(action.stage) +
                    " and microbatch " + std::to_string(action.microbatch) +
                    " (want stage >= 0, microbatch >= -1)");
      op.action = std::move(action);
      p->pipelined = true;
    }
    for (int id : inst.operands()) {
      if (id < 0 || id >= nb)
        return fail(where + ": operand buffer " + std::to_string(id) +
                    " does not exist");
      op.operands.push_back(id);
    }
    for (int id : inst.results()) {
      if (id < 0 || id >= nb)
        return fail(where + ": result buffer " + std::to_string(id) +
                    " does not exist");
      if (p->buffers[id].isReadOnly())
        return fail(where + ": result buffer " + std::to_string(id) +
                    " is read-only (not an ARENA or STATE buffer)");
      op.results.push_back(id);
    }
    if (op.operands.size() > (1u << 20) || op.results.size() > (1u << 20))
      return fail(where + ": too many operands or results");
    if (op.results.empty() && op.kind != OpKind::Send &&
        op.kind != OpKind::Wait)
      return fail(where + ": has no result");
    OpChecker checker(inst, *p, op, where);
    TSL_RETURN_IF_ERROR(checker.check().withContext(what));
    // Results may alias an operand only exactly, and only for elementwise
    // ops; they must never overlap one another. Arena buffers overlap by
    // their bytes; a STATE buffer (storage of its own) only with itself.
    for (size_t r = 0; r < op.results.size(); ++r) {
      const BufferInfo &rb = p->buffers[op.results[r]];
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
        const BufferInfo &ob = p->buffers[id];
        if (!overlaps(ob))
          continue;
        bool exact = ob.id == rb.id ||
                     (ob.offset == rb.offset && ob.bytes == rb.bytes);
        if (op.kind == OpKind::Slice && !rState &&
            isSliceView(ob, rb, op.starts, op.steps))
          continue;
        if (!exact || !mayAliasInPlace(op.kind))
          return fail(where + ": result buffer " + std::to_string(rb.id) +
                      " overlaps operand buffer " + std::to_string(id) +
                      (rState ? "" : " in the arena"));
      }
      for (size_t r2 = r + 1; r2 < op.results.size(); ++r2)
        if (overlaps(p->buffers[op.results[r2]]))
          return fail(where + ": result buffers " + std::to_string(rb.id) +
                      " and " + std::to_string(op.results[r2]) + " overlap");
    }
  }
  out = std::move(p);
  return Status::ok();
}

} // namespace tessel::runtime
