//===- TesselInterfaces.td - tessel op interfaces ----------*- tablegen -*-===//

#ifndef TESSEL_INTERFACES_TD
#define TESSEL_INTERFACES_TD

include "mlir/IR/OpBase.td"

def Tessel_ShardingRuleOpInterface : OpInterface<"ShardingRuleOpInterface"> {
  let cppNamespace = "::mlir::tessel";
  let description = [{
    An op that declares how its operand and result dimensions correspond, as
    a factor-based `#tessel.rule`. Propagation and partitioning read only this
    rule; an op without it is a propagation barrier. A user's custom op
    becomes shardable by implementing this interface.

    Sharding a reduction factor of the rule leaves each rank one part of the
    result, a `partial` value; `getReductionKind` says how the parts combine
    (the kind of the `partial` spec, and of the `all_reduce` or
    `reduce_scatter` that resolves it). It is `sum` unless the op overrides
    it: `max` for `reduce_max`, `mean` for `reduce_mean` and
    `global_avg_pool`.
  }];
  let methods = [
    InterfaceMethod<
      "Returns the op's sharding rule for its current operand and result types.",
      "::mlir::tessel::OpShardingRuleAttr", "getShardingRule", (ins)>,
    InterfaceMethod<
      "Returns how the partial results that sharding a reduction factor of "
      "the rule leaves combine: sum unless the op overrides it.",
      "::mlir::tessel::ReductionKind", "getReductionKind", (ins),
      /*methodBody=*/"",
      /*defaultImplementation=*/[{
        return ::mlir::tessel::ReductionKind::Sum;
      }]>,
  ];
}

def Tessel_GradientOpInterface : OpInterface<"GradientOpInterface"> {
  let cppNamespace = "::mlir::tessel";
  let description = [{
    An op that knows its gradient rule: given the gradients of its results
    with respect to a scalar loss, it builds, with ordinary tessel ops at the
    builder's insertion point, the gradient of each operand (reverse mode;
    the vector-Jacobian product). `-tessel-autodiff` reads only this rule; an
    op on a path to the loss without it is an error.

    A rule is declared in the op's ODS entry with the mixin
    `Tessel_GradientFrom<"buildXGradient">` and built by that one C++
    function in dialects/tessel/Gradients.cpp.
  }];
  let methods = [
    InterfaceMethod<[{
        Builds the gradients of the operands. `resultGrads[i]` is the
        gradient of result `i`, of the result's type, or null when that
        result does not reach the loss (at least one is non-null). Appends
        exactly one value per operand to `operandGrads`: the operand's
        gradient, of the operand's type, or null where it has none (integer
        or boolean operands, conditions, indices). Fails (after emitting an
        error) where the op's configuration has no rule.
      }],
      "::mlir::LogicalResult", "buildGradients",
      (ins "::mlir::OpBuilder &":$b,
           "::llvm::ArrayRef<::mlir::Value>":$resultGrads,
           "::llvm::SmallVectorImpl<::mlir::Value> &":$operandGrads)>,
  ];
}

#endif // TESSEL_INTERFACES_TD
