//===- CudaTest.cpp - The cuda backend against the cpu backend ------------===//
//
// A conformance suite: every program is built once with ProgramBuilder, run
// on "cpu" and on "cuda", and the outputs compared (floats within a small
// tolerance, since sums run in another order; integers and bools exactly).
// Without a CUDA device (no driver, or none visible) every test that needs
// one is skipped with "no CUDA device (...)"; ctest lists them as skipped.
//
//===----------------------------------------------------------------------===//
#include "CudaExecutor.h"
#include "tessel/runtime/Communicator.h"
#include "CudaTestUtil.h"
#include "tessel/runtime/HalfFloat.h"
#include "GemmPlan.h"
#include "../ScratchDir.h"
#include "MlpFixture.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <limits>
#include <sys/wait.h>

namespace tessel::runtime::test {
namespace {

//===----------------------------------------------------------------------===//
// Without a device: the backend is registered and says why it cannot run.
//===----------------------------------------------------------------------===//

TEST(CudaBackend, RegisteredAndReportsMissingDevice) {
  std::vector<std::string> b = availableBackends();
  EXPECT_NE(std::find(b.begin(), b.end(), "cuda"), b.end());
  Mlp mlp(1);
  ProgramBuilder pb;
  mlp.build(pb);
  std::shared_ptr<const Program> prog;
  ASSERT_TRUE(pb.build(prog).isOk());
  std::unique_ptr<Executor> exec;
  Status s = createExecutor("cuda", prog, {}, exec);
  std::string why;
  if (cudaAvailable(why)) {
    ASSERT_TRUE(s.isOk()) << s.message();
    EXPECT_STREQ(exec->backend(), "cuda");
  } else {
    ASSERT_FALSE(s.isOk());
    EXPECT_EQ(s.message().rfind("no CUDA device", 0), 0u) << s.message();
  }
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

TEST(CudaConformance, UnaryF32) {
  TSL_REQUIRE_CUDA();
  std::mt19937 rng(1);
  Tensor x = randomF32({3, 257}, rng, -6.0f, 6.0f);
  Tensor pos = randomF32({3, 257}, rng, 0.01f, 50.0f);
  x.data<float>()[0] = 0.0f;
  x.data<float>()[1] = -0.0f;
  x.data<float>()[2] = std::numeric_limits<float>::quiet_NaN();
  x.data<float>()[3] = std::numeric_limits<float>::infinity();
  x.data<float>()[4] = -std::numeric_limits<float>::infinity();
  for (const char *op :
       {"neg", "abs", "relu", "exp", "tanh", "erf", "sigmoid", "gelu",
        "reciprocal", "softplus", "hard_swish", "leaky_relu", "softsign",
        "floor", "ceil", "round", "sign"})
    conformSame(op, x);
  conformSame("gelu", x, Attrs().i("tanh_approximation", 1));
  conformSame("leaky_relu", x, Attrs().f("alpha", 0.2f));
  for (const char *op : {"log", "sqrt", "rsqrt"})
    conformSame(op, pos);
}

TEST(CudaConformance, UnaryIntAndNot) {
  TSL_REQUIRE_CUDA();
  std::mt19937 rng(2);
  Tensor i64 = randomI64({5, 33}, rng, -1000, 1000);
  i64.data<int64_t>()[0] = std::numeric_limits<int64_t>::min();
  Tensor i32 = randomI32({5, 33}, rng, -1000, 1000);
  for (const char *op : {"neg", "abs", "relu"}) {
    conformSame(op, i64);
    conformSame(op, i32);
  }
  conformSame("not", randomBool({7, 9}, rng));
}

TEST(CudaConformance, Cast) {
  TSL_REQUIRE_CUDA();
  std::mt19937 rng(3);
  Tensor f = randomF32({4, 50}, rng, -100.0f, 100.0f);
  f.data<float>()[0] = 0.0f;
  const std::vector<Tensor> srcs = {f, randomI64({4, 50}, rng, -99, 99),
                                    randomI32({4, 50}, rng, -99, 99),
                                    randomBool({4, 50}, rng)};
  const std::vector<std::pair<const char *, DType>> tos = {
      {"f32", DType::F32}, {"i64", DType::I64}, {"i32", DType::I32},
      {"bool", DType::Bool}};
  for (const Tensor &x : srcs)
    for (const auto &[name, dt] : tos)
      conformOp("cast", {x}, {{dt, x.shape()}}, Attrs().s("to", name));
}

TEST(CudaConformance, BinaryBroadcastF32) {
  TSL_REQUIRE_CUDA();
  std::mt19937 rng(4);
  const std::vector<std::pair<Shape, Shape>> shapes = {
      {{2, 3, 4}, {2, 3, 4}}, {{2, 3, 4}, {4}},       {{2, 3, 4}, {3, 1}},
      {{2, 1, 4}, {1, 3, 1}}, {{5, 1}, {1, 6}},       {{2, 3, 4}, {}},
      {{}, {3, 2}},           {{1, 300}, {257, 1}},   {{2, 3, 1, 5, 1}, {3, 4, 1, 6}}};
  for (const auto &[as, bs] : shapes) {
    SCOPED_TRACE(shapeToString(as) + " op " + shapeToString(bs));
    Tensor a = randomF32(as, rng), b = randomF32(bs, rng, 0.5f, 2.0f);
    Shape rs = broadcastShape(as, bs);
    for (const char *op : {"add", "sub", "mul", "div", "max", "min", "pow"})
      conformOp(op, {a, b}, {{DType::F32, rs}}, {}, {1e-5, 1e-5});
    conformOp("fmod", {a, b}, {{DType::F32, rs}}, {}, {0, 0}); // exact
  }
  // NaN propagation of max/min; pow's scalar fast paths.
  Tensor a = randomF32({64}, rng, 0.1f, 3.0f), b = randomF32({64}, rng);
  a.data<float>()[0] = std::numeric_limits<float>::quiet_NaN();
  b.data<float>()[1] = std::numeric_limits<float>::quiet_NaN();
  conformOp("max", {a, b}, {{DType::F32, {64}}});
  conformOp("min", {a, b}, {{DType::F32, {64}}});
  // relu_grad (same shapes only): 0 and -0 pass nothing.
  Tensor y = randomF32({64}, rng);
  y.data<float>()[2] = 0.0f;
  y.data<float>()[3] = -0.0f;
  conformOp("relu_grad", {y, b}, {{DType::F32, {64}}});
  for (float e : {2.0f, 3.0f, 1.0f, 0.5f, -1.0f, 1.7f}) {
    Tensor ex = Tensor::fromVector(DType::F32, {}, std::vector<float>{e});
    conformOp("pow", {a, ex}, {{DType::F32, {64}}});
  }
}

TEST(CudaConformance, BinaryInt) {
  TSL_REQUIRE_CUDA();
  std::mt19937 rng(5);
  Tensor a64 = randomI64({6, 7}, rng, -50, 50),
         b64 = randomI64({7}, rng, -5, 5); // includes 0 and -1
  Tensor a32 = randomI32({6, 7}, rng, -50, 50),
         b32 = randomI32({6, 1}, rng, -5, 5);
  a64.data<int64_t>()[0] = std::numeric_limits<int64_t>::min();
  b64.data<int64_t>()[0] = -1;
  for (const char *op : {"add", "sub", "mul", "div", "max", "min", "mod", "fmod"}) {
    conformOp(op, {a64, b64}, {{DType::I64, {6, 7}}});
    conformOp(op, {a32, b32}, {{DType::I32, {6, 7}}});
  }
}

TEST(CudaConformance, CompareAndWhere) {
  TSL_REQUIRE_CUDA();
  std::mt19937 rng(6);
  Tensor af = randomF32({4, 5}, rng), bf = randomF32({5}, rng);
  af.data<float>()[3] = bf.data<float>()[3];
  Tensor ai = randomI64({4, 5}, rng, -2, 2), bi = randomI64({4, 1}, rng, -2, 2);
  Tensor ab = randomBool({4, 5}, rng), bb = randomBool({1, 5}, rng);
  for (const char *p : {"eq", "ne", "lt", "le", "gt", "ge"}) {
    conformOp("compare", {af, bf}, {{DType::Bool, {4, 5}}},
              Attrs().s("predicate", p));
    conformOp("compare", {ai, bi}, {{DType::Bool, {4, 5}}},
              Attrs().s("predicate", p));
    conformOp("compare", {ab, bb}, {{DType::Bool, {4, 5}}},
              Attrs().s("predicate", p));
  }
  Tensor c = randomBool({3, 1, 5}, rng);
  conformOp("where", {c, randomF32({4, 5}, rng), randomF32({3, 4, 1}, rng)},
            {{DType::F32, {3, 4, 5}}});
  conformOp("where", {c, randomI64({1}, rng, -9, 9), randomI64({4, 5}, rng, -9, 9)},
            {{DType::I64, {3, 4, 5}}});
  conformOp("where", {c, randomBool({4, 5}, rng), randomBool({3, 4, 5}, rng)},
            {{DType::Bool, {3, 4, 5}}});
  // Four per thread (innermost dim a multiple of 4, strides 0 or 1): a
  // causal mask over scores with a scalar fill, a column of conditions, and
  // 4-byte integers through the same kernel.
  Tensor mask = randomBool({1, 1, 8, 12}, rng);
  conformOp("where",
            {mask, randomF32({2, 3, 8, 12}, rng),
             Tensor::fromVector(DType::F32, {}, std::vector<float>{-3.0e38f})},
            {{DType::F32, {2, 3, 8, 12}}});
  conformOp("where",
            {randomBool({5, 1}, rng), randomF32({5, 8}, rng), randomF32({8}, rng)},
            {{DType::F32, {5, 8}}});
  conformOp("where",
            {mask, randomI32({2, 1, 8, 12}, rng, -9, 9),
             randomI32({1, 3, 1, 12}, rng, -9, 9)},
            {{DType::I32, {2, 3, 8, 12}}});
}

//===----------------------------------------------------------------------===//
// Linear algebra
//===----------------------------------------------------------------------===//

TEST(CudaConformance, MatMul) {
  TSL_REQUIRE_CUDA();
  std::mt19937 rng(7);
  struct Case {
    Shape a, b, y;
  };
  const std::vector<Case> cases = {
      {{3, 4}, {4, 5}, {3, 5}},
      {{2, 3, 4}, {4, 5}, {2, 3, 5}},             // b shared: one folded GEMM
      {{2, 3, 4}, {2, 4, 5}, {2, 3, 5}},          // strided batched
      {{4}, {2, 4, 5}, {2, 5}},                   // a shared (stride 0)
      {{2, 1, 3, 4}, {1, 3, 4, 5}, {2, 3, 3, 5}}, // batch broadcast both ways
      {{4}, {4, 5}, {5}},
      {{3, 4}, {4}, {3}},
      {{4}, {4}, {}},
      {{2, 1, 3, 64}, {3, 64, 33}, {2, 3, 3, 33}},
      {{1, 128, 96}, {96, 80}, {1, 128, 80}},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(shapeToString(c.a) + " @ " + shapeToString(c.b));
    conformOp("matmul", {randomF32(c.a, rng), randomF32(c.b, rng)},
              {{DType::F32, c.y}}, {}, {1e-4, 1e-4});
  }
}

TEST(CudaConformance, Gemm) {
  TSL_REQUIRE_CUDA();
  std::mt19937 rng(8);
  const int64_t m = 5, n = 7, k = 9;
  for (int ta : {0, 1})
    for (int tb : {0, 1})
      for (const Shape &cs : std::vector<Shape>{{}, {n}, {m, 1}, {m, n}, {1}}) {
        Tensor a = randomF32(ta ? Shape{k, m} : Shape{m, k}, rng);
        Tensor b = randomF32(tb ? Shape{n, k} : Shape{k, n}, rng);
        std::vector<Tensor> ins = {a, b};
        bool hasC = !(cs.size() == 1 && cs[0] == 1);
        if (hasC)
          ins.push_back(randomF32(cs, rng));
        SCOPED_TRACE("trans " + std::to_string(ta) + std::to_string(tb) +
                     " C " + (hasC ? shapeToString(cs) : "none"));
        conformOp("gemm", ins, {{DType::F32, {m, n}}},
                  Attrs()
                      .i("trans_a", ta)
                      .i("trans_b", tb)
                      .f("alpha", 0.75f)
                      .f("beta", hasC ? 1.5f : 1.0f),
                  {1e-4, 1e-4});
      }
}

TEST(CudaConformance, Conv2D) {
  TSL_REQUIRE_CUDA();
  std::mt19937 rng(9);
  struct Case {
    Shape x, w;
    std::vector<int64_t> strides, pads, dilations;
    int64_t group;
    bool bias;
  };
  const std::vector<Case> cases = {
      {{1, 3, 8, 8}, {4, 3, 3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, 1, true},
      {{2, 4, 9, 7}, {6, 4, 3, 2}, {2, 1}, {0, 1, 2, 0}, {1, 1}, 1, false},
      {{1, 4, 10, 10}, {4, 2, 3, 3}, {1, 2}, {2, 2, 2, 2}, {2, 1}, 2, true},
      {{1, 6, 5, 5}, {6, 1, 3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, 6, true},
      {{2, 8, 6, 6}, {16, 8, 1, 1}, {1, 1}, {0, 0, 0, 0}, {1, 1}, 1, true},
      {{1, 3, 32, 32}, {16, 3, 7, 7}, {2, 2}, {3, 3, 3, 3}, {1, 1}, 1, true},
  };
  for (const Case &c : cases) {
    int64_t oh = (c.x[2] + c.pads[0] + c.pads[2] -
                  c.dilations[0] * (c.w[2] - 1) - 1) / c.strides[0] + 1;
    int64_t ow = (c.x[3] + c.pads[1] + c.pads[3] -
                  c.dilations[1] * (c.w[3] - 1) - 1) / c.strides[1] + 1;
    std::vector<Tensor> ins = {randomF32(c.x, rng), randomF32(c.w, rng)};
    if (c.bias)
      ins.push_back(randomF32({c.w[0]}, rng));
    SCOPED_TRACE(shapeToString(c.x) + " * " + shapeToString(c.w));
    conformOp("conv2d", ins, {{DType::F32, {c.x[0], c.w[0], oh, ow}}},
              Attrs()
                  .is("strides", c.strides)
                  .is("pads", c.pads)
                  .is("dilations", c.dilations)
                  .i("group", c.group),
              {1e-4, 1e-4});
  }
}

TEST(CudaConformance, Pools) {
  TSL_REQUIRE_CUDA();
  std::mt19937 rng(10);
  forEachPoolCase([&](const PoolCase &c, const char *op, int, Attrs attrs,
                      const Shape &y) {
    conformOp(op, {randomF32(c.x, rng)}, {{DType::F32, y}}, std::move(attrs));
  });
  conformOp("global_avg_pool", {randomF32({2, 3, 7, 7}, rng)},
            {{DType::F32, {2, 3, 1, 1}}});
  conformOp("global_avg_pool", {randomF32({1, 2, 40, 40}, rng)},
            {{DType::F32, {1, 2, 1, 1}}});
}

//===----------------------------------------------------------------------===//
// Reductions and normalisation
//===----------------------------------------------------------------------===//

TEST(CudaConformance, Reduce) {
  TSL_REQUIRE_CUDA();
  std::mt19937 rng(11);
  const Shape shape = {3, 4, 5, 6};
  Tensor f = randomF32(shape, rng);
  Tensor i64 = randomI64(shape, rng, -100, 100);
  Tensor i32 = randomI32(shape, rng, -100, 100);
  const std::vector<std::vector<int64_t>> dimSets = {
      {}, {0}, {3}, {1, 2}, {0, 3}, {0, 1, 2, 3}, {-1}, {0, 2}};
  for (const auto &dims : dimSets)
    for (int keep : {0, 1}) {
      std::vector<bool> red(shape.size(), dims.empty());
      for (int64_t d : dims)
        red[d < 0 ? d + 4 : d] = true;
      Shape rs;
      for (size_t d = 0; d < shape.size(); ++d)
        if (!red[d])
          rs.push_back(shape[d]);
        else if (keep)
          rs.push_back(1);
      Attrs at;
      at.is("dims", dims).i("keep_dims", keep);
      SCOPED_TRACE("dims " + shapeToString(dims) + " keep " +
                   std::to_string(keep));
      for (const char *op : {"reduce_sum", "reduce_mean", "reduce_max"})
        conformOp(op, {f}, {{DType::F32, rs}}, at, {1e-4, 1e-4});
      for (const char *op : {"reduce_sum", "reduce_max"}) {
        conformOp(op, {i64}, {{DType::I64, rs}}, at);
        conformOp(op, {i32}, {{DType::I32, rs}}, at);
      }
    }
  // Long reductions take the one-block-per-output kernel.
  Tensor big = randomF32({3, 5000}, rng);
  for (const char *op : {"reduce_sum", "reduce_mean", "reduce_max"}) {
    conformOp(op, {big}, {{DType::F32, {3, 1}}},
              Attrs().is("dims", {1}), {1e-4, 1e-4});
    conformOp(op, {big}, {{DType::F32, {1, 5000}}},
              Attrs().is("dims", {0}), {1e-4, 1e-4});
  }
  // Outer reductions over contiguous kept elements take the column kernel
  // (kept >= 32, reduced >= 64): a bias's gradient, a middle dim, a kept
  // count that is no multiple of 32.
  struct Outer {
    Shape shape;
    std::vector<int64_t> dims;
    Shape result;
  };
  for (const Outer &c : std::vector<Outer>{{{300, 70}, {0}, {70}},
                                           {{5, 130, 40}, {0, 1}, {40}},
                                           {{8, 100, 33}, {1}, {8, 33}},
                                           {{64, 4, 96}, {0}, {4, 96}}}) {
    SCOPED_TRACE("outer " + shapeToString(c.shape));
    Tensor xf = randomF32(c.shape, rng);
    Attrs at;
    at.is("dims", c.dims).i("keep_dims", 0);
    for (const char *op : {"reduce_sum", "reduce_mean", "reduce_max"})
      conformOp(op, {xf}, {{DType::F32, c.result}}, at, {1e-4, 1e-4});
    conformOp("reduce_sum", {randomI64(c.shape, rng, -100, 100)},
              {{DType::I64, c.result}}, at);
    conformOp("reduce_max", {randomI32(c.shape, rng, -100, 100)},
              {{DType::I32, c.result}}, at);
  }
}

TEST(CudaConformance, Softmax) {
  TSL_REQUIRE_CUDA();
  std::mt19937 rng(12);
  for (const Shape &s : std::vector<Shape>{{4, 10}, {2, 3, 7}, {3, 3000}, {5}})
    for (int64_t axis = -1; axis >= -static_cast<int64_t>(s.size()); --axis)
      for (const char *op : {"softmax", "log_softmax"}) {
        SCOPED_TRACE(shapeToString(s) + " axis " + std::to_string(axis));
        conformSame(op, randomF32(s, rng, -8.0f, 8.0f), Attrs().i("axis", axis),
                    {1e-5, 1e-4});
      }
}

TEST(CudaConformance, Norms) {
  TSL_REQUIRE_CUDA();
  std::mt19937 rng(13);
  for (const Shape &s :
       std::vector<Shape>{{4, 16}, {2, 3, 8}, {2, 1000}, {3, 2, 5}}) {
    Tensor x = randomF32(s, rng, -3.0f, 3.0f);
    for (int64_t axis : {int64_t(-1), int64_t(1)}) {
      int64_t ax = axis < 0 ? axis + static_cast<int64_t>(s.size()) : axis;
      Shape norm(s.begin() + ax, s.end());
      Tensor scale = randomF32(norm, rng), bias = randomF32(norm, rng);
      SCOPED_TRACE(shapeToString(s) + " axis " + std::to_string(axis));
      Attrs at;
      at.i("axis", axis).f("epsilon", 1e-5f);
      conformOp("layer_norm", {x, scale, bias}, {{DType::F32, s}}, at,
                {5e-5, 1e-4});
      conformOp("layer_norm", {x, scale}, {{DType::F32, s}}, at, {5e-5, 1e-4});
      conformOp("rms_norm", {x, scale}, {{DType::F32, s}}, at, {5e-5, 1e-4});
      // Scale and bias that broadcast over the normalized dims.
      if (norm.size() >= 2) {
        Shape last = {norm.back()};
        conformOp("layer_norm",
                  {x, randomF32(last, rng), randomF32({1}, rng)},
                  {{DType::F32, s}}, at, {5e-5, 1e-4});
      }
    }
  }
  Tensor x = randomF32({2, 3, 4, 5}, rng);
  conformOp("batch_norm",
            {x, randomF32({3}, rng), randomF32({3}, rng), randomF32({3}, rng),
             randomF32({3}, rng, 0.1f, 2.0f)},
            {{DType::F32, x.shape()}}, Attrs().f("epsilon", 1e-3f));
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

TEST(CudaConformance, Gather) {
  TSL_REQUIRE_CUDA();
  std::mt19937 rng(14);
  Tensor data = randomF32({6, 4, 3}, rng);
  Tensor idx64 = randomI64({2, 5}, rng, -6, 5);
  conformOp("gather", {data, idx64}, {{DType::F32, {2, 5, 4, 3}}},
            Attrs().i("axis", 0));
  Tensor idx32 = randomI32({7}, rng, -4, 3);
  conformOp("gather", {data, idx32}, {{DType::F32, {6, 7, 3}}},
            Attrs().i("axis", 1));
  conformOp("gather", {randomI64({5, 3}, rng, -9, 9), randomI32({7}, rng, -3, 2)},
            {{DType::I64, {5, 7}}}, Attrs().i("axis", -1));
  conformOp("gather", {randomBool({4, 2}, rng), randomI64({3}, rng, 0, 3)},
            {{DType::Bool, {3, 2}}}, Attrs().i("axis", 0));
}

TEST(CudaConformance, GatherElements) {
  TSL_REQUIRE_CUDA();
  std::mt19937 rng(16);
  Tensor data = randomF32({5, 4, 3}, rng);
  // Every index in [-dim, dim) (the bounds are inclusive).
  conformOp("gather_elements", {data, randomI64({5, 6, 3}, rng, -4, 3)},
            {{DType::F32, {5, 6, 3}}}, Attrs().i("axis", 1));
  // Indices shorter than data in the other dims; i32; a negative axis.
  conformOp("gather_elements", {data, randomI32({2, 3, 7}, rng, -3, 2)},
            {{DType::F32, {2, 3, 7}}}, Attrs().i("axis", -1));
  conformOp("gather_elements",
            {randomI64({4, 2}, rng, -9, 9), randomI64({6, 2}, rng, 0, 3)},
            {{DType::I64, {6, 2}}}, Attrs().i("axis", 0));
}

TEST(CudaConformance, CumSum) {
  TSL_REQUIRE_CUDA();
  std::mt19937 rng(17);
  // One scan order on both backends: floats agree bit for bit.
  Tensor x = randomF32({3, 50, 4}, rng);
  for (int64_t axis : {0, 1, 2})
    for (int64_t exclusive : {0, 1})
      for (int64_t reverse : {0, 1}) {
        Attrs a = Attrs().i("axis", axis).i("exclusive", exclusive).i("reverse", reverse);
        conformOp("cumsum", {x}, {{DType::F32, x.shape()}}, a, {0, 0});
        conformOp("cumsum", {randomI64({3, 5, 4}, rng, -9, 9)},
                  {{DType::I64, {3, 5, 4}}}, a);
        conformOp("cumsum", {randomI32({3, 5, 4}, rng, -9, 9)},
                  {{DType::I32, {3, 5, 4}}}, a);
      }
}

TEST(CudaConformance, GatherOutOfRangeFailsLikeCpu) {
  TSL_REQUIRE_CUDA();
  std::shared_ptr<const Program> prog;
  ASSERT_TRUE(buildEmbeddingGather(4, 3, prog).isOk());
  std::mt19937 rng(15);
  Tensor data = randomF32({4, 2}, rng);
  Tensor bad = Tensor::fromVector(DType::I64, {3}, std::vector<int64_t>{1, 7, -9});
  std::vector<Tensor> o1, o2;
  Status sc = runProgram("cpu", prog, {{"d", data}, {"i", bad}}, o1);
  Status sg = runProgram("cuda", prog, {{"d", data}, {"i", bad}}, o2);
  ASSERT_FALSE(sc.isOk());
  ASSERT_FALSE(sg.isOk());
  EXPECT_EQ(sc.message(), sg.message());
  // The executor recovers: a later run with good indices succeeds.
  Tensor good = Tensor::fromVector(DType::I64, {3}, std::vector<int64_t>{1, -1, 0});
  Status s1 = runProgram("cpu", prog, {{"d", data}, {"i", good}}, o1);
  Status s2 = runProgram("cuda", prog, {{"d", data}, {"i", good}}, o2);
  ASSERT_TRUE(s1.isOk() && s2.isOk()) << s1.message() << s2.message();
  expectSame(o1[0], o2[0], 0, 0, "gather");
}

TEST(CudaConformance, TransposeSliceExpand) {
  TSL_REQUIRE_CUDA();
  std::mt19937 rng(16);
  Tensor x = randomF32({2, 3, 4, 5}, rng);
  for (const std::vector<int64_t> &perm :
       std::vector<std::vector<int64_t>>{{0, 1, 2, 3}, {3, 2, 1, 0}, {0, 2, 1, 3},
                                         {1, 0, 3, 2}, {0, 1, 3, 2}}) {
    Shape rs;
    for (int64_t p : perm)
      rs.push_back(x.shape()[p]);
    conformOp("transpose", {x}, {{DType::F32, rs}}, Attrs().is("perm", perm));
  }
  conformOp("transpose", {randomI64({3, 7}, rng, 0, 9)}, {{DType::I64, {7, 3}}},
            Attrs().is("perm", {1, 0}));
  // Tiled transposes (both swapped dims >= 8): partial tiles, batch dims,
  // element sizes 1, 4 and 8, a batch dim between.
  conformOp("transpose", {randomF32({3, 2, 45, 70}, rng)},
            {{DType::F32, {3, 2, 70, 45}}}, Attrs().is("perm", {0, 1, 3, 2}));
  conformOp("transpose", {randomF32({33, 64}, rng)}, {{DType::F32, {64, 33}}},
            Attrs().is("perm", {1, 0}));
  conformOp("transpose", {randomI64({40, 3, 9}, rng, -99, 99)},
            {{DType::I64, {9, 3, 40}}}, Attrs().is("perm", {2, 1, 0}));
  conformOp("transpose", {randomBool({2, 17, 40}, rng)},
            {{DType::Bool, {2, 40, 17}}}, Attrs().is("perm", {0, 2, 1}));
  conformOp("transpose", {randomBool({3, 7}, rng)}, {{DType::Bool, {7, 3}}},
            Attrs().is("perm", {1, 0}));

  Shape shape = {6, 7, 5};
  Tensor s = randomF32(shape, rng);
  for (const SliceCase &c : sliceCases())
    conformOp("slice", {s}, {{DType::F32, c.resultShape(3)}}, c.attrs());

  conformOp("expand", {randomF32({3, 1}, rng)}, {{DType::F32, {2, 3, 4}}});
  conformOp("expand", {randomI64({1, 4}, rng, 0, 9)}, {{DType::I64, {3, 4}}});
  conformOp("expand", {randomF32({}, rng)}, {{DType::F32, {5, 2}}});
}

TEST(CudaConformance, ConcatSplitReshapeCopy) {
  TSL_REQUIRE_CUDA();
  std::mt19937 rng(17);
  Tensor a = randomF32({2, 3, 4}, rng), b = randomF32({2, 1, 4}, rng),
         c = randomF32({2, 5, 4}, rng);
  conformOp("concat", {a, b, c}, {{DType::F32, {2, 9, 4}}}, Attrs().i("axis", 1));
  conformOp("concat", {a, a}, {{DType::F32, {4, 3, 4}}}, Attrs().i("axis", 0));
  conformOp("concat", {a, randomF32({2, 3, 2}, rng)}, {{DType::F32, {2, 3, 6}}},
            Attrs().i("axis", -1));
  conformOp("concat", {randomI64({2, 2}, rng, 0, 9), randomI64({2, 3}, rng, 0, 9)},
            {{DType::I64, {2, 5}}}, Attrs().i("axis", 1));

  Tensor x = randomF32({2, 6, 3}, rng);
  conformOp("split", {x},
            {{DType::F32, {2, 1, 3}}, {DType::F32, {2, 2, 3}}, {DType::F32, {2, 3, 3}}},
            Attrs().i("axis", 1).is("sizes", {1, 2, 3}));
  conformOp("split", {x}, {{DType::F32, {1, 6, 3}}, {DType::F32, {1, 6, 3}}},
            Attrs().i("axis", 0));
  conformOp("split", {randomBool({4, 6}, rng)},
            {{DType::Bool, {4, 3}}, {DType::Bool, {4, 3}}}, Attrs().i("axis", 1));

  conformOp("reshape", {x}, {{DType::F32, {6, 6}}});
  conformOp("copy", {x}, {{DType::F32, {2, 6, 3}}});
  conformOp("copy", {randomI64({5}, rng, 0, 9)}, {{DType::I64, {5}}});
}

// Gemini's chunk_fetch: a copy of each parameter (device to device on CUDA).
TEST(CudaConformance, ChunkFetch) {
  TSL_REQUIRE_CUDA();
  std::mt19937 rng(18);
  conformOp("chunk_fetch", {randomF32({3, 4}, rng), randomF32({5}, rng)},
            {{DType::F32, {3, 4}}, {DType::F32, {5}}}, Attrs().i("chunk", 1));
}

// The optimizer's fused updates: the CPU kernels' formulas, each operation
// rounded once, so within a few ulps of the CPU (in practice the same bits).
TEST(CudaConformance, AdamAndSgdUpdates) {
  TSL_REQUIRE_CUDA();
  std::mt19937 rng(19);
  const Shape s = {5, 7};
  Tensor p = randomF32(s, rng), g = randomF32(s, rng), m = randomF32(s, rng),
         v = randomF32(s, rng, 0.0f, 2.0f);
  auto scalar = [](float x) { return Tensor::fromVector(DType::F32, {}, std::vector<float>{x}); };
  const std::pair<DType, Shape> t = {DType::F32, s};
  const Tol tol{1e-6, 1e-6};
  conformOp("adam_update",
            {p, g, m, v, scalar(0.01f), scalar(0.7f), scalar(0.999f)},
            {t, t, t},
            Attrs().f("beta1", 0.9f).f("beta2", 0.99f).f("eps", 1e-6f)
                .f("weight_decay", 0.1f),
            tol);
  conformOp("adam_update",
            {p, g, m, v, scalar(0.05f), scalar(1.0f), scalar(1.0f)}, {t, t, t},
            Attrs(), tol);
  conformOp("sgd_update", {p, g, m, scalar(0.2f)}, {t, t},
            Attrs().f("momentum", 0.9f).f("weight_decay", 0.01f).i("nesterov", 1),
            tol);
  conformOp("sgd_update", {p, g, m, scalar(0.1f)}, {t, t}, Attrs(), tol);
}

//===----------------------------------------------------------------------===//
// Collectives of a single-rank run: what the local communicator does
//===----------------------------------------------------------------------===//

TEST(CudaConformance, SingleRankCollectives) {
  TSL_REQUIRE_CUDA();
  std::mt19937 rng(18);
  Tensor x = randomF32({4, 6}, rng);
  const Shape s = x.shape();
  conformOp("all_reduce", {x}, {{DType::F32, s}}, Attrs().s("kind", "sum"));
  conformOp("all_reduce", {randomI64({3}, rng, -9, 9)}, {{DType::I64, {3}}},
            Attrs().s("kind", "max").is("group", {0}));
  conformOp("all_gather", {x}, {{DType::F32, s}}, Attrs().i("dim", 1));
  conformOp("reduce_scatter", {x}, {{DType::F32, s}},
            Attrs().s("kind", "mean").i("dim", 0));
  conformOp("all_to_all", {x}, {{DType::F32, s}},
            Attrs().i("split_dim", 0).i("concat_dim", 1));
  conformOp("broadcast", {x}, {{DType::F32, s}}, Attrs().i("root", 0));
  conformOp("collective_permute", {x}, {{DType::F32, s}},
            Attrs().is("pairs", {0, 0}));
  // No pair sends to this rank: zeros.
  conformOp("collective_permute", {x}, {{DType::F32, s}},
            Attrs().is("pairs", {}));

  // An explicit single-rank world behaves as none.
  ProgramBuilder pb;
  int in = pb.addInput("x", DType::F32, s);
  int y = pb.addBuffer(DType::F32, s);
  pb.addOp("all_reduce", {in}, {y}, Attrs().s("kind", "sum"));
  pb.addOutput("y", y);
  std::shared_ptr<const Program> prog;
  ASSERT_TRUE(pb.build(prog).isOk());
  std::unique_ptr<Communicator> local = createLocalCommunicator();
  ExecutorOptions eo;
  eo.comm = local.get();
  std::unique_ptr<Executor> exec;
  Status st = createExecutor("cuda", prog, eo, exec);
  ASSERT_TRUE(st.isOk()) << st.message();
  ASSERT_TRUE(exec->setInput("x", x).isOk());
  ASSERT_TRUE(exec->run().isOk());
  Tensor got;
  ASSERT_TRUE(exec->getOutput("y", got).isOk());
  expectSame(x, got, 0, 0, "all_reduce over a local world");
}

//===----------------------------------------------------------------------===//
// Whole programs
//===----------------------------------------------------------------------===//

TEST(CudaConformance, MlpMatchesReferenceAndCpu) {
  TSL_REQUIRE_CUDA();
  Mlp mlp(21);
  ProgramBuilder pb;
  mlp.build(pb);
  std::shared_ptr<const Program> prog;
  ASSERT_TRUE(pb.build(prog).isOk());
  std::mt19937 rng(22);
  for (int round = 0; round < 3; ++round) {
    Tensor x = randomF32({Mlp::kBatch, Mlp::kIn}, rng);
    std::vector<Tensor> want, got;
    ASSERT_TRUE(runProgram("cpu", prog, {{"x", x}}, want).isOk());
    Status s = runProgram("cuda", prog, {{"x", x}}, got, /*repeats=*/2);
    ASSERT_TRUE(s.isOk()) << s.message();
    expectNear(got[0], mlp.reference(x), 1e-5, 1e-4);
    for (size_t i = 0; i < want.size(); ++i)
      expectSame(want[i], got[i], 1e-5, 1e-4, "output " + std::to_string(i));
  }
}

TEST(CudaConformance, ChainWithPlannedArenaAndConstants) {
  TSL_REQUIRE_CUDA();
  // A chain whose buffers the planner overlaps, with a constant and a
  // single-rank collective: x -> matmul(w) -> add(c) -> relu -> transpose ->
  // all_reduce -> layer_norm -> reduce_mean.
  std::mt19937 rng(23);
  Tensor w = randomF32({16, 24}, rng), c = randomF32({24}, rng),
         g = randomF32({8}, rng);
  ProgramBuilder pb;
  int x = pb.addInput("x", DType::F32, {8, 16});
  int wb = pb.addWeight("w", DType::F32, {16, 24}, w.data());
  int cb = pb.addConstant(DType::F32, {24}, c.data(), "c");
  int gb = pb.addWeight("g", DType::F32, {8}, g.data());
  int h0 = pb.addBuffer(DType::F32, {8, 24});
  int h1 = pb.addBuffer(DType::F32, {8, 24});
  int h2 = pb.addBuffer(DType::F32, {8, 24});
  int h3 = pb.addBuffer(DType::F32, {24, 8});
  int h4 = pb.addBuffer(DType::F32, {24, 8});
  int h5 = pb.addBuffer(DType::F32, {24, 8});
  int y = pb.addBuffer(DType::F32, {24, 1});
  pb.addOp("matmul", {x, wb}, {h0});
  pb.addOp("add", {h0, cb}, {h1});
  pb.addOp("relu", {h1}, {h2});
  pb.addOp("transpose", {h2}, {h3}, Attrs().is("perm", {1, 0}));
  pb.addOp("all_reduce", {h3}, {h4}, Attrs().s("kind", "sum"));
  pb.addOp("layer_norm", {h4, gb}, {h5}, Attrs().i("axis", -1));
  pb.addOp("reduce_mean", {h5}, {y}, Attrs().is("dims", {1}));
  pb.addOutput("y", y);
  pb.addOutput("t", h3);
  std::shared_ptr<const Program> prog;
  Status s = pb.build(prog);
  ASSERT_TRUE(s.isOk()) << s.message();
  Tensor in = randomF32({8, 16}, rng);
  std::vector<Tensor> want, got;
  ASSERT_TRUE(runProgram("cpu", prog, {{"x", in}}, want).isOk());
  s = runProgram("cuda", prog, {{"x", in}}, got, /*repeats=*/3);
  ASSERT_TRUE(s.isOk()) << s.message();
  for (size_t i = 0; i < want.size(); ++i)
    expectSame(want[i], got[i], 1e-5, 1e-4, "output " + std::to_string(i));
}

//===----------------------------------------------------------------------===//
// Host-side plans, checked without a device
//===----------------------------------------------------------------------===//

/// The column-major GEMM that issueMatMul drives (cuBLAS's semantics with
/// op N, alpha 1, beta 0), in double.
Status referenceColumnMajorGemm(int m, int n, int k, const float *A, int lda,
                                long long sA, const float *B, int ldb,
                                long long sB, float *C, int ldc, long long sC,
                                int count) {
  if (lda < std::max(1, m) || ldb < std::max(1, k) || ldc < std::max(1, m))
    return Status::error("bad leading dimension");
  for (int b = 0; b < count; ++b)
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < m; ++i) {
        double acc = 0;
        for (int l = 0; l < k; ++l)
          acc += double(A[b * sA + i + int64_t(l) * lda]) *
                 B[b * sB + l + int64_t(j) * ldb];
        C[b * sC + i + int64_t(j) * ldc] = static_cast<float>(acc);
      }
  return Status::ok();
}

TEST(CudaConformance, StatesPersistAcrossRunsLikeCpu) {
  TSL_REQUIRE_CUDA();
  // w <- w - 0.1 * x^T (x w) written in place; a state of zeros counts the
  // runs; the matmul reads w as a changing weight.
  ProgramBuilder pb;
  std::mt19937 rng(5);
  Tensor w0 = randomF32({3, 2}, rng);
  int w = pb.addState("w", DType::F32, {3, 2}, w0.data());
  int n = pb.addState("n", DType::F32, {}, nullptr);
  int x = pb.addInput("x", DType::F32, {4, 3});
  int y = pb.addBuffer(DType::F32, {4, 2});
  int xt = pb.addBuffer(DType::F32, {3, 4});
  int g = pb.addBuffer(DType::F32, {3, 2});
  int gs = pb.addBuffer(DType::F32, {3, 2});
  const float lr = 0.1f, one = 1.0f;
  int clr = pb.addConstant(DType::F32, {}, &lr);
  int c1 = pb.addConstant(DType::F32, {}, &one);
  int n1 = pb.addBuffer(DType::F32, {});
  pb.addOp("matmul", {x, w}, {y});
  pb.addOp("transpose", {x}, {xt}, Attrs().is("perm", {1, 0}));
  pb.addOp("matmul", {xt, y}, {g});
  pb.addOp("mul", {g, clr}, {gs});
  pb.addOp("sub", {w, gs}, {w});
  pb.addOp("add", {n, c1}, {n1});
  pb.addOp("copy", {n1}, {n});
  pb.addOutput("y", y);
  pb.addOutput("w", w);
  pb.addOutput("n", n);
  std::shared_ptr<const Program> prog;
  ASSERT_TRUE(pb.build(prog).isOk());
  Tensor xv = randomF32({4, 3}, rng, -0.5f, 0.5f);
  std::vector<Tensor> cpu, gpu;
  ASSERT_TRUE(runProgram("cpu", prog, {{"x", xv}}, cpu, 3).isOk());
  Status s = runProgram("cuda", prog, {{"x", xv}}, gpu, 3);
  ASSERT_TRUE(s.isOk()) << s.message();
  ASSERT_EQ(gpu.size(), 3u);
  for (size_t i = 0; i < 3; ++i)
    expectSame(cpu[i], gpu[i], 1e-5, 1e-5, "output " + std::to_string(i));
  EXPECT_EQ(gpu[2].data<float>()[0], 3.0f);
}

TEST(CudaPlan, MatMulCallsReplayLikeTheCpu) {
  using cuda::issueMatMul;
  using cuda::MatMulPlan;
  using cuda::planMatMul;
  std::mt19937 rng(41);
  struct Case {
    Shape a, b, y;
    size_t calls; // cuBLAS calls the plan should make
  };
  const std::vector<Case> cases = {
      {{3, 4}, {4, 5}, {3, 5}, 1},
      {{2, 3, 4}, {4, 5}, {2, 3, 5}, 1},             // folded into one GEMM
      {{2, 3, 4}, {2, 4, 5}, {2, 3, 5}, 1},          // one strided batch
      {{4}, {2, 4, 5}, {2, 5}, 1},                   // a shared: stride 0
      {{2, 3, 4}, {4}, {2, 3}, 1},
      {{2, 1, 3, 4}, {1, 3, 4, 5}, {2, 3, 3, 5}, 2}, // one call per row
      {{3, 1, 2, 4}, {5, 4, 2}, {3, 5, 2, 2}, 3},
      {{4}, {4, 5}, {5}, 1},
      {{3, 4}, {4}, {3}, 1},
      {{4}, {4}, {}, 1},
      {{1, 2, 3}, {2, 3, 2}, {2, 2, 2}, 1},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(shapeToString(c.a) + " @ " + shapeToString(c.b));
    Tensor a = randomF32(c.a, rng), b = randomF32(c.b, rng);
    std::vector<Tensor> want =
        runOp("matmul", {a, b}, {{DType::F32, c.y}});
    MatMulPlan plan;
    ASSERT_TRUE(planMatMul(c.a, c.b, c.y, plan).isOk());
    EXPECT_FALSE(plan.nothing || plan.zeros);
    EXPECT_EQ(plan.calls.size(), c.calls);
    Tensor got(DType::F32, c.y);
    std::fill(got.data<float>(), got.data<float>() + got.numElements(), NAN);
    Status s = issueMatMul(plan, a.data<float>(), b.data<float>(),
                           got.data<float>(), referenceColumnMajorGemm);
    ASSERT_TRUE(s.isOk()) << s.message();
    expectSame(want[0], got, 1e-5, 1e-5, "replayed plan");
  }
  MatMulPlan plan;
  ASSERT_TRUE(planMatMul({3, 0}, {0, 4}, {3, 4}, plan).isOk());
  EXPECT_TRUE(plan.zeros);
  ASSERT_TRUE(planMatMul({0, 3}, {3, 4}, {0, 4}, plan).isOk());
  EXPECT_TRUE(plan.nothing);
}

/// cublasSgemm's semantics, column-major with transposes, in double.
Status referenceColumnMajorGemmT(bool tA, bool tB, int m, int n, int k,
                                 float alpha, const float *A, int lda,
                                 const float *B, int ldb, float beta, float *C,
                                 int ldc) {
  if (lda < std::max(1, tA ? k : m) || ldb < std::max(1, tB ? n : k) ||
      ldc < std::max(1, m))
    return Status::error("bad leading dimension");
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < m; ++i) {
      double acc = 0;
      for (int l = 0; l < k; ++l) {
        double av = tA ? A[l + int64_t(i) * lda] : A[i + int64_t(l) * lda];
        double bv = tB ? B[j + int64_t(l) * ldb] : B[l + int64_t(j) * ldb];
        acc += av * bv;
      }
      float &c = C[i + int64_t(j) * ldc];
      c = static_cast<float>(alpha * acc + (beta == 0.0f ? 0.0 : beta * c));
    }
  return Status::ok();
}

TEST(CudaPlan, GemmMappingReplaysLikeTheCpu) {
  std::mt19937 rng(42);
  const int m = 5, n = 7, k = 3;
  for (int ta : {0, 1})
    for (int tb : {0, 1}) {
      SCOPED_TRACE("trans " + std::to_string(ta) + std::to_string(tb));
      Tensor a = randomF32(ta ? Shape{k, m} : Shape{m, k}, rng);
      Tensor b = randomF32(tb ? Shape{n, k} : Shape{k, n}, rng);
      Tensor c = randomF32({m, n}, rng);
      std::vector<Tensor> want = runOp(
          "gemm", {a, b, c}, {{DType::F32, {m, n}}},
          Attrs().i("trans_a", ta).i("trans_b", tb).f("alpha", 0.5f).f("beta",
                                                                      2.0f));
      Tensor got = Tensor::fromData(DType::F32, {m, n}, c.data());
      Status s = cuda::issueRowMajorGemm(
          ta, tb, m, n, k, 0.5f, a.data<float>(),
          static_cast<int>(a.shape()[1]), b.data<float>(),
          static_cast<int>(b.shape()[1]), 2.0f, got.data<float>(),
          referenceColumnMajorGemmT);
      ASSERT_TRUE(s.isOk()) << s.message();
      expectSame(want[0], got, 1e-5, 1e-5, "replayed gemm");
    }
}

//===----------------------------------------------------------------------===//
// tessel-run --device
//===----------------------------------------------------------------------===//

/// Runs shell command `cmd`; returns its exit code, output in `out`.
int runCommand(const std::string &cmd, std::string &out) {
  FILE *p = popen((cmd + " 2>&1").c_str(), "r");
  if (!p)
    return -1;
  char buf[4096];
  size_t n;
  out.clear();
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0)
    out.append(buf, n);
  int status = pclose(p);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/// Runs tessel-run with `args`; returns its exit code, output in `out`.
/// TESSEL_RUN, when set, names the tessel-run to use instead of the build
/// tree's (scripts/gpu-check runs this binary from a bundle, docs/gpu.md).
int runTool(const std::string &args, std::string &out) {
  const char *bin = std::getenv("TESSEL_RUN");
  return runCommand(std::string(bin && *bin ? bin : TESSEL_RUN_PATH) + " " +
                        args,
                    out);
}

TEST(CudaTesselRun, DeviceFlag) {
  tessel::test::ScratchDir scratch;
  const std::string base = scratch.path("run");
  const std::string art = base + ".tsl", xPath = base + ".x.npy",
                    yCpu = base + ".ycpu.npy", yGpu = base + ".ygpu.npy";
  Mlp mlp(31);
  ArtifactBuilder b("cuda-test");
  mlp.build(b.rank(0));
  ASSERT_TRUE(b.write(art).isOk());
  std::mt19937 rng(32);
  Tensor x = randomF32({Mlp::kBatch, Mlp::kIn}, rng);
  ASSERT_TRUE(writeNpy(xPath, x).isOk());

  std::string out;
  EXPECT_EQ(runTool(art + " --input x=" + xPath + " --device tpu", out), 2)
      << out;
  EXPECT_NE(out.find("--device needs cpu or cuda"), std::string::npos) << out;
  ASSERT_EQ(runTool(art + " --input x=" + xPath + " --output " + yCpu +
                        " --device=cpu",
                    out),
            0)
      << out;
  int rc = runTool(art + " --input x=" + xPath + " --output " + yGpu +
                       " --device cuda --repeat 3",
                   out);
  std::string why;
  if (!cudaAvailable(why)) {
    EXPECT_EQ(rc, 1) << out;
    EXPECT_NE(out.find("no CUDA device"), std::string::npos) << out;
    return;
  }
  ASSERT_EQ(rc, 0) << out;
  Tensor want, got;
  ASSERT_TRUE(readNpy(yCpu, want).isOk());
  ASSERT_TRUE(readNpy(yGpu, got).isOk());
  expectSame(want, got, 1e-5, 1e-4, "tessel-run --device cuda");
}

//===----------------------------------------------------------------------===//
// Gemini's host chunks: pinned host memory and the copy stream
//===----------------------------------------------------------------------===//

/// The kind of memory at `p` (cudaPointerGetAttributes).
cudaMemoryType memoryAt(const void *p) {
  cudaPointerAttributes a{};
  if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
    cudaGetLastError();
    return cudaMemoryTypeUnregistered;
  }
  return a.type;
}

// A step as -tessel-gemini-placement leaves it: chunk 0 in host memory (w
// and its Adam moments; u, fetched with it but not read in this stay) and
// b in device memory, all fetched by one chunk_fetch; work that does not
// read the copies between the fetch and their first reader; the update in
// place on the host states. Three runs on cuda against the cpu, and where
// each buffer lives.
TEST(CudaGemini, HostChunkFetchOnTheCopyStream) {
  TSL_REQUIRE_CUDA();
  std::mt19937 rng(41);
  Tensor w0 = randomF32({3, 2}, rng), u0 = randomF32({5}, rng),
         b0 = randomF32({2}, rng);
  ProgramBuilder pb;
  int x = pb.addInput("x", DType::F32, {4, 3});
  int w = pb.addState("w", DType::F32, {3, 2}, w0.data());
  int m = pb.addState("exp_avg.w", DType::F32, {3, 2}, nullptr);
  int v = pb.addState("exp_avg_sq.w", DType::F32, {3, 2}, nullptr);
  int u = pb.addState("u", DType::F32, {5}, u0.data());
  int b = pb.addState("b", DType::F32, {2}, b0.data());
  for (int h : {w, m, v, u})
    pb.setHostMemory(h);
  int wc = pb.addBuffer(DType::F32, {3, 2});
  int uc = pb.addBuffer(DType::F32, {5});
  int bc = pb.addBuffer(DType::F32, {2});
  int t = pb.addBuffer(DType::F32, {4, 3});
  int t2 = pb.addBuffer(DType::F32, {4, 3});
  int y = pb.addBuffer(DType::F32, {4, 2});
  int yb = pb.addBuffer(DType::F32, {4, 2});
  int tt = pb.addBuffer(DType::F32, {3, 4});
  int g = pb.addBuffer(DType::F32, {3, 2});
  const float stepSize = 0.01f, sqrtBc2 = 0.5f, decay = 0.999f;
  int c0 = pb.addConstant(DType::F32, {}, &stepSize);
  int c1 = pb.addConstant(DType::F32, {}, &sqrtBc2);
  int c2 = pb.addConstant(DType::F32, {}, &decay);
  pb.addOp("chunk_fetch", {w, u, b}, {wc, uc, bc}, Attrs().i("chunk", 0));
  pb.addOp("mul", {x, x}, {t});
  pb.addOp("tanh", {t}, {t2});
  pb.addOp("matmul", {t2, wc}, {y}); // the first reader of the host copy
  pb.addOp("add", {y, bc}, {yb});
  pb.addOp("transpose", {t2}, {tt}, Attrs().is("perm", {1, 0}));
  pb.addOp("matmul", {tt, yb}, {g});
  pb.addOp("adam_update", {w, g, m, v, c0, c1, c2}, {w, m, v},
           Attrs().f("weight_decay", 0.01f));
  pb.addOutput("y", yb);
  pb.addOutput("w", w);
  std::shared_ptr<const Program> prog;
  Status s = pb.build(prog);
  ASSERT_TRUE(s.isOk()) << s.message();
  ASSERT_TRUE(prog->buffers[w].host && !prog->buffers[b].host);

  Tensor in = randomF32({4, 3}, rng, -1.0f, 1.0f);
  std::vector<Tensor> want, got;
  ASSERT_TRUE(runProgram("cpu", prog, {{"x", in}}, want, 3).isOk());
  s = runProgram("cuda", prog, {{"x", in}}, got, 3);
  ASSERT_TRUE(s.isOk()) << s.message();
  ASSERT_EQ(got.size(), 2u);
  for (size_t i = 0; i < want.size(); ++i)
    expectSame(want[i], got[i], 1e-5, 1e-5, "output " + std::to_string(i));

  std::unique_ptr<Executor> exec;
  s = createExecutor("cuda", prog, {}, exec);
  ASSERT_TRUE(s.isOk()) << s.message();
  for (int h : {w, m, v, u})
    EXPECT_EQ(memoryAt(cuda::bufferAddress(*exec, h)), cudaMemoryTypeHost)
        << "state " << prog->buffers[h].name << " is not pinned host memory";
  for (int d : {b, wc, uc, bc, g})
    EXPECT_EQ(memoryAt(cuda::bufferAddress(*exec, d)), cudaMemoryTypeDevice)
        << "buffer " << d;
  // A host state reads back and loads like any state (checkpoints).
  Tensor moment;
  ASSERT_TRUE(exec->setInput("x", in).isOk());
  ASSERT_TRUE(exec->run().isOk());
  ASSERT_TRUE(exec->getState("exp_avg.w", moment).isOk());
  EXPECT_NE(moment.data<float>()[0], 0.0f);
  ASSERT_TRUE(exec->setState("w", w0).isOk());
  Tensor back;
  ASSERT_TRUE(exec->getState("w", back).isOk());
  expectSame(w0, back, 0, 0, "a host state written and read back");
}

// tesselc --plugin gemini end to end: a linear model (fc3 of test/models/mlp,
// mse, AdamW) on dp=1 with chunks small enough that the weight and the bias
// are chunks of their own and a limit that keeps the weight's chunk in host
// memory. The artifact marks that chunk's states (the weight and its Adam
// moments) as host memory; on a GPU they are pinned and the losses of 5
// steps are the CPU run's within 1e-5.
//
// TESSEL_CUDA_TEST_ARTIFACTS=DIR keeps the artifact, its report and data in
// DIR: compiled there when DIR holds none, reused when it does. A GPU
// machine without tesselc runs them from a bundle (scripts/gpu-bundle
// compiles them this way, docs/gpu.md).
class CudaGeminiTraining : public ::testing::Test {
protected:
  static void SetUpTestSuite() {
    const char *keep = std::getenv("TESSEL_CUDA_TEST_ARTIFACTS");
    if (keep && *keep) {
      dir = std::string(keep) + "/gemini";
      std::ifstream saved(dir + ".report");
      if (saved) {
        std::stringstream text;
        text << saved.rdbuf();
        report = text.str();
        return;
      }
    }
#if defined(TESSEL_C_PATH) && defined(TESSEL_SOURCE_DIR)
    if (!keep || !*keep) {
      scratch = new tessel::test::ScratchDir;
      dir = scratch->path("gemini");
    }
    const std::string src = TESSEL_SOURCE_DIR;
    std::string out;
    int rc = runCommand(std::string(TESSEL_C_PATH) + " " + src +
                            "/test/Training/Inputs/linear.mlir --weights " +
                            src +
                            "/test/models/mlp/model.onnx --train --loss mse "
                            "--optimizer adamw --lr 0.05 --weight-decay 0.1 "
                            "--plugin gemini --mesh dp=1 --chunk-mb 0.001 "
                            "--device-memory-limit 60000 --report -o " +
                            dir + ".tsl",
                        out);
    compileError = rc == 0 ? "" : "tesselc failed (" + std::to_string(rc) + "): " + out;
    report = out;
    std::mt19937 rng(43);
    Tensor x = randomF32({5, 8, 256}, rng, -1.0f, 1.0f),
           t = randomF32({5, 8, 10}, rng, -1.0f, 1.0f);
    if (!writeNpy(dir + ".x.npy", x).isOk() ||
        !writeNpy(dir + ".t.npy", t).isOk())
      compileError = "cannot write the data";
    if (compileError.empty() && keep && *keep) {
      std::ofstream saved(dir + ".report");
      saved << report;
      if (!saved.good())
        compileError = "cannot write " + dir + ".report";
    }
#else
    dir.clear(); // nothing compiled, nothing saved: the tests skip
#endif
  }
  static void TearDownTestSuite() {
    delete scratch;
    scratch = nullptr;
  }
  void SetUp() override {
    if (dir.empty())
      GTEST_SKIP() << "tesselc is not built here (a runtime-only build) and "
                      "TESSEL_CUDA_TEST_ARTIFACTS names no compiled artifact";
    ASSERT_TRUE(compileError.empty()) << compileError;
  }
  /// Trains 5 steps on `device`; the losses in `out`.
  static void train(const std::string &device, Tensor &out) {
    std::string log;
    const std::string losses = dir + "." + device + ".npy";
    ASSERT_EQ(runTool(dir + ".tsl --steps 5 --data x=" + dir +
                          ".x.npy --data targets=" + dir +
                          ".t.npy --losses " + losses + " --device " + device,
                      log),
              0)
        << log;
    ASSERT_TRUE(readNpy(losses, out).isOk());
  }

  static tessel::test::ScratchDir *scratch;
  static std::string dir, compileError, report;
};
tessel::test::ScratchDir *CudaGeminiTraining::scratch = nullptr;
std::string CudaGeminiTraining::dir, CudaGeminiTraining::compileError,
    CudaGeminiTraining::report;

TEST_F(CudaGeminiTraining, ArtifactKeepsTheHostChunkInHostMemory) {
  EXPECT_NE(report.find("0      host    "), std::string::npos) << report;
  EXPECT_NE(report.find("1      device  none"), std::string::npos) << report;
  std::unique_ptr<Artifact> art;
  Status s = Artifact::open(dir + ".tsl", art);
  ASSERT_TRUE(s.isOk()) << s.message();
  std::shared_ptr<const Program> prog;
  s = art->loadProgram(0, prog);
  ASSERT_TRUE(s.isOk()) << s.message();
  std::vector<std::string> host;
  for (const BufferInfo &b : prog->buffers)
    if (b.host)
      host.push_back(b.name);
  std::sort(host.begin(), host.end());
  EXPECT_EQ(host, (std::vector<std::string>{"exp_avg.fc3.weight",
                                            "exp_avg_sq.fc3.weight",
                                            "fc3.weight"}));
}

TEST_F(CudaGeminiTraining, LossesMatchCpuWithPinnedHostChunks) {
  TSL_REQUIRE_CUDA();
  Tensor cpu, gpu;
  train("cpu", cpu);
  train("cuda", gpu);
  ASSERT_EQ(cpu.shape(), (Shape{5}));
  expectSame(cpu, gpu, 0, 1e-5, "losses, cuda against cpu");

  std::unique_ptr<Artifact> art;
  ASSERT_TRUE(Artifact::open(dir + ".tsl", art).isOk());
  std::shared_ptr<const Program> prog;
  ASSERT_TRUE(art->loadProgram(0, prog).isOk());
  std::unique_ptr<Executor> exec;
  Status s = createExecutor("cuda", prog, {}, exec);
  ASSERT_TRUE(s.isOk()) << s.message();
  int hostStates = 0;
  for (const BufferInfo &b : prog->buffers) {
    const cudaMemoryType where = memoryAt(cuda::bufferAddress(*exec, b.id));
    if (b.host) {
      ++hostStates;
      EXPECT_EQ(where, cudaMemoryTypeHost) << b.name << " is not pinned";
    } else if (b.kind == BufferInfo::Kind::State ||
               b.kind == BufferInfo::Kind::Arena) {
      EXPECT_EQ(where, cudaMemoryTypeDevice) << "buffer " << b.id;
    }
  }
  EXPECT_EQ(hostStates, 3);
}

TEST(CudaFused, EveryOpAndInputKind) {
  TSL_REQUIRE_CUDA();
  std::mt19937 rng(48);
  // Every unary and binary kind a program may apply, on inputs whole, of
  // one element and of the trailing dims (tessel/runtime/FusedProgram.h),
  // over several grid-stride rounds.
  Tensor x = randomF32({300, 129}, rng, 0.1f, 2.0f),
         b = randomF32({129}, rng, 0.1f, 2.0f),
         s = randomF32({}, rng, 0.5f, 1.5f);
  std::vector<int64_t> program;
  int64_t last = 0; // value 0 is x
  auto push = [&](OpKind k, int64_t a, int64_t bb, int64_t flag) {
    program.insert(program.end(), {static_cast<int64_t>(k), a, bb, flag});
    return 3 + static_cast<int64_t>(program.size() / 4) - 1;
  };
  for (OpKind k : {OpKind::Neg, OpKind::Abs, OpKind::Sqrt, OpKind::Rsqrt,
                   OpKind::Tanh, OpKind::Erf, OpKind::Sigmoid, OpKind::Relu,
                   OpKind::Gelu, OpKind::Softplus, OpKind::HardSwish,
                   OpKind::Sin, OpKind::Cos, OpKind::Softsign, OpKind::Round,
                   OpKind::Floor, OpKind::Ceil, OpKind::Sign})
    last = push(k, last, -1, 0);
  last = push(OpKind::Gelu, last, -1, 1);
  for (OpKind k : {OpKind::Add, OpKind::Sub, OpKind::Mul, OpKind::Div,
                   OpKind::Max, OpKind::Min, OpKind::FMod})
    last = push(k, last, k == OpKind::Sub ? 2 : 1, 0);
  last = push(OpKind::Abs, last, -1, 0);
  last = push(OpKind::Add, last, 2, 0);
  last = push(OpKind::Log, last, -1, 0);
  last = push(OpKind::Exp, last, -1, 0);
  last = push(OpKind::Pow, last, 2, 0);
  push(OpKind::Reciprocal, last, -1, 0);
  conformOp("fused_elementwise", {x, b, s}, {{DType::F32, x.shape()}},
            Attrs().is("program", program), {1e-5, 1e-5});
}

TEST(CudaFused, HalfInputsCastsAndResult) {
  TSL_REQUIRE_CUDA();
  std::mt19937 rng(49);
  // A bf16 model's chain: bf16 (whole) and f16 (trailing dims) inputs
  // widened, an inner cast to bf16 rounding, a bf16 result; add and mul
  // only, so that the CPU and the GPU give the same bits.
  auto half = [&](DType t, const Shape &shape) {
    Tensor f = randomF32(shape, rng, -2.0f, 2.0f), h(t, shape);
    for (int64_t i = 0; i < f.numElements(); ++i)
      h.data<uint16_t>()[i] = f32ToHalf(t, f.data<float>()[i]);
    return h;
  };
  Tensor x = half(DType::BF16, {300, 129}), b = half(DType::F16, {129});
  const int64_t cast = static_cast<int64_t>(OpKind::Cast),
                add = static_cast<int64_t>(OpKind::Add),
                mul = static_cast<int64_t>(OpKind::Mul);
  // v2 = x, v3 = b as f32; v4 = v2 + v3; v5 = v4 to bf16; v6 = widened;
  // v7 = v6 * v3; v8 = v7 to bf16 (the result).
  const std::vector<int64_t> program = {cast, 0, -1, 0, cast, 1, -1, 0,
                                        add,  2, 3,  0, cast, 4, -1, 1,
                                        cast, 5, -1, 0, mul,  6, 3,  0,
                                        cast, 7, -1, 1};
  conformOp("fused_elementwise", {x, b}, {{DType::BF16, x.shape()}},
            Attrs().is("program", program));
}

} // namespace
} // namespace tessel::runtime::test
