//===- TesselAttrs.td - sharding specs and sharding rules --*- tablegen -*-===//

#ifndef TESSEL_ATTRS_TD
#define TESSEL_ATTRS_TD

include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/BuiltinAttributeInterfaces.td"
include "dialects/tessel/TesselDialect.td"
include "dialects/tessel/TesselEnums.td"

//===----------------------------------------------------------------------===//
// Sharding spec
//===----------------------------------------------------------------------===//

def Tessel_DimShardingAttr : Tessel_Attr<"DimSharding", "dim"> {
  let summary = "How one tensor dimension is split over mesh axes";
  let description = [{
    The ordered list of mesh axes that split one dimension (major to minor;
    an empty list replicates the dimension) and the number of padding
    elements appended to the dimension so that it divides evenly.

    Printed inside a `#tessel.sharding` as `{}`, `{"tp"}`, `{"dp", "tp"}` or
    `{"tp", pad = 2}`; as a standalone attribute: `#tessel.dim<{"tp"}>`.

    **Constraints**

    * (C1) `pad` is non-negative.
    * (C2) no axis appears twice.
    * (C3) `pad` is zero when no axis splits the dimension.
  }];
  let parameters = (ins
    ArrayRefParameter<"::mlir::StringAttr", "mesh axes, major to minor">:$axes,
    DefaultValuedParameter<"int64_t", "0", "padding elements">:$pad);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
}

def Tessel_PartialAxisAttr : Tessel_Attr<"PartialAxis", "partial"> {
  let summary = "A mesh axis over which a value is a pending reduction";
  let description = [{
    A value that is partial over axis `"tp"` with kind `sum` holds, on each
    rank of that axis, one addend of the true value. Printed inside a
    `#tessel.sharding` as `sum("tp")`; standalone: `#tessel.partial<sum("tp")>`.
  }];
  let parameters = (ins "::mlir::StringAttr":$axis,
                        "::mlir::tessel::ReductionKind":$kind);
  let hasCustomAssemblyFormat = 1;
}

def Tessel_TensorShardingAttr : Tessel_Attr<"TensorSharding", "sharding"> {
  let summary = "The sharding spec of a tensor over a named mesh";
  let description = [{
    For each tensor dimension, the mesh axes that split it; axes not named
    replicate the tensor; `partial` axes mark pending reductions.

    ```mlir
    #tessel.sharding<@mesh, [{}, {"tp"}] # "}]" # [{>                 // ShardSpec([-1], [tp])
    #tessel.sharding<@mesh, [{"dp"}, {}, {}] # "}]" # [{>             // batch over dp
    #tessel.sharding<@mesh, [{"tp", pad = 2}, {}] # "}]" # [{>        // 30 rows over tp=4
    #tessel.sharding<@mesh, [{}, {}] # "}]" # [{, partial = [sum("tp")]>
    ```

    `docs/sharding.md` gives the ColoTensor and DTensor equivalents.

    **Constraints**

    * (C1) no axis is used twice, across dims and partial axes.
    * (C2) when attached to a value: the mesh exists and names every axis.
    * (C3) when attached to a value: one dim spec per tensor dimension.
    * (C4) when attached to a value: each split dimension, plus its pad, is
      divisible by the product of its axis sizes, and the pad fits in the
      shards after the first (the first shard holds none of it).
  }];
  let parameters = (ins
    "::mlir::FlatSymbolRefAttr":$mesh,
    ArrayRefParameter<"::mlir::tessel::DimShardingAttr", "per-dim specs">:$dims,
    ArrayRefParameter<"::mlir::tessel::PartialAxisAttr", "partial axes">:$partials);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    int64_t getRank() const { return getDims().size(); }
    /// A fully replicated spec of `rank` dims over `mesh`.
    static TensorShardingAttr getReplicated(::mlir::MLIRContext *ctx,
                                            ::mlir::FlatSymbolRefAttr mesh,
                                            int64_t rank);
    /// True when no dim is split and nothing is partial.
    bool isReplicated() const;
    /// True when `axis` splits a dim or is partial.
    bool usesAxis(::llvm::StringRef axis) const;
  }];
}

//===----------------------------------------------------------------------===//
// Sharding rule
//===----------------------------------------------------------------------===//

def Tessel_DimMappingAttr : Tessel_Attr<"DimMapping", "dim_mapping"> {
  let summary = "The factors a tensor dimension is made of";
  let description = [{
    Factor indices, major to minor; one factor for most dims, several for a
    dim that reshape splits or merges (a compound dim), none for a size-1
    broadcast dim. Printed only inside `#tessel.rule`.
  }];
  let parameters = (ins ArrayRefParameter<"int64_t">:$factors);
  let assemblyFormat = "`<` `[` $factors `]` `>`";
}

def Tessel_TensorMappingAttr : Tessel_Attr<"TensorMapping", "tensor_mapping"> {
  let summary = "The dim mappings of one operand or result";
  let description = [{ One `#tessel.dim_mapping` per tensor dimension. }];
  let parameters = (ins ArrayRefParameter<"DimMappingAttr">:$dims);
  let assemblyFormat = "`<` `[` $dims `]` `>`";
}

def Tessel_OpShardingRuleAttr : Tessel_Attr<"OpShardingRule", "rule"> {
  let summary = "A factor-based sharding rule of an op";
  let description = [{
    As in Shardy's OpShardingRule: the op's iteration space is a list of
    factors with sizes; each operand and result dimension is a factor (or a
    product of factors, for reshape). A factor that appears in operands but in
    no result is a reduction factor: sharding it makes the result partial. A
    factor in `need_replication` must not be sharded (softmax's axis, a
    slice's sliced dim, a conv's spatial dims). Factors are named `i`, `j`,
    `k`, ... in order.

    ```mlir
    // matmul [8, 8] x [8, 16] -> [8, 16]
    #tessel.rule<([i, k], [k, j]) -> ([i, j]) {i=8, j=16, k=8} reduction={k}>
    // reshape [4, 6] -> [24]
    #tessel.rule<([i, j]) -> ([ij]) {i=4, j=6}>
    // add [4, 1] + [4, 5]: the size-1 broadcast dim has no factor
    #tessel.rule<([i, 1], [i, j]) -> ([i, j]) {i=4, j=5}>
    ```

    **Constraints**

    * (C1) every factor index is in range and sizes are positive.
    * (C2) reduction and need_replication factors are in range.
  }];
  let parameters = (ins
    ArrayRefParameter<"int64_t", "factor sizes">:$factorSizes,
    ArrayRefParameter<"TensorMappingAttr">:$operandMappings,
    ArrayRefParameter<"TensorMappingAttr">:$resultMappings,
    ArrayRefParameter<"int64_t">:$reductionFactors,
    ArrayRefParameter<"int64_t">:$needReplicationFactors);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    int64_t getNumFactors() const { return getFactorSizes().size(); }
    bool isReductionFactor(int64_t f) const {
      return ::llvm::is_contained(getReductionFactors(), f);
    }
    bool isNeedReplicationFactor(int64_t f) const {
      return ::llvm::is_contained(getNeedReplicationFactors(), f);
    }
  }];
}

#endif // TESSEL_ATTRS_TD
