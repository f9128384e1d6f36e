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

//===----------------------------------------------------------------------===//
// Op properties
//===----------------------------------------------------------------------===//
//
// Facts about an op's math that analyses and plans ask with
// `op->hasTrait<OpTrait::tessel::X>()` (dialects/tessel/TesselTraits.h)
// instead of keeping lists of ops. An op states each that holds in its ODS
// entry; an op without one is treated conservatively (docs/adding-an-op.md).

// Each result entry is a function of the operand entries at the same
// position (after numpy broadcasting) and of the op's attributes alone.
def Tessel_Elementwise : NativeOpTrait<"Elementwise"> {
  let cppNamespace = "::mlir::OpTrait::tessel";
}

// f(0, ..., 0) = 0, and finite operands give a finite result (rounding
// overflow aside): where every operand entry an entry reads is zero the
// result is zero, so a zero-filled pad stays zero and a finite one finite.
def Tessel_ZeroPreserving : NativeOpTrait<"ZeroPreserving"> {
  let cppNamespace = "::mlir::OpTrait::tessel";
}

// Finite operands give a finite result, but f(0) may be non-zero (exp,
// sigmoid, softmax, norms, lookups): a padded region becomes finite, not
// zero. Implied by ZeroPreserving, so only ops without that state it.
def Tessel_FinitePreserving : NativeOpTrait<"FinitePreserving"> {
  let cppNamespace = "::mlir::OpTrait::tessel";
}

// Each result entry is an entry of an operand, at a position fixed by the
// op's attributes and the shapes (not by operand values): reshape,
// transpose, slice, concat, split, expand, and the collectives that only
// move shards. No arithmetic; a gather (positions from an operand) is not.
def Tessel_DataMovement : NativeOpTrait<"DataMovement"> {
  let cppNamespace = "::mlir::OpTrait::tessel";
}

// A resharding op of a partitioned program (CollectiveOps.td): its result
// holds data of other ranks, or this rank's part of a value, so what a
// value's type says about padding does not describe its operand's.
def Tessel_Collective : NativeOpTrait<"Collective"> {
  let cppNamespace = "::mlir::OpTrait::tessel";
}

def Tessel_CostOpInterface : OpInterface<"CostOpInterface"> {
  let cppNamespace = "::mlir::tessel";
  let description = [{
    An op whose FLOPs are not one per result element (the default of the
    cost model in dialects/tessel/OpCost.h, which --stages auto and
    the pipeline report use): it names its cost class, from which the model
    counts. Declared in the op's ODS entry with the mixin
    `Tessel_CostClassIs<"Contraction">`.
  }];
  let methods = [
    InterfaceMethod<"Returns how the op's FLOPs are counted.",
      "::mlir::tessel::CostClass", "getCostClass", (ins)>,
  ];
}

#endif // TESSEL_INTERFACES_TD
