//===- OpChecker.h - One instruction's checks, by family ---------*- C++
//-*-===//
//
// Private to runtime/program: the checker ProgramVerifier.cpp runs on each
// instruction, whose family checks are defined in ProgramVerifier.cpp
// (elementwise, matmul, reductions, normalisation, gathers, training) and
// LayoutChecks.cpp (transpose, slice, concat, split, expand, conv, pool,
// collectives).
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_RUNTIME_PROGRAM_OPCHECKER_H
#define TESSEL_RUNTIME_PROGRAM_OPCHECKER_H

#include "tessel/runtime/Program.h"

#include "artifact.pb.h"

#include <initializer_list>
#include <string>
#include <vector>

namespace tessel::runtime::verifier {

inline std::string shapeStr(const Shape &s) { return shapeToString(s); }

inline bool broadcastShapes(const Shape &a, const Shape &b, Shape &out) {
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
      return fail("attribute '" + std::string(name) +
                  "' = " + std::to_string(axis) + " is out of range for rank " +
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
  Status checkAttention();
  Status checkFused();
  Status checkCustom();
  Status checkChunk();
};

// The check families of the op table (TESSEL_RUNTIME_OP_CHECKS): each kind
// is validated by its family's check (OpChecker::check<Family>), then its
// declared attributes by type.
enum class CheckFamily {
  Unary,
  Binary,
  Compare,
  Where,
  Matmul,
  Gemm,
  Reduce,
  Softmax,
  Norm,
  BatchNorm,
  Gather,
  Reshape,
  Transpose,
  Slice,
  Concat,
  Split,
  Expand,
  Conv,
  Pool,
  GlobalPool,
  ConvBackward,
  PoolBackward,
  Collective,
  Wait,
  GatherGrad,
  OptimizerUpdate,
  SoftmaxGrad,
  BatchNormTrain,
  Attention,
  Fused,
  Custom,
  Chunk,
  GatherElements,
  Cumsum
};

/// The check family of `kind` (the op table's TESSEL_RUNTIME_OP_CHECKS).
CheckFamily checkFamilyOf(OpKind kind);

} // namespace tessel::runtime::verifier

#endif // TESSEL_RUNTIME_PROGRAM_OPCHECKER_H
