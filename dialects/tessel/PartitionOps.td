//===- PartitionOps.td - ops of partitioned programs -------*- tablegen -*-===//
//
// Ops that only per-rank (partitioned) programs contain besides the
// collectives: they depend on the rank's position in the mesh.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_PARTITION_OPS_TD
#define TESSEL_PARTITION_OPS_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "dialects/tessel/TesselDialect.td"

def Tessel_LocalSliceOp : Tessel_Op<"local_slice", [Pure,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "Keeps this rank's shard of a dim; no communication";
  let description = [{
    The inverse of `tessel.all_gather`: splits `dim` into group-size pieces
    and keeps the piece whose index is this rank's index in the group formed
    by `axes` (major to minor). Partitioning uses it where a replicated value
    is used split; it moves no data between ranks.

    ```mlir
    %1 = tessel.local_slice %0 on @mesh axes = ["tp"] dim = 2 : (tensor<2x128x768xf32>) -> tensor<2x128x192xf32>
    ```

    **Constraints**

    * (C1) `mesh` names a `tessel.mesh`.
    * (C2) `axes` is non-empty, each axis is in the mesh and appears once.
    * (C3) `dim` is in [0, rank); operand and result have the same rank and
      element type.
    * (C4) operand dim `dim` is divisible by the group size and the result's
      is the quotient; other dims are equal.
  }];
  let arguments = (ins AnyRankedTensor:$input, FlatSymbolRefAttr:$mesh,
                       StrArrayAttr:$axes, I64Attr:$dim);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `on` $mesh `axes` `=` $axes `dim` `=` $dim attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The number of devices in each group: the product of the axis sizes.
    int64_t getGroupSize();
  }];
}

#endif // TESSEL_PARTITION_OPS_TD
