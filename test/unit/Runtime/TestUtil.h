//===- TestUtil.h - Helpers shared by the runtime unit tests ----*- C++ -*-===//
#ifndef TESSEL_TEST_UNIT_RUNTIME_TESTUTIL_H
#define TESSEL_TEST_UNIT_RUNTIME_TESTUTIL_H

#include "tessel/runtime/Runtime.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

namespace tessel::runtime::test {

inline Tensor randomF32(const Shape &shape, std::mt19937 &rng, float lo = -2.0f,
                        float hi = 2.0f) {
  Tensor t(DType::F32, shape);
  std::uniform_real_distribution<float> d(lo, hi);
  for (int64_t i = 0; i < t.numElements(); ++i)
    t.data<float>()[i] = d(rng);
  return t;
}

inline Tensor randomI64(const Shape &shape, std::mt19937 &rng, int64_t lo,
                        int64_t hi) {
  Tensor t(DType::I64, shape);
  std::uniform_int_distribution<int64_t> d(lo, hi);
  for (int64_t i = 0; i < t.numElements(); ++i)
    t.data<int64_t>()[i] = d(rng);
  return t;
}

inline Tensor randomBool(const Shape &shape, std::mt19937 &rng) {
  Tensor t(DType::Bool, shape);
  std::uniform_int_distribution<int> d(0, 1);
  for (int64_t i = 0; i < t.numElements(); ++i)
    t.data<uint8_t>()[i] = static_cast<uint8_t>(d(rng));
  return t;
}

/// Row-major strides.
inline std::vector<int64_t> stridesOf(const Shape &s) {
  std::vector<int64_t> st(s.size(), 1);
  for (size_t d = s.size(); d-- > 1;)
    st[d - 1] = st[d] * s[d];
  return st;
}

/// Multi-index of flat index `i` in `s`.
inline std::vector<int64_t> unravel(int64_t i, const Shape &s) {
  std::vector<int64_t> idx(s.size());
  for (size_t d = s.size(); d-- > 0;) {
    idx[d] = i % s[d];
    i /= s[d];
  }
  return idx;
}

/// Flat index in `in` of result multi-index `idx` under numpy broadcasting.
inline int64_t broadcastIndex(const std::vector<int64_t> &idx, const Shape &in) {
  int64_t off = 0, stride = 1;
  for (size_t k = 0; k < in.size(); ++k) {
    size_t d = in.size() - 1 - k, o = idx.size() - 1 - k;
    if (in[d] != 1)
      off += idx[o] * stride;
    stride *= in[d];
  }
  return off;
}

inline Shape broadcastShape(const Shape &a, const Shape &b) {
  size_t n = std::max(a.size(), b.size());
  Shape r(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    r[i] = da == 1 ? db : da;
  }
  return r;
}

/// A one-instruction program `op` with graph inputs in0.. and outputs
/// out0... Operands from index `firstConstant` on are constants of the
/// program instead of inputs (as weights are: kernels may prepare them when
/// the executor is created).
inline Status buildOneOp(const std::string &op, const std::vector<Tensor> &inputs,
                         const std::vector<std::pair<DType, Shape>> &results,
                         Attrs attrs, std::shared_ptr<const Program> &out,
                         size_t firstConstant = SIZE_MAX) {
  ProgramBuilder pb;
  std::vector<int> ins, outs;
  for (size_t i = 0; i < inputs.size(); ++i)
    ins.push_back(i >= firstConstant
                      ? pb.addConstant(inputs[i].dtype(), inputs[i].shape(),
                                       inputs[i].data())
                      : pb.addInput("in" + std::to_string(i), inputs[i].dtype(),
                                    inputs[i].shape()));
  for (size_t i = 0; i < results.size(); ++i) {
    outs.push_back(pb.addBuffer(results[i].first, results[i].second));
    pb.addOutput("out" + std::to_string(i), outs.back());
  }
  pb.addOp(op, ins, outs, std::move(attrs));
  return pb.build(out);
}

/// Builds buildOneOp's program, runs it and returns the results.
inline std::vector<Tensor> runOp(const std::string &op,
                                 const std::vector<Tensor> &inputs,
                                 const std::vector<std::pair<DType, Shape>> &results,
                                 Attrs attrs = {}, int threads = 1,
                                 size_t firstConstant = SIZE_MAX) {
  std::shared_ptr<const Program> prog;
  Status s = buildOneOp(op, inputs, results, std::move(attrs), prog, firstConstant);
  EXPECT_TRUE(s.isOk()) << s.message();
  if (!s) // empty results: the callers' comparisons fail without crashing
    return std::vector<Tensor>(results.size(), Tensor(DType::F32, {0}));
  std::unique_ptr<Executor> exec;
  ExecutorOptions eo;
  eo.threads = threads;
  s = createExecutor("cpu", prog, eo, exec);
  EXPECT_TRUE(s.isOk()) << s.message();
  for (size_t i = 0; i < std::min(inputs.size(), firstConstant); ++i) {
    s = exec->setInput("in" + std::to_string(i), inputs[i]);
    EXPECT_TRUE(s.isOk()) << s.message();
  }
  s = exec->run();
  EXPECT_TRUE(s.isOk()) << s.message();
  std::vector<Tensor> out;
  for (size_t i = 0; i < results.size(); ++i) {
    Tensor t;
    s = exec->getOutput("out" + std::to_string(i), t);
    EXPECT_TRUE(s.isOk()) << s.message();
    out.push_back(t);
  }
  return out;
}

/// Expects |got - want| <= atol + rtol * |want| elementwise.
inline void expectNear(const Tensor &got, const std::vector<double> &want,
                       double atol = 1e-5, double rtol = 1e-5) {
  ASSERT_EQ(got.dtype(), DType::F32);
  ASSERT_EQ(got.numElements(), static_cast<int64_t>(want.size()));
  int bad = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    double g = got.data<float>()[i], w = want[i];
    bool ok = (std::isnan(w) && std::isnan(g)) ||
              (std::isinf(w) && g == w) ||
              std::fabs(g - w) <= atol + rtol * std::fabs(w);
    if (!ok && ++bad <= 5)
      ADD_FAILURE() << "element " << i << ": got " << g << ", want " << w;
  }
  EXPECT_EQ(bad, 0) << bad << " of " << want.size() << " elements differ";
}

template <typename T>
void expectEqual(const Tensor &got, const std::vector<T> &want) {
  ASSERT_EQ(got.numElements(), static_cast<int64_t>(want.size()));
  int bad = 0;
  for (size_t i = 0; i < want.size(); ++i)
    if (got.data<T>()[i] != want[i] && ++bad <= 5)
      ADD_FAILURE() << "element " << i << ": got " << +got.data<T>()[i]
                    << ", want " << +want[i];
  EXPECT_EQ(bad, 0);
}

inline std::vector<double> toDouble(const Tensor &t) {
  std::vector<double> r(t.numElements());
  for (int64_t i = 0; i < t.numElements(); ++i)
    r[i] = t.data<float>()[i];
  return r;
}

} // namespace tessel::runtime::test

#endif // TESSEL_TEST_UNIT_RUNTIME_TESTUTIL_H
