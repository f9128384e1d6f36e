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

#endif // TESSEL_INTERFACES_TD
