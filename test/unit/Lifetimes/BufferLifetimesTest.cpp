//===- BufferLifetimesTest.cpp - when each buffer of a step lives ---------===//
//
// stepLifetimes on a small step worked out by hand (instruction i at time
// 2i + 1, the slot before it at 2i, the step's end at 2n + 2), and what a
// hook adds to it: buffers written before an instruction, and a weight read
// there instead of by its users (Gemini's fetches).
//
//===----------------------------------------------------------------------===//

#include "tessel/Lifetimes/BufferLifetimes.h"

#include "dialects/tessel/TesselOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

using namespace mlir;
using namespace mlir::tessel;

namespace {

// 9 instructions (end = 20), every tensor 16 bytes.
constexpr llvm::StringLiteral kStep = R"mlir(
tessel.mesh @mesh ["dp"=2]
func.func @step(%x: tensor<4xf32>) -> tensor<4xf32> {
  %w = tessel.weight "w" : tensor<4xf32>
  %a = tessel.add %x, %w : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %s = tessel.shard_constraint %a <@mesh, [{}]> : tensor<4xf32>
  %b = tessel.mul %s, %s : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %r = tessel.all_reduce sum %b on @mesh axes = ["dp"] {tessel.bucket = 0 : i64} : tensor<4xf32>
  %u = tessel.add %r, %r : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %n = tessel.assign %w, %u : tensor<4xf32>
  %z = tessel.mul %a, %w : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %z : tensor<4xf32>
}
)mlir";

using Range = std::pair<int64_t, int64_t>;

std::vector<Range> rangesOf(const StepLifetimes &l) {
  std::vector<Range> out;
  for (const auto &b : l.buffers)
    out.push_back({b.firstUse, b.lastUse});
  return out;
}

class BufferLifetimesTest : public ::testing::Test {
protected:
  BufferLifetimesTest() {
    ctx.loadDialect<TesselDialect, func::FuncDialect>();
    module = parseSourceString<ModuleOp>(kStep, &ctx);
  }
  Block &step() {
    return (*module.get().getOps<func::FuncOp>().begin()).getBody().front();
  }
  MLIRContext ctx;
  OwningOpRef<ModuleOp> module;
};

// x lives the whole step; %a until its last reader (through the
// shard_constraint's alias, and %z at 7); the bucket writes in place on %b,
// read until its wait right before %u (5); the assigned %u until the
// weight's last reader (%z at 7); the returned %z to the end. Weights have
// no buffer.
TEST_F(BufferLifetimesTest, EachValueFromItsWriterToItsLastReader) {
  ASSERT_TRUE(module);
  StepLifetimes l = stepLifetimes(step());
  EXPECT_EQ(l.instructions, 9);
  EXPECT_EQ(l.end(), 20);
  std::vector<Range> expected = {
      {-1, 20}, {3, 15}, {7, 11}, {11, 15}, {15, 20}};
  EXPECT_EQ(rangesOf(l), expected);
  for (const auto &b : l.buffers)
    EXPECT_EQ(b.size, 16u);
  // Four 64-byte-aligned buffers live at once (at 11: x, %a, %b, %u).
  EXPECT_EQ(planArena(l.buffers), 4 * 64);
}

// Two copies written before %z (7): one that %z reads, one that none
// does; the weight is read there and by its assign only, so the assigned
// value dies at the copy (14) instead of at %z.
struct FetchBeforeZ : LifetimeHook {
  void insertedBefore(int64_t at,
                      SmallVectorImpl<Inserted> &out) const override {
    if (at == 7) {
      out.push_back({8, 7});
      out.push_back({4, -1});
    }
  }
  bool readsWeight(Operation *, Operation *user) const override {
    return isa<AssignOp>(user);
  }
  void weightReadsBefore(Operation *,
                         SmallVectorImpl<int64_t> &at) const override {
    at.push_back(7);
  }
};

TEST_F(BufferLifetimesTest, HookAddsBuffersAndMovesWeightReads) {
  ASSERT_TRUE(module);
  FetchBeforeZ hook;
  StepLifetimes l = stepLifetimes(step(), &hook);
  std::vector<Range> expected = {{-1, 20}, {3, 15}, {7, 11}, {11, 14},
                                 {14, 15}, {14, 14}, {15, 20}};
  EXPECT_EQ(rangesOf(l), expected);
  EXPECT_EQ(l.buffers[4].size, 8u);
  EXPECT_EQ(l.buffers[5].size, 4u);
  EXPECT_EQ(StepLifetimes::instructionAt(14), 7);
  EXPECT_EQ(StepLifetimes::instructionAt(-1), -1);
}

} // namespace
