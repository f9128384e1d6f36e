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
  }];
  let methods = [
    InterfaceMethod<
      "Returns the op's sharding rule for its current operand and result types.",
      "::mlir::tessel::OpShardingRuleAttr", "getShardingRule", (ins)>,
  ];
}

#endif // TESSEL_INTERFACES_TD
