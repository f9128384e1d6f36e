//===- Passes.td - tessel transformation passes ------------*- tablegen -*-===//

#ifndef TESSEL_TRANSFORMS_PASSES_TD
#define TESSEL_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def PrintShardingRulesPass : Pass<"tessel-print-sharding-rules"> {
  let summary = "Attaches each op's sharding rule as a printable attribute";
  let description = [{
    For every op that implements `ShardingRuleOpInterface`, sets the
    discardable attribute `tessel.rule` to the op's `#tessel.rule`, so that
    tests and users can read the rules propagation and partitioning use.
    Ops without a rule are left alone; with `warn-missing`, each gets a
    warning that it is a propagation barrier.

    Before:

    ```mlir
    %2 = tessel.matmul %0, %1 : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
    ```

    After:

    ```mlir
    %2 = tessel.matmul %0, %1 {tessel.rule = #tessel.rule<([i, k], [k, j]) -> ([i, j]) {i=8, j=32, k=16} reduction={k}>} : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
    ```

    **Options**

    * `warn-missing`: warn on every op with tensor operands or results that
      declares no rule.
  }];
  let options = [
    Option<"warnMissing", "warn-missing", "bool", /*default=*/"false",
           "Warn on ops that declare no sharding rule">,
  ];
  let dependentDialects = ["::mlir::tessel::TesselDialect"];
}

#endif // TESSEL_TRANSFORMS_PASSES_TD
