//===- PrintShardingRules.cpp - attach each op's rule as an attribute -----===//

#include "tessel/Transforms/Passes.h"

#include "mlir/IR/BuiltinTypes.h"

namespace mlir::tessel {
#define GEN_PASS_DEF_PRINTSHARDINGRULESPASS
#include "tessel/Transforms/Passes.h.inc"

namespace {

bool touchesTensors(Operation *op) {
  auto isTensor = [](Type t) { return isa<RankedTensorType>(t); };
  return llvm::any_of(op->getOperandTypes(), isTensor) ||
         llvm::any_of(op->getResultTypes(), isTensor);
}

struct PrintShardingRulesPass
    : public impl::PrintShardingRulesPassBase<PrintShardingRulesPass> {
  using Base::Base;

  void runOnOperation() final {
    getOperation()->walk([&](Operation *op) {
      if (auto rule = dyn_cast<ShardingRuleOpInterface>(op)) {
        op->setAttr(TesselDialect::kRuleAttrName, rule.getShardingRule());
        return;
      }
      if (warnMissing && touchesTensors(op) && !op->hasTrait<OpTrait::IsTerminator>())
        op->emitWarning() << "'" << op->getName()
                          << "' declares no sharding rule; it is a "
                             "propagation barrier";
    });
  }
};

} // namespace
} // namespace mlir::tessel
