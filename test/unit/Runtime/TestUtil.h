//===- TestUtil.h - Helpers shared by the runtime unit tests ----*- C++ -*-===//
#ifndef TESSEL_TEST_UNIT_RUNTIME_TESTUTIL_H
#define TESSEL_TEST_UNIT_RUNTIME_TESTUTIL_H

#include "tessel/runtime/HalfFloat.h"
#include "tessel/runtime/Runtime.h"

#include <gtest/gtest.h>

#include <algorithm>
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

/// Uniform f64 values in [lo, hi) (f64 models, docs/precision.md).
inline Tensor randomF64(const Shape &shape, std::mt19937 &rng, double lo = -2.0,
                        double hi = 2.0) {
  Tensor t(DType::F64, shape);
  std::uniform_real_distribution<double> d(lo, hi);
  for (int64_t i = 0; i < t.numElements(); ++i)
    t.data<double>()[i] = d(rng);
  return t;
}

/// An f32 tensor's values as f64 (exact): f64 kernels checked against the
/// double references of the f32 tests.
inline Tensor toF64(const Tensor &f) {
  Tensor d(DType::F64, f.shape());
  for (int64_t i = 0; i < f.numElements(); ++i)
    d.data<double>()[i] = f.data<float>()[i];
  return d;
}

/// Uniform values in [-2, 2] rounded to `half` (BF16 or F16): the half
/// tensor and its exact f32 widening.
inline std::pair<Tensor, Tensor> halfPair(DType half, const Shape &shape,
                                          std::mt19937 &rng) {
  Tensor f = randomF32(shape, rng), h(half, shape);
  for (int64_t i = 0; i < f.numElements(); ++i) {
    h.data<uint16_t>()[i] = f32ToHalf(half, f.data<float>()[i]);
    f.data<float>()[i] = halfToF32(half, h.data<uint16_t>()[i]);
  }
  return {f, h};
}

/// Uniform integers in [lo, hi] of the integer dtype `dtype` (of T).
template <typename T>
Tensor randomInt(DType dtype, const Shape &shape, std::mt19937 &rng, T lo,
                 T hi) {
  Tensor t(dtype, shape);
  std::uniform_int_distribution<T> d(lo, hi);
  for (int64_t i = 0; i < t.numElements(); ++i)
    t.data<T>()[i] = d(rng);
  return t;
}
inline Tensor randomI64(const Shape &shape, std::mt19937 &rng, int64_t lo,
                        int64_t hi) {
  return randomInt<int64_t>(DType::I64, shape, rng, lo, hi);
}
inline Tensor randomI32(const Shape &shape, std::mt19937 &rng, int32_t lo,
                        int32_t hi) {
  return randomInt<int32_t>(DType::I32, shape, rng, lo, hi);
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

/// y = gather(d, i) along axis 0 in an op named "emb": inputs d [rows, 2]
/// f32 and i [n] i64, output y [n, 2].
inline Status buildEmbeddingGather(int64_t rows, int64_t n,
                                   std::shared_ptr<const Program> &out) {
  ProgramBuilder pb;
  int d = pb.addInput("d", DType::F32, {rows, 2});
  int i = pb.addInput("i", DType::I64, {n});
  int y = pb.addBuffer(DType::F32, {n, 2});
  pb.addOp("gather", {d, i}, {y}, Attrs().i("axis", 0), "emb");
  pb.addOutput("y", y);
  return pb.build(out);
}

/// slice's attributes, one entry per dim.
struct SliceCase {
  std::vector<int64_t> starts, ends, steps;

  /// The result's shape over an operand of `dims` dims.
  Shape resultShape(size_t dims) const {
    Shape rs;
    for (size_t d = 0; d < dims; ++d) {
      int64_t s = starts[d], e = ends[d], st = steps[d];
      rs.push_back(st > 0 ? std::max<int64_t>(0, (e - s + st - 1) / st)
                          : std::max<int64_t>(0, (s - e - st - 1) / -st));
    }
    return rs;
  }
  Attrs attrs() const {
    return Attrs().is("starts", starts).is("ends", ends).is("steps", steps);
  }
};

/// slice cases over [6, 7, 5], both directions, steps beyond 1.
inline const std::vector<SliceCase> &sliceCases() {
  static const std::vector<SliceCase> cases = {
      {{0, 0, 0}, {6, 7, 5}, {1, 1, 1}},
      {{1, 2, 0}, {4, 7, 5}, {1, 2, 1}},
      {{5, 6, 4}, {-1, -1, -1}, {-1, -2, -1}},
      {{5, 6, 4}, {-1, -1, -1}, {-1, -1, -1}},
      {{0, 3, 1}, {6, 3, 4}, {3, 1, 2}},
      {{2, 0, 4}, {0, 7, 1}, {-1, 3, -3}}};
  return cases;
}

/// A conv2d case: x [N, C, H, W], w [O, C/group, KH, KW], strides, pads
/// (top, left, bottom, right), dilations, group, with or without a bias.
struct ConvCase {
  Shape x, w;
  std::vector<int64_t> strides, pads, dilations;
  int64_t group;
  bool bias = false;
};

/// The conv2d gradient cases of the CPU and CUDA tests: strides whose last
/// rows and columns reach no output, dilations, groups, depthwise,
/// ResNet's strided 3x3 and 1x1 downsample, a pointwise 1x1.
inline std::vector<ConvCase> convBackwardCases() {
  return {
      {{2, 3, 8, 8}, {4, 3, 3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, 1},
      {{2, 4, 9, 8}, {6, 4, 3, 2}, {2, 2}, {0, 1, 0, 0}, {1, 1}, 1},
      {{1, 4, 10, 10}, {4, 2, 3, 3}, {1, 2}, {2, 2, 2, 2}, {2, 1}, 2},
      {{1, 6, 5, 5}, {6, 1, 3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, 6},
      {{2, 16, 8, 8}, {32, 16, 3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, 1},
      {{2, 16, 8, 8}, {32, 16, 1, 1}, {2, 2}, {0, 0, 0, 0}, {1, 1}, 1},
      {{2, 8, 6, 6}, {16, 8, 1, 1}, {1, 1}, {0, 0, 0, 0}, {1, 1}, 1},
  };
}

/// The values i / n of [0, n) shuffled into `shape`: distinct, so that each
/// pooling window has one maximum.
inline Tensor distinctF32(const Shape &shape, std::mt19937 &rng) {
  Tensor x(DType::F32, shape);
  std::vector<float> v(numElements(shape));
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = float(i) / float(v.size());
  std::shuffle(v.begin(), v.end(), rng);
  std::copy(v.begin(), v.end(), x.data<float>());
  return x;
}

/// The result shape of conv2d case `c`.
inline Shape convResult(const ConvCase &c) {
  Shape y = {c.x[0], c.w[0], 0, 0};
  for (int d = 0; d < 2; ++d)
    y[2 + d] = (c.x[2 + d] + c.pads[d] + c.pads[d + 2] -
                c.dilations[d] * (c.w[2 + d] - 1) - 1) / c.strides[d] + 1;
  return y;
}

/// Calls fn(x index, w index, y index) for every product x * w that conv2d
/// case `c` adds into y (row-major indices).
template <typename F> void forEachConvTerm(const ConvCase &c, F fn) {
  const Shape y = convResult(c);
  const int64_t cg = c.x[1] / c.group, og = c.w[0] / c.group;
  for (int64_t n = 0; n < y[0]; ++n)
    for (int64_t o = 0; o < y[1]; ++o)
      for (int64_t r = 0; r < y[2]; ++r)
        for (int64_t s = 0; s < y[3]; ++s)
          for (int64_t ci = 0; ci < cg; ++ci)
            for (int64_t i = 0; i < c.w[2]; ++i)
              for (int64_t j = 0; j < c.w[3]; ++j) {
                int64_t ih = r * c.strides[0] - c.pads[0] + i * c.dilations[0];
                int64_t iw = s * c.strides[1] - c.pads[1] + j * c.dilations[1];
                if (ih < 0 || ih >= c.x[2] || iw < 0 || iw >= c.x[3])
                  continue;
                int64_t ch = (o / og) * cg + ci;
                fn(((n * c.x[1] + ch) * c.x[2] + ih) * c.x[3] + iw,
                   ((o * cg + ci) * c.w[2] + i) * c.w[3] + j,
                   ((n * y[1] + o) * y[2] + r) * y[3] + s);
              }
}

/// The attributes of conv2d case `c`.
inline Attrs convAttrs(const ConvCase &c) {
  return Attrs()
      .is("strides", c.strides)
      .is("pads", c.pads)
      .is("dilations", c.dilations)
      .i("group", c.group);
}

/// A max_pool or avg_pool case of the CPU and CUDA tests: x [N, C, H, W],
/// kernel, strides, pads (top, left, bottom, right), ceil mode.
struct PoolCase {
  Shape x;
  std::vector<int64_t> k, s, p;
  bool ceil;
};

/// Calls fn(case, op, count_include_pad, attributes, result shape) for
/// every case, op ("max_pool", "avg_pool") and count_include_pad (0, 1).
template <typename F> void forEachPoolCase(F fn) {
  const PoolCase cases[] = {
      {{1, 2, 6, 6}, {2, 2}, {2, 2}, {0, 0, 0, 0}, false},
      {{2, 3, 7, 9}, {3, 3}, {2, 2}, {1, 1, 1, 1}, false},
      {{1, 1, 5, 5}, {2, 2}, {2, 2}, {0, 0, 0, 0}, true},
      {{1, 2, 8, 7}, {3, 2}, {1, 2}, {1, 0, 1, 1}, false}};
  for (const PoolCase &c : cases)
    for (const char *op : {"max_pool", "avg_pool"})
      for (int cip : {0, 1}) {
        int64_t o[2];
        for (int d = 0; d < 2; ++d) {
          int64_t padded = c.x[2 + d] + c.p[d] + c.p[d + 2];
          o[d] = c.ceil ? (padded - c.k[d] + c.s[d] - 1) / c.s[d] + 1
                        : (padded - c.k[d]) / c.s[d] + 1;
        }
        fn(c, op, cip,
           Attrs()
               .is("kernel", c.k)
               .is("strides", c.s)
               .is("pads", c.p)
               .i("count_include_pad", cip),
           Shape{c.x[0], c.x[1], o[0], o[1]});
      }
}

/// Runs `prog` on the cpu backend with input `in` = x; output `out` in
/// `got`.
inline void runOneInput(const std::shared_ptr<const Program> &prog,
                        const std::string &in, const Tensor &x,
                        const std::string &out, Tensor &got) {
  std::unique_ptr<Executor> exec;
  ASSERT_TRUE(createExecutor("cpu", prog, ExecutorOptions(), exec).isOk());
  ASSERT_TRUE(exec->setInput(in, x).isOk());
  ASSERT_TRUE(exec->run().isOk());
  ASSERT_TRUE(exec->getOutput(out, got).isOk());
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
  ASSERT_TRUE(got.dtype() == DType::F32 || got.dtype() == DType::F64);
  ASSERT_EQ(got.numElements(), static_cast<int64_t>(want.size()));
  int bad = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    double g = got.dtype() == DType::F64 ? got.data<double>()[i]
                                         : got.data<float>()[i];
    double w = want[i];
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
