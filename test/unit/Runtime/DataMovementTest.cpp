//===- DataMovementTest.cpp - gather, reshape, transpose, slice, ... ------===//
#include "TestUtil.h"

using namespace tessel::runtime;
using namespace tessel::runtime::test;

namespace {

TEST(Gather, AnyAxisNegativeIndices) {
  std::mt19937 rng(41);
  for (int64_t axis : {0, 1, 2, -1}) {
    Shape ds = {4, 5, 6};
    Tensor data = randomF32(ds, rng);
    int64_t ax = axis < 0 ? axis + 3 : axis;
    Tensor idx = randomI64({2, 3}, rng, -ds[ax], ds[ax] - 1);
    Shape rs(ds.begin(), ds.begin() + ax);
    rs.insert(rs.end(), {2, 3});
    rs.insert(rs.end(), ds.begin() + ax + 1, ds.end());
    auto out = runOp("gather", {data, idx}, {{DType::F32, rs}}, Attrs().i("axis", axis));
    std::vector<double> want;
    for (int64_t i = 0; i < numElements(rs); ++i) {
      auto o = unravel(i, rs);
      std::vector<int64_t> di(o.begin(), o.begin() + ax);
      int64_t j = idx.data<int64_t>()[o[ax] * 3 + o[ax + 1]];
      di.push_back(j < 0 ? j + ds[ax] : j);
      di.insert(di.end(), o.begin() + ax + 2, o.end());
      int64_t flat = 0;
      for (size_t d = 0; d < 3; ++d)
        flat = flat * ds[d] + di[d];
      want.push_back(data.data<float>()[flat]);
    }
    SCOPED_TRACE("axis " + std::to_string(axis));
    expectNear(out[0], want, 0, 0);
  }
}

TEST(Gather, OutOfRangeIndexIsAnError) {
  std::shared_ptr<const Program> prog;
  ASSERT_TRUE(buildEmbeddingGather(3, 1, prog).isOk());
  std::unique_ptr<Executor> exec;
  ASSERT_TRUE(createExecutor("cpu", prog, {}, exec).isOk());
  ASSERT_TRUE(exec->setInput("i", Tensor::fromVector<int64_t>(DType::I64, {1}, {3})).isOk());
  Status s = exec->run();
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("'emb'"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("index 3"), std::string::npos) << s.message();
}

TEST(Reshape, CopiesData) {
  std::mt19937 rng(42);
  Tensor x = randomI64({2, 3, 4}, rng, -100, 100);
  auto out = runOp("reshape", {x}, {{DType::I64, {6, 4}}});
  expectEqual<int64_t>(out[0], std::vector<int64_t>(x.data<int64_t>(), x.data<int64_t>() + 24));
}

TEST(Transpose, Permutations) {
  std::mt19937 rng(43);
  for (int threads : {1, 2})
    for (auto [shape, perm] : std::vector<std::pair<Shape, std::vector<int64_t>>>{
             {{3, 4}, {1, 0}},
             {{2, 3, 4}, {2, 0, 1}},
             {{2, 3, 4, 5}, {0, 2, 1, 3}}, // attention head split
             {{2, 3, 4, 5}, {0, 2, 3, 1}},
             {{1, 5, 1, 7}, {3, 2, 1, 0}},
             {{130, 70}, {1, 0}},
             {{64, 12, 64}, {1, 0, 2}},
             {{4, 64, 12, 16}, {0, 2, 3, 1}}}) {
      Tensor x = randomF32(shape, rng);
      Shape rs;
      for (int64_t p : perm)
        rs.push_back(shape[p]);
      auto out = runOp("transpose", {x}, {{DType::F32, rs}}, Attrs().is("perm", perm), threads);
      auto st = stridesOf(shape);
      std::vector<double> want;
      for (int64_t i = 0; i < numElements(rs); ++i) {
        auto o = unravel(i, rs);
        int64_t src = 0;
        for (size_t d = 0; d < perm.size(); ++d)
          src += o[d] * st[perm[d]];
        want.push_back(x.data<float>()[src]);
      }
      SCOPED_TRACE(shapeToString(shape));
      expectNear(out[0], want, 0, 0);
    }
  // 1-byte and 8-byte elements.
  Tensor b = Tensor::fromVector<uint8_t>(DType::Bool, {2, 3}, {1, 0, 0, 0, 1, 1});
  expectEqual<uint8_t>(runOp("transpose", {b}, {{DType::Bool, {3, 2}}}, Attrs().is("perm", {1, 0}))[0],
                       {1, 0, 0, 1, 0, 1});
  Tensor l = Tensor::fromVector<int64_t>(DType::I64, {2, 2}, {1, 2, 3, 4});
  expectEqual<int64_t>(runOp("transpose", {l}, {{DType::I64, {2, 2}}})[0], {1, 3, 2, 4});
}

TEST(Slice, StepsIncludingNegative) {
  std::mt19937 rng(44);
  Shape shape = {6, 7, 5};
  Tensor x = randomF32(shape, rng);
  for (const SliceCase &c : sliceCases()) {
    Shape rs = c.resultShape(3);
    auto out = runOp("slice", {x}, {{DType::F32, rs}}, c.attrs());
    std::vector<double> want;
    for (int64_t i = 0; i < numElements(rs); ++i) {
      auto o = unravel(i, rs);
      int64_t src = 0;
      for (size_t d = 0; d < 3; ++d)
        src = src * shape[d] + c.starts[d] + o[d] * c.steps[d];
      want.push_back(x.data<float>()[src]);
    }
    SCOPED_TRACE(shapeToString(rs));
    expectNear(out[0], want, 0, 0);
  }
}

TEST(Concat, AnyAxisVariadic) {
  std::mt19937 rng(45);
  for (int64_t axis : {0, 1, 2}) {
    std::vector<Tensor> ins;
    Shape rs = {2, 3, 4};
    rs[axis] = 0;
    for (int64_t n : {1, 3, 2}) {
      Shape s = {2, 3, 4};
      s[axis] = n;
      rs[axis] += n;
      ins.push_back(randomF32(s, rng));
    }
    auto out = runOp("concat", ins, {{DType::F32, rs}}, Attrs().i("axis", axis));
    std::vector<double> want;
    for (int64_t i = 0; i < numElements(rs); ++i) {
      auto o = unravel(i, rs);
      int64_t k = 0, pos = o[axis];
      while (pos >= ins[k].shape()[axis])
        pos -= ins[k++].shape()[axis];
      o[axis] = pos;
      int64_t src = 0;
      for (size_t d = 0; d < 3; ++d)
        src = src * ins[k].shape()[d] + o[d];
      want.push_back(ins[k].data<float>()[src]);
    }
    expectNear(out[0], want, 0, 0);
  }
}

TEST(Split, SizesAndEqual) {
  std::mt19937 rng(46);
  Tensor x = randomF32({4, 6}, rng);
  auto out = runOp("split", {x}, {{DType::F32, {4, 1}}, {DType::F32, {4, 2}}, {DType::F32, {4, 3}}},
                   Attrs().i("axis", 1).is("sizes", {1, 2, 3}));
  ASSERT_EQ(out.size(), 3u);
  int64_t off = 0;
  for (int k = 0; k < 3; ++k) {
    int64_t n = k + 1;
    std::vector<double> want;
    for (int64_t r = 0; r < 4; ++r)
      for (int64_t c = 0; c < n; ++c)
        want.push_back(x.data<float>()[r * 6 + off + c]);
    expectNear(out[k], want, 0, 0);
    off += n;
  }
  // Default: equal parts (GPT-2's qkv split).
  auto eq = runOp("split", {x}, {{DType::F32, {2, 6}}, {DType::F32, {2, 6}}});
  ASSERT_EQ(eq.size(), 2u);
  std::vector<double> all = toDouble(x);
  expectNear(eq[1], std::vector<double>(all.begin() + 12, all.end()), 0, 0);
}

TEST(Expand, BroadcastsToResult) {
  std::mt19937 rng(47);
  for (auto [in, outShape] : std::vector<std::pair<Shape, Shape>>{
           {{3, 1}, {3, 4}}, {{4}, {2, 3, 4}}, {{}, {5}}, {{1, 3, 1}, {2, 3, 4}}}) {
    Tensor x = randomF32(in, rng);
    auto out = runOp("expand", {x}, {{DType::F32, outShape}});
    std::vector<double> want;
    for (int64_t i = 0; i < numElements(outShape); ++i)
      want.push_back(x.data<float>()[broadcastIndex(unravel(i, outShape), in)]);
    expectNear(out[0], want, 0, 0);
  }
}

TEST(Copy, AndSingleDeviceCollectives) {
  std::mt19937 rng(48);
  Tensor x = randomF32({3, 4}, rng);
  expectNear(runOp("copy", {x}, {{DType::F32, {3, 4}}})[0], toDouble(x), 0, 0);
  expectNear(runOp("all_reduce", {x}, {{DType::F32, {3, 4}}}, Attrs().s("kind", "sum"))[0],
             toDouble(x), 0, 0);
}

TEST(Constant, MaterialisedFromProgram) {
  ProgramBuilder pb;
  float c[3] = {1.5f, -2.0f, 4.0f};
  int k = pb.addConstant(DType::F32, {3}, c);
  int x = pb.addInput("x", DType::F32, {2, 3});
  int y = pb.addBuffer(DType::F32, {2, 3});
  pb.addOp("mul", {x, k}, {y});
  pb.addOutput("y", y);
  std::shared_ptr<const Program> prog;
  ASSERT_TRUE(pb.build(prog).isOk());
  std::unique_ptr<Executor> exec;
  ASSERT_TRUE(createExecutor("cpu", prog, {}, exec).isOk());
  ASSERT_TRUE(exec->setInput("x", Tensor::fromVector<float>(DType::F32, {2, 3},
                                                            {1, 1, 1, 2, 2, 2}))
                  .isOk());
  ASSERT_TRUE(exec->run().isOk());
  Tensor out;
  ASSERT_TRUE(exec->getOutput("y", out).isOk());
  expectNear(out, {1.5, -2, 4, 3, -4, 8}, 0, 0);
}

} // namespace

namespace {

// chunk_fetch (Gemini): each parameter of a chunk copied into its own
// result buffer, unchanged.
TEST(ChunkFetch, CopiesEachParameter) {
  std::mt19937 rng(47);
  Tensor w = randomF32({3, 4}, rng), b = randomF32({5}, rng);
  auto out = runOp("chunk_fetch", {w, b}, {{DType::F32, {3, 4}}, {DType::F32, {5}}},
                   Attrs().i("chunk", 2));
  ASSERT_EQ(out.size(), 2u);
  expectNear(out[0], std::vector<double>(w.data<float>(), w.data<float>() + 12), 0, 0);
  expectNear(out[1], std::vector<double>(b.data<float>(), b.data<float>() + 5), 0, 0);
}

TEST(ChunkFetch, LoadChecksResultsAndChunk) {
  std::mt19937 rng(48);
  Tensor w = randomF32({3, 4}, rng), b = randomF32({5}, rng);
  auto fails = [&](std::vector<std::pair<DType, Shape>> results, Attrs attrs,
                   const std::string &needle) {
    std::shared_ptr<const Program> prog;
    Status s = buildOneOp("chunk_fetch", {w, b}, results, std::move(attrs), prog);
    ASSERT_FALSE(s.isOk()) << "expected an error mentioning " << needle;
    EXPECT_NE(s.message().find(needle), std::string::npos) << s.message();
  };
  fails({{DType::F32, {3, 4}}}, Attrs(),
        "expects as many results as operands (2), got 1");
  fails({{DType::F32, {3, 4}}, {DType::F32, {6}}}, Attrs(),
        "result has shape [6], expected [5]");
  fails({{DType::F32, {3, 4}}, {DType::F32, {5}}}, Attrs().i("chunk", -1),
        "attribute 'chunk' = -1 is negative");
}

// The axis checks of the load: a rank-0 operand has no axis, an axis
// beyond the rank is refused, and gather (or gather_grad, scattering back)
// needs a non-empty axis unless there are no indices.
TEST(Gather, LoadChecksTheAxis) {
  auto fails = [&](const std::string &op, std::vector<Tensor> operands,
                   std::pair<DType, Shape> result, Attrs attrs,
                   const std::string &needle) {
    std::shared_ptr<const Program> prog;
    Status s = buildOneOp(op, operands, {result}, std::move(attrs), prog);
    ASSERT_FALSE(s.isOk()) << op << ": expected an error mentioning " << needle;
    EXPECT_NE(s.message().find(needle), std::string::npos) << s.message();
  };
  const Tensor scalar(DType::F32, {}), empty(DType::F32, {0, 2}),
      idx(DType::I64, {3}), data(DType::F32, {4, 2});
  fails("gather", {scalar, idx}, {DType::F32, {3}}, Attrs().i("axis", 0),
        "data must have rank >= 1");
  fails("gather", {data, idx}, {DType::F32, {3, 2}}, Attrs().i("axis", 2),
        "attribute 'axis' = 2 is out of range for rank 2");
  fails("gather", {empty, idx}, {DType::F32, {3, 2}}, Attrs().i("axis", 0),
        "gather from an empty axis");
  fails("gather", {data, idx}, {DType::F32, {4, 2}}, Attrs().i("axis", 1),
        "result has shape [4, 2], expected [4, 3]");
  fails("gather_elements", {scalar, idx}, {DType::F32, {3}},
        Attrs().i("axis", 0), "data must have rank >= 1");
  fails("gather_grad", {Tensor(DType::F32, {3, 2}), idx},
        {DType::F32, {0, 2}}, Attrs().i("axis", 0),
        "scatter into an empty axis");
  fails("gather_grad", {Tensor(DType::F32, {3}), idx}, {DType::F32, {}},
        Attrs().i("axis", 0), "result must have rank >= 1");
  fails("gather_grad", {Tensor(DType::F32, {2, 2}), idx}, {DType::F32, {4, 2}},
        Attrs().i("axis", 0), "grad has shape [2, 2], expected [3, 2]");
  fails("softmax", {scalar}, {DType::F32, {}}, Attrs(),
        "operand must have rank >= 1");
  fails("cumsum", {data}, {DType::F32, {4, 2}}, Attrs().i("axis", -3),
        "attribute 'axis' = -3 is out of range for rank 2");
  fails("concat", {scalar}, {DType::F32, {}}, Attrs(),
        "operands must have rank >= 1");
  fails("split", {scalar}, {DType::F32, {}}, Attrs(),
        "operand must have rank >= 1");
}

} // namespace
