//===- ShardingAttrTest.cpp - #tessel.sharding helpers --------------------===//

#include "dialects/tessel/TesselOps.h"

#include "mlir/AsmParser/AsmParser.h"
#include "mlir/IR/MLIRContext.h"

#include <gtest/gtest.h>

using namespace mlir;
using namespace mlir::tessel;

namespace {
class ShardingAttrTest : public ::testing::Test {
protected:
  ShardingAttrTest() { ctx.loadDialect<TesselDialect>(); }
  TensorShardingAttr parse(llvm::StringRef text) {
    return dyn_cast_or_null<TensorShardingAttr>(parseAttribute(text, &ctx));
  }
  MLIRContext ctx;
};
} // namespace

TEST_F(ShardingAttrTest, Replicated) {
  auto s = TensorShardingAttr::getReplicated(
      &ctx, FlatSymbolRefAttr::get(&ctx, "mesh"), 3);
  EXPECT_EQ(s.getRank(), 3);
  EXPECT_TRUE(s.isReplicated());
  EXPECT_FALSE(s.usesAxis("tp"));
}

TEST_F(ShardingAttrTest, AxesAndPartials) {
  auto s = parse("#tessel.sharding<@mesh, [{\"dp\"}, {}], partial = "
                 "[sum(\"tp\")]>");
  ASSERT_TRUE(s);
  EXPECT_FALSE(s.isReplicated());
  EXPECT_TRUE(s.usesAxis("dp"));
  EXPECT_TRUE(s.usesAxis("tp"));
  EXPECT_FALSE(s.usesAxis("pp"));
  ASSERT_EQ(s.getPartials().size(), 1u);
  EXPECT_EQ(s.getPartials()[0].getKind(), ReductionKind::Sum);
}

TEST_F(ShardingAttrTest, PadIsKept) {
  auto s = parse("#tessel.sharding<@mesh, [{\"tp\", pad = 2}, {}]>");
  ASSERT_TRUE(s);
  EXPECT_EQ(s.getDims()[0].getPad(), 2);
  EXPECT_EQ(s.getDims()[1].getPad(), 0);
}

TEST_F(ShardingAttrTest, AxisUsedTwiceIsRejected) {
  ctx.getDiagEngine().registerHandler([](Diagnostic &) { return success(); });
  EXPECT_FALSE(parse("#tessel.sharding<@mesh, [{\"tp\"}, {\"tp\"}]>"));
}
