//===- CollectiveOps.td - collectives, p2p and local_slice -*- tablegen -*-===//
//
// The resharding ops of partitioned (per-rank) programs: the collectives,
// point-to-point, and local_slice, the one that needs no communication
// because it depends only on the rank's position in the mesh. Operands and
// results are local tensors; `axes` name the mesh axes whose devices form
// each group (ranks that agree on every other axis).
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_COLLECTIVE_OPS_TD
#define TESSEL_COLLECTIVE_OPS_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "dialects/tessel/TesselDialect.td"
include "dialects/tessel/TesselEnums.td"
include "dialects/tessel/TesselInterfaces.td"
include "dialects/tessel/TesselRuntime.td"

class Tessel_CollectiveOp<string mnemonic, list<Trait> traits = []>
    : Tessel_Op<mnemonic, traits # [Tessel_Collective,
          DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  code commonConstraints = [{
    * (C1) `mesh` names a `tessel.mesh`.
    * (C2) `axes` is non-empty, each axis is in the mesh and appears once.
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The number of devices in each group: the product of the axis sizes.
    /// Valid after verification.
    int64_t getGroupSize();
  }];
}

def Tessel_AllReduceOp : Tessel_CollectiveOp<"all_reduce",
                                             [SameOperandsAndResultType, Tessel_ZeroPreserving]>,
    Tessel_Instruction<100, "collective", [Tessel_RtAttr<"group", "$_ctx.groupOf($_op.getAxes())", "ints">, Tessel_RtAttr<"kind">]> {
  let summary = "Reduces a value over the group; every rank gets the result";
  let description = [{
    Resolves a `partial` spec.

    ```mlir
    %1 = tessel.all_reduce sum %0 on @mesh axes = ["tp"] : tensor<8x768xf32>
    ```

    **Constraints**
  }] # commonConstraints # [{
    * (C3) operand and result have the same type.
  }];
  let arguments = (ins Tessel_ReductionKind:$kind, AnyRankedTensor:$input,
                       FlatSymbolRefAttr:$mesh, StrArrayAttr:$axes);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $kind $input `on` $mesh `axes` `=` $axes attr-dict `:` type($result)
  }];
}

def Tessel_AllGatherOp : Tessel_CollectiveOp<"all_gather", [Tessel_DataMovement]>,
    Tessel_Instruction<101, "collective", [Tessel_RtAttr<"group", "$_ctx.groupOf($_op.getAxes())", "ints">, Tessel_RtAttr<"dim">]> {
  let summary = "Concatenates the group's shards along one dim";
  let description = [{
    ```mlir
    %1 = tessel.all_gather %0 on @mesh axes = ["tp"] dim = 1 : (tensor<8x192xf32>) -> tensor<8x768xf32>
    ```

    **Constraints**
  }] # commonConstraints # [{
    * (C3) `dim` is in [0, rank); operand and result have the same rank and
      element type.
    * (C4) result dim `dim` is the operand's times the group size; other
      dims are equal.
  }];
  let arguments = (ins AnyRankedTensor:$input, FlatSymbolRefAttr:$mesh,
                       StrArrayAttr:$axes, I64Attr:$dim);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `on` $mesh `axes` `=` $axes `dim` `=` $dim attr-dict `:` functional-type(operands, results)
  }];
}

// Not a Tessel_CollectiveOp: it moves no data, so it is Pure, and its
// verifier is its own.
def Tessel_LocalSliceOp : Tessel_Op<"local_slice", [Pure, Tessel_Collective,
    Tessel_DataMovement,
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

def Tessel_ReduceScatterOp : Tessel_CollectiveOp<"reduce_scatter", [Tessel_ZeroPreserving]>,
    Tessel_Instruction<102, "collective", [Tessel_RtAttr<"group", "$_ctx.groupOf($_op.getAxes())", "ints">, Tessel_RtAttr<"kind">, Tessel_RtAttr<"dim">]> {
  let summary = "Reduces over the group and leaves each rank one shard";
  let description = [{
    A partial value whose consumer wants `dim` sharded: cheaper than
    all_reduce followed by a local slice.

    ```mlir
    %1 = tessel.reduce_scatter sum %0 on @mesh axes = ["tp"] dim = 0 : (tensor<8x768xf32>) -> tensor<2x768xf32>
    ```

    **Constraints**
  }] # commonConstraints # [{
    * (C3) `dim` is in [0, rank); operand and result have the same rank and
      element type.
    * (C4) operand dim `dim` is divisible by the group size and the result's
      is the quotient; other dims are equal.
  }];
  let arguments = (ins Tessel_ReductionKind:$kind, AnyRankedTensor:$input,
                       FlatSymbolRefAttr:$mesh, StrArrayAttr:$axes, I64Attr:$dim);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $kind $input `on` $mesh `axes` `=` $axes `dim` `=` $dim attr-dict `:` functional-type(operands, results)
  }];
}

def Tessel_AllToAllOp : Tessel_CollectiveOp<"all_to_all", [Tessel_DataMovement]>,
    Tessel_Instruction<103, "collective", [Tessel_RtAttr<"group", "$_ctx.groupOf($_op.getAxes())", "ints">, Tessel_RtAttr<"split_dim">, Tessel_RtAttr<"concat_dim">]> {
  let summary = "Reshards from one dim to another within the group";
  let description = [{
    Splits `split_dim` into group-size pieces, sends piece i to rank i, and
    concatenates what it receives along `concat_dim`.

    ```mlir
    %1 = tessel.all_to_all %0 on @mesh axes = ["tp"] split_dim = 1 concat_dim = 0 : (tensor<2x768xf32>) -> tensor<8x192xf32>
    ```

    **Constraints**
  }] # commonConstraints # [{
    * (C3) both dims are in [0, rank); same rank and element type.
    * (C4) operand `split_dim` is divisible by the group size; the result's
      `split_dim` is the quotient and its `concat_dim` the operand's times the
      group size (when the two dims differ); other dims are equal.
  }];
  let arguments = (ins AnyRankedTensor:$input, FlatSymbolRefAttr:$mesh,
                       StrArrayAttr:$axes, I64Attr:$split_dim, I64Attr:$concat_dim);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `on` $mesh `axes` `=` $axes `split_dim` `=` $split_dim `concat_dim` `=` $concat_dim attr-dict `:` functional-type(operands, results)
  }];
}

def Tessel_CollectivePermuteOp
    : Tessel_CollectiveOp<"collective_permute", [SameOperandsAndResultType]>,
    Tessel_Instruction<104, "collective", [Tessel_RtAttr<"group", "$_ctx.groupOf($_op.getAxes())", "ints">, Tessel_RtAttr<"pairs">]> {
  let summary = "Sends each rank's value to another rank of the group";
  let description = [{
    `pairs` is a flat list of (source, target) group indices; a rank that is
    no target receives zeros.

    ```mlir
    %1 = tessel.collective_permute %0 on @mesh axes = ["pp"] pairs = [0, 1, 1, 0] : tensor<8x768xf32>
    ```

    **Constraints**
  }] # commonConstraints # [{
    * (C3) operand and result have the same type.
    * (C4) `pairs` has even length; indices are in [0, group size); no
      source and no target appears twice.
  }];
  let arguments = (ins AnyRankedTensor:$input, FlatSymbolRefAttr:$mesh,
                       StrArrayAttr:$axes, DenseI64ArrayAttr:$pairs);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `on` $mesh `axes` `=` $axes `pairs` `=` $pairs attr-dict `:` type($result)
  }];
}

def Tessel_BroadcastOp
    : Tessel_CollectiveOp<"broadcast", [SameOperandsAndResultType]>,
    Tessel_Instruction<105, "collective", [Tessel_RtAttr<"group", "$_ctx.groupOf($_op.getAxes())", "ints">, Tessel_RtAttr<"root">]> {
  let summary = "Copies the root's value to every rank of the group";
  let description = [{
    ```mlir
    %1 = tessel.broadcast %0 on @mesh axes = ["dp"] root = 0 : tensor<8x768xf32>
    ```

    **Constraints**
  }] # commonConstraints # [{
    * (C3) operand and result have the same type.
    * (C4) `root` is in [0, group size).
  }];
  let arguments = (ins AnyRankedTensor:$input, FlatSymbolRefAttr:$mesh,
                       StrArrayAttr:$axes, I64Attr:$root);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `on` $mesh `axes` `=` $axes `root` `=` $root attr-dict `:` type($result)
  }];
}

def Tessel_SendOp : Tessel_CollectiveOp<"send">,
    Tessel_Instruction<106, "collective", [Tessel_RtAttr<"peer", "$_ctx.groupOf($_op.getAxes())[$_op.getTarget()]", "int">, Tessel_RtAttr<"tag">]> {
  let summary = "Sends a value to one rank of the group";
  let description = [{
    Point-to-point, as pipeline stages exchange activations and gradients;
    matched by the `tessel.recv` with the same tag on `target`.

    ```mlir
    tessel.send %0 on @mesh axes = ["pp"] target = 1 tag = 7 : tensor<4x32x64xf32>
    ```

    **Constraints**
  }] # commonConstraints # [{
    * (C3) `target` is in [0, group size); `tag` is non-negative.
  }];
  let arguments = (ins AnyRankedTensor:$input, FlatSymbolRefAttr:$mesh,
                       StrArrayAttr:$axes, I64Attr:$target, I64Attr:$tag);
  let assemblyFormat = [{
    $input `on` $mesh `axes` `=` $axes `target` `=` $target `tag` `=` $tag attr-dict `:` type($input)
  }];
}

def Tessel_RecvOp : Tessel_CollectiveOp<"recv">,
    Tessel_Instruction<107, "collective", [Tessel_RtAttr<"peer", "$_ctx.groupOf($_op.getAxes())[$_op.getSource()]", "int">, Tessel_RtAttr<"tag">]> {
  let summary = "Receives a value from one rank of the group";
  let description = [{
    ```mlir
    %0 = tessel.recv on @mesh axes = ["pp"] source = 0 tag = 7 : tensor<4x32x64xf32>
    ```

    **Constraints**
  }] # commonConstraints # [{
    * (C3) `source` is in [0, group size); `tag` is non-negative.
  }];
  let arguments = (ins FlatSymbolRefAttr:$mesh, StrArrayAttr:$axes,
                       I64Attr:$source, I64Attr:$tag);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    `on` $mesh `axes` `=` $axes `source` `=` $source `tag` `=` $tag attr-dict `:` type($result)
  }];
}

#endif // TESSEL_COLLECTIVE_OPS_TD
