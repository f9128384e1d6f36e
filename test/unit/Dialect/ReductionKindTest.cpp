//===- ReductionKindTest.cpp - ShardingRuleOpInterface::getReductionKind --===//
//
// The kind of partial result each op declares for its reduction factors:
// every op kind whose rule has a reduction factor, and the interface's
// default (sum) for an op that has none.
//
//===----------------------------------------------------------------------===//

#include "dialects/tessel/TesselOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "llvm/ADT/StringMap.h"

#include <gtest/gtest.h>

using namespace mlir;
using namespace mlir::tessel;

namespace {

// One op of each kind that has a reduction factor, and an add (none).
constexpr llvm::StringLiteral kModule = R"mlir(
func.func @f(%x: tensor<8x64xf32>, %w: tensor<64x16xf32>,
             %img: tensor<4x16x8x8xf32>, %k: tensor<8x16x3x3xf32>) {
  %0 = tessel.matmul %x, %w : (tensor<8x64xf32>, tensor<64x16xf32>) -> tensor<8x16xf32>
  %1 = tessel.gemm %x, %w : (tensor<8x64xf32>, tensor<64x16xf32>) -> tensor<8x16xf32>
  %2 = tessel.reduce_sum %x dims = [1] : (tensor<8x64xf32>) -> tensor<8xf32>
  %3 = tessel.reduce_mean %x dims = [1] : (tensor<8x64xf32>) -> tensor<8xf32>
  %4 = tessel.reduce_max %x dims = [1] : (tensor<8x64xf32>) -> tensor<8xf32>
  %5 = tessel.conv2d %img, %k : (tensor<4x16x8x8xf32>, tensor<8x16x3x3xf32>) -> tensor<4x8x6x6xf32>
  %6 = tessel.global_avg_pool %img : (tensor<4x16x8x8xf32>) -> tensor<4x16x1x1xf32>
  %7 = tessel.add %x, %x : (tensor<8x64xf32>, tensor<8x64xf32>) -> tensor<8x64xf32>
  return
}
)mlir";

TEST(ReductionKind, EachOpWithAReductionFactor) {
  MLIRContext ctx;
  ctx.loadDialect<TesselDialect, func::FuncDialect>();
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(kModule, &ctx);
  ASSERT_TRUE(module);

  llvm::StringMap<ReductionKind> expected = {
      {"tessel.matmul", ReductionKind::Sum},
      {"tessel.gemm", ReductionKind::Sum},
      {"tessel.reduce_sum", ReductionKind::Sum},
      {"tessel.reduce_mean", ReductionKind::Mean},
      {"tessel.reduce_max", ReductionKind::Max},
      {"tessel.conv2d", ReductionKind::Sum},
      {"tessel.global_avg_pool", ReductionKind::Mean},
  };
  llvm::StringMap<bool> seen;
  module->walk([&](ShardingRuleOpInterface op) {
    StringRef name = op->getName().getStringRef();
    SCOPED_TRACE(name.str());
    ReductionKind kind = op.getReductionKind();
    if (op.getShardingRule().getReductionFactors().empty()) {
      // No reduction factor: the interface's default.
      EXPECT_EQ(name, "tessel.add");
      EXPECT_EQ(kind, ReductionKind::Sum);
      return;
    }
    auto it = expected.find(name);
    ASSERT_NE(it, expected.end()) << "no expected kind for " << name.str();
    EXPECT_EQ(stringifyReductionKind(kind),
              stringifyReductionKind(it->second));
    seen[name] = true;
  });
  EXPECT_EQ(seen.size(), expected.size());
}

} // namespace
