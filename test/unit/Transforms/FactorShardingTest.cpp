//===- FactorShardingTest.cpp - dim <-> factor projections ----------------===//

#include "tessel/Transforms/FactorSharding.h"

#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/StringMap.h"

#include <functional>
#include <gtest/gtest.h>

using namespace mlir;
using namespace mlir::tessel;

namespace {

class FactorShardingTest : public ::testing::Test {
protected:
  FactorShardingTest() {
    ctx.loadDialect<TesselDialect>();
    sizes["dp"] = 2;
    sizes["tp"] = 4;
    sizes["ep"] = 3;
  }
  StringAttr axis(StringRef name) { return StringAttr::get(&ctx, name); }
  AxisList axes(std::initializer_list<StringRef> names) {
    AxisList out;
    for (StringRef n : names)
      out.push_back(axis(n));
    return out;
  }
  int64_t size(StringAttr a) { return sizes.lookup(a.getValue()); }
  /// A function_ref must not outlive its callable: keep one here.
  AxisSizeFn sizeFn() { return sizeOf; }

  MLIRContext ctx;
  llvm::StringMap<int64_t> sizes;
  std::function<int64_t(StringAttr)> sizeOf = [this](StringAttr a) {
    return size(a);
  };
};

TEST_F(FactorShardingTest, SingleFactorTakesAllAxes) {
  bool complete = false;
  auto proj = projectDimToFactors({64}, axes({"dp", "tp"}), sizeFn(), &complete);
  ASSERT_EQ(proj.size(), 1u);
  EXPECT_EQ(proj[0], axes({"dp", "tp"}));
  EXPECT_TRUE(complete);
}

// [b, t, 768] -> [b, t, 12, 64]: tp=4 on d goes to the head factor.
TEST_F(FactorShardingTest, CompoundDimShardsTheMajorFactor) {
  bool complete = false;
  auto proj = projectDimToFactors({12, 64}, axes({"tp"}), sizeFn(), &complete);
  EXPECT_EQ(proj[0], axes({"tp"}));
  EXPECT_TRUE(proj[1].empty());
  EXPECT_TRUE(complete);
}

// The minor factor takes axes only once the major one is split whole.
TEST_F(FactorShardingTest, MinorFactorAfterMajorIsUsedUp) {
  auto proj = projectDimToFactors({2, 64}, axes({"dp", "tp"}), sizeFn());
  EXPECT_EQ(proj[0], axes({"dp"}));
  EXPECT_EQ(proj[1], axes({"tp"}));
}

// dp=2 divides 6 but tp=4 does not divide the 3 left: tp stays unprojected
// rather than making a non-contiguous shard.
TEST_F(FactorShardingTest, AxisThatDoesNotDivideStops) {
  bool complete = true;
  auto proj = projectDimToFactors({6, 8}, axes({"dp", "tp"}), sizeFn(), &complete);
  EXPECT_EQ(proj[0], axes({"dp"}));
  EXPECT_TRUE(proj[1].empty());
  EXPECT_FALSE(complete);
}

TEST_F(FactorShardingTest, FactorsToDimConcatenatesWhileWhole) {
  EXPECT_EQ(projectFactorsToDim({2, 64}, {axes({"dp"}), axes({"tp"})}, sizeFn()),
            axes({"dp", "tp"}));
  // The head factor of 12 over tp=4 is not whole: head_dim's axes drop.
  EXPECT_EQ(projectFactorsToDim({12, 64}, {axes({"tp"}), axes({"dp"})}, sizeFn()),
            axes({"tp"}));
  // An unsplit major factor hides any minor split.
  EXPECT_TRUE(
      projectFactorsToDim({12, 64}, {AxisList(), axes({"tp"})}, sizeFn()).empty());
}

TEST_F(FactorShardingTest, RoundTrip) {
  SmallVector<int64_t> factors = {4, 3, 16};
  AxisList dim = axes({"tp", "ep", "dp"});
  bool complete = false;
  auto proj = projectDimToFactors(factors, dim, sizeFn(), &complete);
  EXPECT_TRUE(complete);
  EXPECT_EQ(proj[0], axes({"tp"}));
  EXPECT_EQ(proj[1], axes({"ep"}));
  EXPECT_EQ(proj[2], axes({"dp"}));
  EXPECT_EQ(projectFactorsToDim(factors, proj, sizeFn()), dim);
}

// A padded batch merged with the sequence ([3 (pad 1), 8] -> [24]): the
// merged dim's pad is whole rows of the minor factors, and back.
TEST_F(FactorShardingTest, PadsOfMergedDims) {
  EXPECT_EQ(factorPadOfDim({3, 8}, 8), std::optional<int64_t>(1));
  EXPECT_EQ(factorPadOfDim({5}, 1), std::optional<int64_t>(1));
  EXPECT_EQ(factorPadOfDim({3, 8}, 4), std::nullopt); // not whole rows
  EXPECT_EQ(dimPadOfFactor({3, 8}, {axes({"dp"}), AxisList()}, 1), 8);
  EXPECT_EQ(dimPadOfFactor({5}, {axes({"dp"})}, 1), 1);
  // A split minor factor, or an unsplit major one: no pad on the dim.
  EXPECT_EQ(dimPadOfFactor({3, 8}, {axes({"dp"}), axes({"tp"})}, 1), 0);
  EXPECT_EQ(dimPadOfFactor({3, 8}, {AxisList(), AxisList()}, 1), 0);
}

TEST_F(FactorShardingTest, NumShardsAndFormat) {
  EXPECT_EQ(getNumShards(axes({"dp", "tp"}), sizeFn()), 8);
  EXPECT_EQ(getNumShards({}, sizeFn()), 1);
  EXPECT_EQ(formatAxes(axes({"dp", "tp"})), "{\"dp\", \"tp\"}");
}

} // namespace
