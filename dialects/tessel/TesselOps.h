//===- TesselOps.h - tessel ops ---------------------------------*- C++ -*-===//

#ifndef TESSEL_DIALECT_TESSELOPS_H
#define TESSEL_DIALECT_TESSELOPS_H

#include "dialects/tessel/TesselDialect.h"
#include "dialects/tessel/TesselTraits.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#define GET_OP_CLASSES
#include "dialects/tessel/TesselOps.h.inc"

#define GET_OP_CLASSES
#include "dialects/tessel/CollectiveOps.h.inc"

namespace mlir::tessel {
// Sharding rule builders (ShardingRules.cpp), one per op family; the ODS of
// each compute op names the one it uses.
OpShardingRuleAttr buildSourceRule(Operation *op);
OpShardingRuleAttr buildElementwiseRule(Operation *op);
OpShardingRuleAttr buildMatmulRule(MatmulOp op);
OpShardingRuleAttr buildGemmRule(GemmOp op);
OpShardingRuleAttr buildReduceRule(Operation *op);
OpShardingRuleAttr buildAxisReplicatedRule(Operation *op);
OpShardingRuleAttr buildNormRule(Operation *op);
OpShardingRuleAttr buildBatchNormRule(BatchNormOp op);
OpShardingRuleAttr buildBatchNormTrainRule(BatchNormTrainOp op);
OpShardingRuleAttr buildGatherRule(GatherOp op);
OpShardingRuleAttr buildGatherElementsRule(GatherElementsOp op);
OpShardingRuleAttr buildReshapeRule(ReshapeOp op);
OpShardingRuleAttr buildTransposeRule(TransposeOp op);
OpShardingRuleAttr buildSliceRule(SliceOp op);
OpShardingRuleAttr buildConcatRule(ConcatOp op);
OpShardingRuleAttr buildSplitRule(SplitOp op);
OpShardingRuleAttr buildConvRule(Conv2DOp op);
OpShardingRuleAttr buildPoolRule(Operation *op);
OpShardingRuleAttr buildGlobalPoolRule(GlobalAvgPoolOp op);
OpShardingRuleAttr buildConvBackwardDataRule(Conv2DBackwardDataOp op);
OpShardingRuleAttr buildConvBackwardWeightRule(Conv2DBackwardWeightOp op);
OpShardingRuleAttr buildPoolBackwardRule(Operation *op);
// Fused attention's (AttentionOps.cpp).
OpShardingRuleAttr buildAttentionRule(Operation *op);
OpShardingRuleAttr buildAttentionGradRule(Operation *op);
// The training ops' (TrainingOps.cpp).
OpShardingRuleAttr buildGatherGradRule(GatherGradOp op);
OpShardingRuleAttr buildSoftmaxGradRule(Operation *op);
OpShardingRuleAttr buildChannelReduceRule(Operation *op);
OpShardingRuleAttr buildChannelwiseRule(Operation *op);
// tessel.custom_call's: its target's (CustomCall.cpp).
OpShardingRuleAttr buildCustomCallRule(Operation *op);

/// The numpy broadcast of `shapes`, or failure when they do not broadcast.
FailureOr<SmallVector<int64_t>> broadcastShapes(ArrayRef<ArrayRef<int64_t>> shapes);

/// The value of a splat float `tessel.constant`, if `v` is one (what
/// gradient rules and pattern passes test, e.g. `pow(x, 2)`).
std::optional<double> splatFloatValue(Value v);
} // namespace mlir::tessel

#endif // TESSEL_DIALECT_TESSELOPS_H
