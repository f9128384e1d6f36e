//===- TesselOps.td - tessel ops ---------------------------*- tablegen -*-===//
//
// Mesh, parameters, compute ops (each with a sharding rule), the sharding
// constraint, and the collectives of partitioned programs.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_OPS_TD
#define TESSEL_OPS_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "dialects/tessel/TesselDialect.td"
include "dialects/tessel/TesselEnums.td"
include "dialects/tessel/TesselAttrs.td"
include "dialects/tessel/TesselInterfaces.td"
include "dialects/tessel/TesselRuntime.td"

def Tessel_FloatTensor : RankedTensorOf<[AnyFloat]>;
def Tessel_BoolTensor : RankedTensorOf<[I1]>;
def Tessel_IndexTensor : RankedTensorOf<[I32, I64]>;
def Tessel_AnyTensor : RankedTensorOf<[AnyType]>;

// An op whose sharding rule is computed by the C++ function `builder`
// (ShardingRules.cpp) from the op's operand and result types.
class Tessel_RuleFrom<string builder> {
  code ruleDefinition = [{
    ::mlir::tessel::OpShardingRuleAttr $cppClass::getShardingRule() {
      return ::mlir::tessel::}] # builder # [{(*this);
    }
  }];
}

// The getReductionKind of an op whose partial results combine by `kind` (a
// case of ReductionKind: "Max", "Mean", ...); nothing for "", which keeps the
// interface's default, sum.
class Tessel_ReductionKindIs<string kind> {
  code definition = !if(!empty(kind), "", [{
    ::mlir::tessel::ReductionKind $cppClass::getReductionKind() {
      return ::mlir::tessel::ReductionKind::}] # kind # [{;
    }
  }]);
  list<string> methods = !if(!empty(kind), [], ["getReductionKind"]);
}

// An op whose gradient rule is built by the C++ function `builder`
// (Gradients.cpp), mixed into the definition of a Tessel_ComputeOp (which
// reads it; on other ops it does nothing):
//
//   def Tessel_ExpOp : Tessel_UnaryOp<"exp", ...>, ...,
//       Tessel_GradientFrom<"buildExpGradient">;
//
// The op then implements GradientOpInterface, whose buildGradients calls
// `::mlir::LogicalResult builder(ThisOp op, ::mlir::OpBuilder &b,
// ::llvm::ArrayRef<::mlir::Value> resultGrads,
// ::llvm::SmallVectorImpl<::mlir::Value> &operandGrads)` (declared here, so
// an op's gradient is this mention and that one function).
class Tessel_GradientFrom<string builder> {
  string gradientBuilder = builder;
}

// What a compute op with gradient rule `builder` adds: the interface and its
// buildGradients (nothing for "").
class Tessel_GradientDefinition<string builder> {
  code definition = !if(!empty(builder), "", [{
    ::mlir::LogicalResult }] # builder # [{($cppClass op,
        ::mlir::OpBuilder &b, ::llvm::ArrayRef<::mlir::Value> resultGrads,
        ::llvm::SmallVectorImpl<::mlir::Value> &operandGrads);
    ::mlir::LogicalResult $cppClass::buildGradients(::mlir::OpBuilder &b,
        ::llvm::ArrayRef<::mlir::Value> resultGrads,
        ::llvm::SmallVectorImpl<::mlir::Value> &operandGrads) {
      return ::mlir::tessel::}] # builder # [{(*this, b, resultGrads, operandGrads);
    }
  }]);
  list<Trait> traits = !if(!empty(builder), [],
      [DeclareOpInterfaceMethods<Tessel_GradientOpInterface>]);
}

// An op whose FLOPs the cost model counts by `cls` (a case of CostClass:
// "Contraction", "Convolution", ...), mixed into a Tessel_ComputeOp as
// Tessel_GradientFrom is; ops without it count one per result element.
class Tessel_CostClassIs<string cls> {
  string costClass = cls;
}

// What a compute op of cost class `cls` adds: CostOpInterface and its
// getCostClass (nothing for "").
class Tessel_CostDefinition<string cls> {
  code definition = !if(!empty(cls), "", [{
    ::mlir::tessel::CostClass $cppClass::getCostClass() {
      return ::mlir::tessel::CostClass::}] # cls # [{;
    }
  }]);
  list<Trait> traits = !if(!empty(cls), [],
      [DeclareOpInterfaceMethods<Tessel_CostOpInterface>]);
}

// A compute op: its sharding rule comes from `ruleBuilder`. An op with a
// reduction factor may name the `reductionKind` of its partial results;
// without one they are sums (the interface's default). Its gradient rule,
// if any, comes from a Tessel_GradientFrom mixin.
class Tessel_ComputeOp<string mnemonic, string ruleBuilder,
                       list<Trait> opTraits = [], string reductionKind = "">
    : Tessel_Op<mnemonic> {
  // Set by Tessel_GradientFrom; "" for an op without a gradient rule. The
  // traits are a `let` (not Tessel_Op's argument) so that they see the
  // mixin's value, which TableGen binds once the whole def is read.
  string gradientBuilder = "";
  // Set by Tessel_CostClassIs; "" for one FLOP per result element.
  string costClass = "";
  let traits = opTraits # [Pure,
      DeclareOpInterfaceMethods<Tessel_ShardingRuleOpInterface,
          Tessel_ReductionKindIs<reductionKind>.methods>] #
      Tessel_GradientDefinition<gradientBuilder>.traits #
      Tessel_CostDefinition<costClass>.traits;
  let extraClassDefinition = Tessel_RuleFrom<ruleBuilder>.ruleDefinition #
      Tessel_ReductionKindIs<reductionKind>.definition #
      Tessel_GradientDefinition<gradientBuilder>.definition #
      Tessel_CostDefinition<costClass>.definition;
}

//===----------------------------------------------------------------------===//
// Mesh
//===----------------------------------------------------------------------===//

def Tessel_MeshOp : Tessel_Op<"mesh", [Symbol, HasParent<"::mlir::ModuleOp">]> {
  let summary = "A named device mesh";
  let description = [{
    A logical device mesh with named axes; sharding specs refer to it by
    symbol. The parallel modes of Colossal-AI (data, tensor, pipeline, a
    user's own) are axes. The number of devices is the product of the sizes.

    ```mlir
    tessel.mesh @mesh ["dp"=2, "tp"=4, "pp"=2]
    ```

    **Constraints**

    * (C1) every axis size is positive.
    * (C2) axis names are unique and non-empty.
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, StrArrayAttr:$axis_names,
                       DenseI64ArrayAttr:$axis_sizes);
  let assemblyFormat = [{
    $sym_name custom<MeshAxes>($axis_names, $axis_sizes) attr-dict
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    int64_t getNumAxes() { return getAxisNames().size(); }
    /// The size of `axis`, or std::nullopt when the mesh lacks it.
    std::optional<int64_t> getAxisSize(::llvm::StringRef axis);
    /// The number of devices: the product of the axis sizes.
    int64_t getNumDevices();
  }];
}

//===----------------------------------------------------------------------===//
// Parameters and constants
//===----------------------------------------------------------------------===//

def Tessel_WeightOp : Tessel_ComputeOp<"weight", "buildSourceRule">,
    Tessel_GradientFrom<"buildWeightGradient"> {
  let summary = "A named parameter whose data lives outside the IR";
  let description = [{
    A model parameter referenced by name; its data is kept beside the
    program (safetensors), so textual IR stays small for any model size.

    ```mlir
    %w = tessel.weight "transformer.h.0.attn.c_attn.weight" : tensor<768x2304xf32>
    %m = tessel.weight "exp_avg.transformer.wte.weight" zeros : tensor<512x128xf32>
    ```

    A weight is a variable of the program: a training step reads it and a
    `tessel.assign` gives it its value for the next step (the optimizer's
    update). With `zeros` it starts as zeros instead of data from the model
    (optimizer state).

    **Constraints**

    * (C1) the name is non-empty.
  }];
  let arguments = (ins StrAttr:$name, UnitAttr:$zeros);
  let results = (outs Tessel_AnyTensor:$result);
  let assemblyFormat = "$name (`zeros` $zeros^)? attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Tessel_AssignOp : Tessel_Op<"assign", [
    AllTypesMatch<["weight", "value", "result"]>,
    MemoryEffects<[MemWrite]>,
    DeclareOpInterfaceMethods<Tessel_ShardingRuleOpInterface>]> {
  let summary = "Gives a weight its value for the next step";
  let description = [{
    When the step ends, the weight `weight` (a `tessel.weight`) holds `value`:
    the optimizer's update of a parameter, or new optimizer state. The result
    is `value`. Reads of the weight see its value from the start of the step
    whatever their position; a weight is assigned at most once. The sharding
    rule is elementwise: `value` is resharded to the weight's spec.

    ```mlir
    %w = tessel.weight "fc.weight" : tensor<4x8xf32>
    %n = tessel.sub %w, %d : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    %0 = tessel.assign %w, %n : tensor<4x8xf32>
    ```

    **Constraints**

    * (C1) `weight` is the result of a `tessel.weight`.
    * (C2) `weight`, `value` and the result have the same type.
    * (C3) no other `tessel.assign` in the block assigns the same weight.
  }];
  let arguments = (ins Tessel_AnyTensor:$weight, Tessel_AnyTensor:$value);
  let results = (outs Tessel_AnyTensor:$result);
  let assemblyFormat = "$weight `,` $value attr-dict `:` type($result)";
  let hasVerifier = 1;
  let extraClassDefinition =
      Tessel_RuleFrom<"buildElementwiseRule">.ruleDefinition;
}

def Tessel_ConstantOp : Tessel_ComputeOp<"constant", "buildSourceRule",
                                         [ConstantLike,
                                          AllTypesMatch<["value", "result"]>]>,
    Tessel_GradientFrom<"buildConstantGradient"> {
  let summary = "A constant tensor";
  let description = [{
    ```mlir
    %c = tessel.constant dense<[1.0, 2.0]> : tensor<2xf32>
    ```

    **Constraints**

    * (C1) the value's type is the result type.
  }];
  let arguments = (ins ElementsAttr:$value);
  let results = (outs Tessel_AnyTensor:$result);
  let assemblyFormat = "$value attr-dict";
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Sharding constraint
//===----------------------------------------------------------------------===//

def Tessel_ShardConstraintOp
    : Tessel_ComputeOp<"shard_constraint", "buildElementwiseRule",
                       [SameOperandsAndResultType, Tessel_DataMovement]>,
    Tessel_GradientFrom<"buildShardConstraintGradient"> {
  let summary = "Pins the sharding spec of a value";
  let description = [{
    The value's spec at this point is `sharding`; propagation never changes
    it and partitioning reshards to it.

    ```mlir
    %1 = tessel.shard_constraint %0 <@mesh, [{"dp"}, {}, {"tp"}] # "}]" # [{> : tensor<8x128x768xf32>
    ```

    **Constraints**

    * (C1) the spec is valid for the value (mesh, axes, rank, divisibility).
  }];
  let arguments = (ins Tessel_AnyTensor:$input,
                       Tessel_TensorShardingAttr:$sharding);
  let results = (outs Tessel_AnyTensor:$result);
  let assemblyFormat = "$input $sharding attr-dict `:` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

// An elementwise unary op whose runtime math is its scalar function
// (Tessel_ScalarFunction) over `types` ("Float", "Numeric", "Bool").
// `props`: what else holds of it (Tessel_ZeroPreserving, ...).
class Tessel_UnaryOp<string mnemonic, Type elemTy, string what,
                     list<Trait> props = [], string types = "Float">
    : Tessel_ComputeOp<mnemonic, "buildElementwiseRule",
                       [SameOperandsAndResultType, Tessel_Elementwise] # props>,
      Tessel_ScalarFunction<types> {
  let summary = "Elementwise " # what;
  let description = [{
    Elementwise }] # what # [{; the result has the operand's type.

    ```mlir
    %1 = tessel.}] # mnemonic # [{ %0 : tensor<4x8xf32>
    ```

    **Constraints**

    * (C1) operand and result have the same type.
  }];
  let arguments = (ins RankedTensorOf<[elemTy]>:$input);
  let results = (outs RankedTensorOf<[elemTy]>:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
}

def Tessel_NegOp : Tessel_UnaryOp<"neg", AnyFloat, "negation",
                                  [Tessel_ZeroPreserving], "Numeric">,
    Tessel_Instruction<1, "unary">,
    Tessel_GradientFrom<"buildNegGradient">;
def Tessel_ExpOp : Tessel_UnaryOp<"exp", AnyFloat, "exponential",
                                  [Tessel_FinitePreserving]>,
    Tessel_Instruction<2, "unary">,
    Tessel_GradientFrom<"buildExpGradient">;
def Tessel_LogOp : Tessel_UnaryOp<"log", AnyFloat, "natural logarithm">,
    Tessel_Instruction<3, "unary">,
    Tessel_GradientFrom<"buildLogGradient">;
def Tessel_SqrtOp : Tessel_UnaryOp<"sqrt", AnyFloat, "square root">,
    Tessel_Instruction<4, "unary">,
    Tessel_GradientFrom<"buildSqrtGradient">;
def Tessel_RsqrtOp : Tessel_UnaryOp<"rsqrt", AnyFloat, "reciprocal square root">,
    Tessel_Instruction<5, "unary">,
    Tessel_GradientFrom<"buildRsqrtGradient">;
def Tessel_ReciprocalOp : Tessel_UnaryOp<"reciprocal", AnyFloat, "reciprocal">,
    Tessel_Instruction<11, "unary">,
    Tessel_GradientFrom<"buildReciprocalGradient">;
def Tessel_AbsOp : Tessel_UnaryOp<"abs", AnyFloat, "absolute value",
                                  [Tessel_ZeroPreserving], "Numeric">,
    Tessel_Instruction<12, "unary">,
    Tessel_GradientFrom<"buildAbsGradient">;
def Tessel_TanhOp : Tessel_UnaryOp<"tanh", AnyFloat, "hyperbolic tangent",
                                   [Tessel_ZeroPreserving]>,
    Tessel_Instruction<6, "unary">,
    Tessel_GradientFrom<"buildTanhGradient">;
def Tessel_ErfOp : Tessel_UnaryOp<"erf", AnyFloat, "error function",
                                  [Tessel_ZeroPreserving]>,
    Tessel_Instruction<7, "unary">,
    Tessel_GradientFrom<"buildErfGradient">;
def Tessel_SigmoidOp : Tessel_UnaryOp<"sigmoid", AnyFloat, "logistic sigmoid",
                                      [Tessel_FinitePreserving]>,
    Tessel_Instruction<8, "unary">,
    Tessel_GradientFrom<"buildSigmoidGradient">;
def Tessel_ReluOp : Tessel_UnaryOp<"relu", AnyFloat, "max(x, 0)",
                                   [Tessel_ZeroPreserving], "Numeric">,
    Tessel_Instruction<9, "unary">,
    Tessel_GradientFrom<"buildReluGradient">;
def Tessel_NotOp : Tessel_UnaryOp<"not", I1, "logical not", [], "Bool">,
    Tessel_Instruction<13, "unary">;

def Tessel_GeluOp : Tessel_ComputeOp<"gelu", "buildElementwiseRule",
    [SameOperandsAndResultType, Tessel_Elementwise, Tessel_ZeroPreserving]>,
    Tessel_Instruction<10, "unary", [Tessel_RtAttr<"tanh_approximation">]>,
    Tessel_ScalarFunction,
    Tessel_GradientFrom<"buildGeluGradient"> {
  let summary = "Elementwise GELU";
  let description = [{
    `x * Phi(x)`; with `tanh_approximation`, the tanh form.

    ```mlir
    %1 = tessel.gelu %0 : tensor<4x8xf32>
    %2 = tessel.gelu %0 {tanh_approximation} : tensor<4x8xf32>
    ```

    **Constraints**

    * (C1) operand and result have the same type.
  }];
  let arguments = (ins Tessel_FloatTensor:$input, UnitAttr:$tanh_approximation);
  let results = (outs Tessel_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
}

def Tessel_SoftplusOp : Tessel_UnaryOp<"softplus", AnyFloat, "log(1 + exp(x))",
                                       [Tessel_FinitePreserving]>,
    Tessel_Instruction<15, "unary">, Tessel_OnnxOneToOne<"Softplus", 1>,
    Tessel_GradientFrom<"buildSoftplusGradient">;

def Tessel_HardSwishOp
    : Tessel_UnaryOp<"hard_swish", AnyFloat, "x * max(0, min(1, x / 6 + 1/2))",
                     [Tessel_ZeroPreserving]>,
      Tessel_Instruction<16, "unary">, Tessel_OnnxOneToOne<"HardSwish", 14>,
    Tessel_GradientFrom<"buildHardSwishGradient">;

def Tessel_SoftsignOp : Tessel_UnaryOp<"softsign", AnyFloat, "x / (1 + |x|)",
                                       [Tessel_ZeroPreserving]>,
    Tessel_Instruction<31, "unary">, Tessel_OnnxOneToOne<"Softsign", 1>,
    Tessel_GradientFrom<"buildSoftsignGradient">;

def Tessel_SinOp : Tessel_UnaryOp<"sin", AnyFloat, "sine",
                                  [Tessel_ZeroPreserving]>,
    Tessel_Instruction<18, "unary">,
    Tessel_GradientFrom<"buildSinGradient">;
def Tessel_CosOp : Tessel_UnaryOp<"cos", AnyFloat, "cosine",
                                  [Tessel_FinitePreserving]>,
    Tessel_Instruction<19, "unary">,
    Tessel_GradientFrom<"buildCosGradient">;

// The step functions: their gradient is 0 (PyTorch's too). Imported by
// lib/Import/OpImporters.cpp's unary(), which folds them on constants (a
// shape computed with Ceil, as MobileViT's TorchScript export has).
def Tessel_FloorOp : Tessel_UnaryOp<"floor", AnyFloat,
                                    "floor (the largest integer <= x)",
                                    [Tessel_ZeroPreserving]>,
    Tessel_Instruction<32, "unary">,
    Tessel_GradientFrom<"buildFloorGradient">;
def Tessel_CeilOp : Tessel_UnaryOp<"ceil", AnyFloat,
                                   "ceiling (the smallest integer >= x)",
                                   [Tessel_ZeroPreserving]>,
    Tessel_Instruction<33, "unary">,
    Tessel_GradientFrom<"buildCeilGradient">;
def Tessel_RoundOp : Tessel_UnaryOp<"round", AnyFloat,
                                    "rounding to the nearest integer, halves to even",
                                    [Tessel_ZeroPreserving]>,
    Tessel_Instruction<34, "unary">,
    Tessel_GradientFrom<"buildRoundGradient">;
def Tessel_SignOp : Tessel_UnaryOp<"sign", AnyFloat,
                                   "sign (-1, 0 or 1; NaN stays NaN)",
                                   [Tessel_ZeroPreserving]>,
    Tessel_Instruction<35, "unary">,
    Tessel_GradientFrom<"buildSignGradient">;

def Tessel_LeakyReluOp : Tessel_ComputeOp<"leaky_relu", "buildElementwiseRule",
    [SameOperandsAndResultType, Tessel_Elementwise, Tessel_ZeroPreserving]>,
    Tessel_Instruction<17, "unary", [Tessel_RtAttr<"alpha">]>,
    Tessel_ScalarFunction,
    Tessel_OnnxOneToOne<"LeakyRelu", 6, [Tessel_OnnxAttr<"alpha", "0.01">]>,
    Tessel_GradientFrom<"buildLeakyReluGradient"> {
  let summary = "Elementwise leaky ReLU";
  let description = [{
    `x` where `x >= 0`, `alpha * x` elsewhere.

    ```mlir
    %1 = tessel.leaky_relu %0 {alpha = 0.1 : f32} : tensor<4x8xf32>
    ```

    **Constraints**

    * (C1) operand and result have the same type.
  }];
  let arguments = (ins Tessel_FloatTensor:$input,
                       DefaultValuedAttr<F32Attr, "0.01f">:$alpha);
  let results = (outs Tessel_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
}

def Tessel_CastOp : Tessel_ComputeOp<"cast", "buildElementwiseRule",
                                     [Tessel_Elementwise, Tessel_ZeroPreserving]>,
    Tessel_Instruction<14, "unary", [Tessel_RtAttr<"to", "dtypeNameOf($_op.getType())", "str">]>,
    Tessel_GradientFrom<"buildCastGradient"> {
  let summary = "Elementwise conversion to another element type";
  let description = [{
    ```mlir
    %1 = tessel.cast %0 : tensor<4xi64> -> tensor<4xf32>
    ```

    **Constraints**

    * (C1) operand and result have the same shape.
  }];
  let arguments = (ins Tessel_AnyTensor:$input);
  let results = (outs Tessel_AnyTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

// An elementwise binary op whose runtime math is its scalar function
// (Tessel_BinaryScalarFunction) over `types` ("Float", "Numeric",
// "Integer"). `props`: what else holds of it (Tessel_ZeroPreserving, ...).
class Tessel_BinaryOp<string mnemonic, string what, list<Trait> props = [],
                      string types = "Numeric">
    : Tessel_ComputeOp<mnemonic, "buildElementwiseRule",
                       [InferTypeOpAdaptor, Tessel_Elementwise] # props>,
      Tessel_BinaryScalarFunction<types> {
  let summary = "Elementwise " # what # " with numpy broadcasting";
  let description = [{
    Elementwise }] # what # [{; operand shapes broadcast as in numpy.

    ```mlir
    %2 = tessel.}] # mnemonic # [{ %0, %1 : (tensor<4x1xf32>, tensor<5xf32>) -> tensor<4x5xf32>
    ```

    **Constraints**

    * (C1) operands have the same element type.
    * (C2) operand shapes broadcast; the result has the broadcast shape.
  }];
  let arguments = (ins Tessel_AnyTensor:$lhs, Tessel_AnyTensor:$rhs);
  let results = (outs Tessel_AnyTensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)";
}

def Tessel_AddOp : Tessel_BinaryOp<"add", "addition", [Tessel_ZeroPreserving]>,
    Tessel_Instruction<20, "binary">,
    Tessel_GradientFrom<"buildAddGradient">;
def Tessel_SubOp : Tessel_BinaryOp<"sub", "subtraction", [Tessel_ZeroPreserving]>,
    Tessel_Instruction<21, "binary">,
    Tessel_GradientFrom<"buildSubGradient">;
def Tessel_MulOp : Tessel_BinaryOp<"mul", "multiplication", [Tessel_ZeroPreserving]>,
    Tessel_Instruction<22, "binary">,
    Tessel_GradientFrom<"buildMulGradient">;
def Tessel_DivOp : Tessel_BinaryOp<"div", "division">,
    Tessel_Instruction<23, "binary">,
    Tessel_GradientFrom<"buildDivGradient">;
def Tessel_PowOp : Tessel_BinaryOp<"pow", "power", [], "Float">,
    Tessel_Instruction<24, "binary">,
    Tessel_GradientFrom<"buildPowGradient">;
def Tessel_MaxOp : Tessel_BinaryOp<"max", "maximum", [Tessel_ZeroPreserving]>,
    Tessel_Instruction<25, "binary">,
    Tessel_GradientFrom<"buildMaxGradient">;
def Tessel_MinOp : Tessel_BinaryOp<"min", "minimum", [Tessel_ZeroPreserving]>,
    Tessel_Instruction<26, "binary">,
    Tessel_GradientFrom<"buildMinGradient">;

def Tessel_ModOp : Tessel_BinaryOp<"mod", "integer remainder", [], "Integer">,
    Tessel_Instruction<29, "binary"> {
  let summary = "Elementwise integer remainder with the divisor's sign";
  let description = [{
    ONNX Mod with `fmod = 0`, Python's `%`: `lhs - floor(lhs / rhs) * rhs`,
    whose sign is the divisor's; `x mod 0` is 0. Operand shapes broadcast
    as in numpy.

    ```mlir
    %2 = tessel.mod %0, %1 : (tensor<4x1xi64>, tensor<5xi64>) -> tensor<4x5xi64>
    ```

    **Constraints**

    * (C1) operands have the same element type.
    * (C2) operand shapes broadcast; the result has the broadcast shape.
  }];
  let arguments = (ins Tessel_IndexTensor:$lhs, Tessel_IndexTensor:$rhs);
  let results = (outs Tessel_IndexTensor:$result);
}

def Tessel_FModOp : Tessel_BinaryOp<"fmod", "remainder">,
    Tessel_Instruction<30, "binary">,
    Tessel_GradientFrom<"buildFModGradient"> {
  let summary = "Elementwise remainder with the dividend's sign";
  let description = [{
    ONNX Mod with `fmod = 1`, C's `fmod`: `lhs - trunc(lhs / rhs) * rhs`,
    exact, whose sign is the dividend's; an integer `x fmod 0` is 0, a
    float one NaN. Operand shapes broadcast as in numpy.

    ```mlir
    %2 = tessel.fmod %0, %1 : (tensor<4x1xf32>, tensor<5xf32>) -> tensor<4x5xf32>
    ```

    **Constraints**

    * (C1) operands have the same element type.
    * (C2) operand shapes broadcast; the result has the broadcast shape.
  }];
  let arguments = (ins RankedTensorOf<[AnyFloat, I32, I64]>:$lhs,
                       RankedTensorOf<[AnyFloat, I32, I64]>:$rhs);
  let results = (outs RankedTensorOf<[AnyFloat, I32, I64]>:$result);
}

def Tessel_CompareOp : Tessel_ComputeOp<"compare", "buildElementwiseRule",
                                        [InferTypeOpAdaptor, Tessel_Elementwise]>,
    Tessel_Instruction<27, "compare", [Tessel_RtAttr<"predicate">]> {
  let summary = "Elementwise comparison with numpy broadcasting";
  let description = [{
    ```mlir
    %2 = tessel.compare lt, %0, %1 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
    ```

    **Constraints**

    * (C1) operands have the same element type.
    * (C2) operand shapes broadcast; the result is i1 of the broadcast shape.
  }];
  let arguments = (ins Tessel_ComparePredicate:$predicate,
                       Tessel_AnyTensor:$lhs, Tessel_AnyTensor:$rhs);
  let results = (outs Tessel_BoolTensor:$result);
  let assemblyFormat = [{
    $predicate `,` $lhs `,` $rhs attr-dict `:` functional-type(operands, results)
  }];
}

def Tessel_WhereOp : Tessel_ComputeOp<"where", "buildElementwiseRule",
    [InferTypeOpAdaptor, Tessel_Elementwise, Tessel_ZeroPreserving]>,
    Tessel_Instruction<28, "where">,
    Tessel_GradientFrom<"buildWhereGradient"> {
  let summary = "Elementwise select with numpy broadcasting";
  let description = [{
    `condition ? on_true : on_false`, all three broadcast.

    ```mlir
    %3 = tessel.where %c, %a, %b : (tensor<1x1x4x4xi1>, tensor<2x2x4x4xf32>, tensor<f32>) -> tensor<2x2x4x4xf32>
    ```

    **Constraints**

    * (C1) both values have the same element type.
    * (C2) the three shapes broadcast; the result has the broadcast shape.
  }];
  let arguments = (ins Tessel_BoolTensor:$condition, Tessel_AnyTensor:$on_true,
                       Tessel_AnyTensor:$on_false);
  let results = (outs Tessel_AnyTensor:$result);
  let assemblyFormat = [{
    $condition `,` $on_true `,` $on_false attr-dict `:` functional-type(operands, results)
  }];
}

//===----------------------------------------------------------------------===//
// Contractions
//===----------------------------------------------------------------------===//

def Tessel_MatmulOp : Tessel_ComputeOp<"matmul", "buildMatmulRule",
                                       [InferTypeOpAdaptor, Tessel_ZeroPreserving]>,
    Tessel_CostClassIs<"Contraction">,
    Tessel_Instruction<40, "matmul", [Tessel_RtAttr<"bf16_operands">], "", "MatMul">,
    Tessel_GradientFrom<"buildMatmulGradient"> {
  let summary = "Batched matrix product with numpy broadcasting";
  let description = [{
    `numpy.matmul`: the last two dims multiply, leading (batch) dims
    broadcast; a rank-1 operand is a vector.

    ```mlir
    %2 = tessel.matmul %0, %1 : (tensor<2x12x32x64xf32>, tensor<2x12x64x32xf32>) -> tensor<2x12x32x32xf32>
    ```

    **Constraints**

    * (C1) both operands have rank at least 1 and the same element type.
    * (C2) the contracting dims have the same size.
    * (C3) the batch dims broadcast.

    `bf16_operands` (set by `-tessel-mark-bf16-operands`) says that every
    operand holds bf16 values (f32 whose low 16 bits are zero): a backend
    may run the product with bf16 operands and f32 accumulation, which
    changes nothing but the order of the f32 sums.
  }];
  let arguments = (ins Tessel_FloatTensor:$lhs, Tessel_FloatTensor:$rhs,
                       UnitAttr:$bf16_operands);
  let results = (outs Tessel_FloatTensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)";
}

def Tessel_GemmOp : Tessel_ComputeOp<"gemm", "buildGemmRule",
                                     [InferTypeOpAdaptor, Tessel_ZeroPreserving]>,
    Tessel_CostClassIs<"Contraction">,
    Tessel_Instruction<41, "gemm", [Tessel_RtAttr<"trans_a">, Tessel_RtAttr<"trans_b">, Tessel_RtAttr<"alpha">, Tessel_RtAttr<"beta">, Tessel_RtAttr<"bf16_operands">]>,
    Tessel_GradientFrom<"buildGemmGradient"> {
  let summary = "General matrix product: alpha * op(a) * op(b) + beta * c";
  let description = [{
    ONNX Gemm and `nn.Linear`: `a` is [M, K] (or [K, M] with `trans_a`), `b`
    is [K, N] (or [N, K] with `trans_b`), the optional `c` broadcasts to
    [M, N].

    ```mlir
    %y = tessel.gemm %x, %w, %b {trans_b} : (tensor<8x64xf32>, tensor<128x64xf32>, tensor<128xf32>) -> tensor<8x128xf32>
    ```

    **Constraints**

    * (C1) `a` and `b` have rank 2.
    * (C2) the contracting dims have the same size.
    * (C3) `c` broadcasts to [M, N].

    `bf16_operands` (set by `-tessel-mark-bf16-operands`): `a` and `b` hold
    bf16 values (f32 whose low 16 bits are zero), so a backend may multiply
    them in bf16 with f32 accumulation; `c` is added in f32.
  }];
  let arguments = (ins Tessel_FloatTensor:$a, Tessel_FloatTensor:$b,
                       Optional<Tessel_FloatTensor>:$c,
                       UnitAttr:$trans_a, UnitAttr:$trans_b,
                       DefaultValuedAttr<F32Attr, "1.0f">:$alpha,
                       DefaultValuedAttr<F32Attr, "1.0f">:$beta,
                       UnitAttr:$bf16_operands);
  let results = (outs Tessel_FloatTensor:$result);
  let assemblyFormat = [{
    $a `,` $b (`,` $c^)? attr-dict `:` functional-type(operands, results)
  }];
}

//===----------------------------------------------------------------------===//
// Reductions and normalisations
//===----------------------------------------------------------------------===//

class Tessel_ReduceOp<string mnemonic, string what, string kind>
    : Tessel_ComputeOp<mnemonic, "buildReduceRule",
                       [InferTypeOpAdaptor, Tessel_ZeroPreserving], kind> {
  let summary = "Reduction by " # what # " over some dims";
  let description = [{
    Reduces `dims` by }] # what # [{; with `keep_dims` they stay as size 1.
    Sharding a reduced dim makes the result partial (`}] # !tolower(kind) # [{`).

    ```mlir
    %1 = tessel.}] # mnemonic # [{ %0 dims = [1] keep_dims : (tensor<4x8xf32>) -> tensor<4x1xf32>
    ```

    **Constraints**

    * (C1) each dim is in [0, rank) and appears once.
  }];
  let arguments = (ins Tessel_AnyTensor:$input, DenseI64ArrayAttr:$dims,
                       UnitAttr:$keep_dims);
  let results = (outs Tessel_AnyTensor:$result);
  let assemblyFormat = [{
    $input `dims` `=` $dims (`keep_dims` $keep_dims^)? attr-dict `:` functional-type(operands, results)
  }];
}

def Tessel_ReduceSumOp : Tessel_ReduceOp<"reduce_sum", "sum", "Sum">,
    Tessel_Instruction<50, "reduce", [Tessel_RtAttr<"dims">, Tessel_RtAttr<"keep_dims">]>,
    Tessel_GradientFrom<"buildReduceSumGradient">;
def Tessel_ReduceMeanOp : Tessel_ReduceOp<"reduce_mean", "mean", "Mean">,
    Tessel_Instruction<51, "reduce", [Tessel_RtAttr<"dims">, Tessel_RtAttr<"keep_dims">]>,
    Tessel_GradientFrom<"buildReduceMeanGradient">;
def Tessel_ReduceMaxOp : Tessel_ReduceOp<"reduce_max", "maximum", "Max">,
    Tessel_Instruction<52, "reduce", [Tessel_RtAttr<"dims">, Tessel_RtAttr<"keep_dims">]>,
    Tessel_GradientFrom<"buildReduceMaxGradient">;

def Tessel_CumSumOp : Tessel_ComputeOp<"cumsum", "buildAxisReplicatedRule",
                                       [SameOperandsAndResultType]>,
    Tessel_Instruction<53, "cumsum", [Tessel_RtAttr<"axis">, Tessel_RtAttr<"exclusive">, Tessel_RtAttr<"reverse">]>,
    Tessel_GradientFrom<"buildCumSumGradient"> {
  let summary = "Cumulative sum along one axis";
  let description = [{
    ONNX CumSum: `result[.., i, ..] = sum(input[.., j, ..])` over `j <= i`
    (`j < i` with `exclusive`); with `reverse`, over `j >= i` (`j > i`).
    Floats are summed in order from the first element of the scan; integers
    wrap. The scanned axis must be replicated to shard.

    ```mlir
    %1 = tessel.cumsum %0 axis = 1 : tensor<2x8xi64>
    %2 = tessel.cumsum %x axis = 0 {exclusive, reverse} : tensor<4x3xf32>
    ```

    **Constraints**

    * (C1) `axis` is in [0, rank).
  }];
  let arguments = (ins RankedTensorOf<[AnyFloat, I32, I64]>:$input,
                       I64Attr:$axis, UnitAttr:$exclusive, UnitAttr:$reverse);
  let results = (outs RankedTensorOf<[AnyFloat, I32, I64]>:$result);
  let assemblyFormat = "$input `axis` `=` $axis attr-dict `:` type($result)";
  let hasVerifier = 1;
}

class Tessel_SoftmaxLikeOp<string mnemonic, string what>
    : Tessel_ComputeOp<mnemonic, "buildAxisReplicatedRule",
                       [SameOperandsAndResultType, Tessel_FinitePreserving]> {
  let summary = what # " along one axis";
  let description = [{
    ```mlir
    %1 = tessel.}] # mnemonic # [{ %0 axis = 3 : tensor<2x12x32x32xf32>
    ```

    **Constraints**

    * (C1) `axis` is in [0, rank).
  }];
  let arguments = (ins Tessel_FloatTensor:$input, I64Attr:$axis);
  let results = (outs Tessel_FloatTensor:$result);
  let assemblyFormat = "$input `axis` `=` $axis attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Tessel_SoftmaxOp : Tessel_SoftmaxLikeOp<"softmax", "Softmax">,
    Tessel_Instruction<60, "softmax", [Tessel_RtAttr<"axis">]>,
    Tessel_GradientFrom<"buildSoftmaxGradient">;
def Tessel_LogSoftmaxOp : Tessel_SoftmaxLikeOp<"log_softmax", "Log-softmax">,
    Tessel_Instruction<61, "softmax", [Tessel_RtAttr<"axis">]>,
    Tessel_GradientFrom<"buildLogSoftmaxGradient">;

def Tessel_AttentionOp : Tessel_ComputeOp<"attention", "buildAttentionRule",
                                          [AttrSizedOperandSegments,
                                           InferTypeOpAdaptor,
                                           Tessel_FinitePreserving]>,
    Tessel_CostClassIs<"Attention">,
    Tessel_Instruction<90, "attention", [Tessel_RtAttr<"scale">,
        Tessel_RtAttr<"has_mask", "$_op.getMask() ? 1 : 0", "int">,
        Tessel_RtAttr<"has_nan_fill", "$_op.getNanFill() ? 1 : 0", "int">,
        Tessel_RtAttr<"has_masked_score", "$_op.getMaskedScore() ? 1 : 0", "int">,
        Tessel_RtAttr<"masked_score",
                      "$_op.getMaskedScore().value_or(::llvm::APFloat(0.0f))",
                      "float">,
        Tessel_RtAttr<"has_keep", "$_op.getKeep() ? 1 : 0", "int">]>,
    Tessel_GradientFrom<"buildAttentionGradient"> {
  let summary = "Scaled dot-product attention in one op (no [S, T] tensor)";
  let description = [{
    `softmax(scale * q kt + mask) v` over the last dim of the scores, with
    `q` [..., S, D], `kt` [..., D, T] (the keys already transposed, as the
    exporters write `q @ k.transpose(-2, -1)`), `v` [..., T, Dv] and an
    optional additive `mask` that broadcasts (numpy) to [..., S, T].
    `-tessel-fuse-attention` writes it in place of the exporters' matmul,
    scale, mask, softmax, matmul; its kernels never hold the [S, T] scores
    beyond a block of rows per thread. `lse` is each score row's
    log-sum-exp, which the gradient (`tessel.attention_grad`) reads to
    recompute the probabilities block by block (FlashAttention-2's
    backward). With `nan_fill` (the default exporter's guard after the
    softmax, `where(isnan(p), fill, p)`), a row whose softmax is NaN (every
    score -inf, or a NaN or +inf score: then every probability of the row
    is NaN) has every probability `fill`: its result is `fill` times the
    sum of v's rows; without, NaN. `fill` is a constant (a scalar weight
    never trains): it gets no gradient.

    With `masked_score` c (a finite f32), a score whose mask is -inf is c
    instead (a replace, not an add: the exporters' `where(keep, s, c)` with
    a finite c, such as the -1e4 of transformers' GPT-2 before 4.26, is the
    mask `where(keep, 0, -inf)` with `masked_score = c`). Such a score is a
    constant: it gets no gradient, and its probability exp(c - lse) is 0
    in f32 once its row's largest kept score exceeds c + 104; the kernels
    skip a row's masked keys only where their exp of it gives 0.

    With `keep`, a bool tensor that broadcasts to the scores, as well, a
    score is `keep ? scale * q kt + mask : masked_score + mask`: the
    exporters' `where(keep, s, c) + mask` (transformers' eager GPT-2,
    GPT-Neo and GPT-J given an attention_mask, 4.26 to 4.4x). A hidden
    score depends on the mask but not on q and kt: its ds is 0. A row in
    which every score rounds to one value (a left-padded query row, whose
    kept scores plus finfo.min round to finfo.min as its hidden ones do)
    still gives its kept keys their gradient, which no additive mask could.

    ```mlir
    %o, %lse = tessel.attention %q, %kt, %v mask %m nan_fill %z : (tensor<2x4x128x64xf32>, tensor<2x4x64x128xf32>, tensor<2x4x128x64xf32>, tensor<1x1x128x128xf32>, tensor<f32>) -> (tensor<2x4x128x64xf32>, tensor<2x4x128xf32>)
    ```

    **Constraints**

    * (C1) `q`, `kt` and `v` have one rank, at least 2, and the same
      leading dims; `q`'s last dim is `kt`'s first of the two, `kt`'s last
      is `v`'s first of the two; one float element type.
    * (C2) `mask`, where present, has `q`'s element type or f32, rank at
      most `q`'s, and broadcasts to [..., S, T].
    * (C3) `nan_fill`, where present, is a rank-0 tensor of `q`'s type or
      f32.
    * (C4) `result` is [..., S, Dv] of `q`'s type; `lse` is [..., S] f32.
    * (C5) `masked_score`, where present, is finite, and `mask` is present.
    * (C6) `keep`, where present, broadcasts to [..., S, T], and `mask` and
      `masked_score` are present.
  }];
  let arguments = (ins Tessel_FloatTensor:$q, Tessel_FloatTensor:$kt,
                       Tessel_FloatTensor:$v, Optional<Tessel_FloatTensor>:$mask,
                       Optional<Tessel_FloatTensor>:$nan_fill,
                       Optional<Tessel_BoolTensor>:$keep,
                       DefaultValuedAttr<F32Attr, "1.0f">:$scale,
                       OptionalAttr<F32Attr>:$masked_score);
  let results = (outs Tessel_FloatTensor:$result, Tessel_FloatTensor:$lse);
  let assemblyFormat = [{
    $q `,` $kt `,` $v (`mask` $mask^)? (`nan_fill` $nan_fill^)? (`keep` $keep^)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Tessel_FusedElementwiseOp : Tessel_ComputeOp<"fused_elementwise",
                                                  "buildElementwiseRule">,
    Tessel_Instruction<95, "fused", [Tessel_RtAttr<"program",
        "fusedElementwiseProgram($_op)", "ints">]> {
  let summary = "A chain of elementwise ops in one pass over memory";
  let description = [{
    `-tessel-fuse-elementwise` writes it, last in the compile, in place of a
    tree of unary and binary elementwise ops on f32, and the casts between
    f32, bf16 and f16 around them, whose intermediate values have one
    reader each: each input is read once, the result written once, the
    intermediates never stored (docs/fusion.md). Instruction `i` applies
    `ops[i]` (an op's mnemonic) to the values `args[3 i]` and `args[3 i +
    1]` (-1 for a unary op), with `args[3 i + 2]` its flag (gelu's tanh
    form; a cast's target: 0 f32, 1 bf16, 2 f16; else 0); value `k` is
    input `k` for `k` below the input count, else the result of
    instruction `k` minus that count. The result is the last instruction's.
    Each op computes what its own kernel does, element by element: the
    fused result is the unfused one's, bit for bit.

    ```mlir
    %y = tessel.fused_elementwise %x, %u {ops = ["sigmoid", "mul", "mul"], args = array<i64: 0, -1, 0, 0, 2, 0, 3, 1, 0>} : (tensor<2x64xf32>, tensor<2x64xf32>) -> tensor<2x64xf32>
    %z = tessel.fused_elementwise %a, %b {ops = ["cast", "cast", "add", "cast"], args = array<i64: 0, -1, 0, 1, -1, 0, 2, 3, 0, 4, -1, 1>} : (tensor<8xbf16>, tensor<8xbf16>) -> tensor<8xbf16>
    ```

    **Constraints**

    * (C1) at least one instruction; `args` holds three per instruction;
      each instruction reads values defined before it.
    * (C2) each op is a unary or binary elementwise op of f32 without
      attributes (gelu's form is the flag), or a `cast` to f32, bf16 or
      f16.
    * (C3) each value has an element type: an input its own, a cast its
      target, any other op f32; only a cast reads a bf16 or f16 value.
    * (C4) the result is the last instruction's type; each input is f32,
      bf16 or f16 and is the result's shape, a single element, or the
      result's trailing dims (broadcast over the leading ones).
  }];
  let arguments = (ins Variadic<Tessel_FloatTensor>:$inputs, StrArrayAttr:$ops,
                       DenseI64ArrayAttr:$args);
  let results = (outs Tessel_FloatTensor:$result);
  let assemblyFormat = [{
    $inputs attr-dict `:` functional-type($inputs, results)
  }];
  let hasVerifier = 1;
}

def Tessel_LayerNormOp : Tessel_ComputeOp<"layer_norm", "buildNormRule",
                                          [InferTypeOpAdaptor, Tessel_FinitePreserving]>,
    Tessel_Instruction<62, "norm", [Tessel_RtAttr<"axis">, Tessel_RtAttr<"epsilon">]>,
    Tessel_GradientFrom<"buildLayerNormGradient"> {
  let summary = "Layer normalisation over the dims from `axis` to the last";
  let description = [{
    `(x - mean) / sqrt(var + epsilon) * scale + bias` over dims
    [axis, rank); `scale` and `bias` have the normalised dims' shape.

    ```mlir
    %1 = tessel.layer_norm %x, %g, %b axis = 2 {epsilon = 1.0e-05 : f32} : (tensor<2x32x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<2x32x64xf32>
    ```

    **Constraints**

    * (C1) `axis` is in [0, rank).
    * (C2) `scale` and `bias` have the shape of dims [axis, rank).
  }];
  let arguments = (ins Tessel_FloatTensor:$input, Tessel_FloatTensor:$scale,
                       Optional<Tessel_FloatTensor>:$bias, I64Attr:$axis,
                       DefaultValuedAttr<F32Attr, "1e-5f">:$epsilon);
  let results = (outs Tessel_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $scale (`,` $bias^)? `axis` `=` $axis attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Tessel_RmsNormOp : Tessel_ComputeOp<"rms_norm", "buildNormRule",
                                        [InferTypeOpAdaptor, Tessel_FinitePreserving]>,
    Tessel_Instruction<63, "norm", [Tessel_RtAttr<"axis">, Tessel_RtAttr<"epsilon">]>,
    Tessel_GradientFrom<"buildRmsNormGradient"> {
  let summary = "RMS normalisation over the dims from `axis` to the last";
  let description = [{
    `x / sqrt(mean(x^2) + epsilon) * scale` over dims [axis, rank).

    ```mlir
    %1 = tessel.rms_norm %x, %g axis = 2 {epsilon = 1.0e-06 : f32} : (tensor<2x32x64xf32>, tensor<64xf32>) -> tensor<2x32x64xf32>
    ```

    **Constraints**

    * (C1) `axis` is in [0, rank).
    * (C2) `scale` has the shape of dims [axis, rank).
  }];
  let arguments = (ins Tessel_FloatTensor:$input, Tessel_FloatTensor:$scale,
                       I64Attr:$axis,
                       DefaultValuedAttr<F32Attr, "1e-6f">:$epsilon);
  let results = (outs Tessel_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $scale `axis` `=` $axis attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Tessel_BatchNormOp : Tessel_ComputeOp<"batch_norm", "buildBatchNormRule",
                                          [InferTypeOpAdaptor]>,
    Tessel_Instruction<64, "batch_norm", [Tessel_RtAttr<"epsilon">]>,
    Tessel_GradientFrom<"buildBatchNormGradient"> {
  let summary = "Inference-mode batch normalisation over dim 1";
  let description = [{
    `(x - mean) / sqrt(var + epsilon) * scale + bias` with per-channel
    statistics; `x` is [N, C, ...].

    `batch_stats` says that `mean` and `variance` are the batch statistics
    of `x` itself: `mean = reduce_mean(x)` over every dim but 1 and
    `variance = batch_norm_variance(x, mean)` (or `reduce_mean((x -
    mean)^2)`), as `-tessel-batch-norm-train` builds them. The gradient rule then gives
    `x` the whole training-mode gradient (through the statistics) with
    `tessel.batch_norm_grad_sums` and `tessel.batch_norm_grad_input`, and
    the statistics none; without it, each operand gets its own gradient.
    The rule checks the claim and fails, naming the op, where the
    statistics are not built that way.

    ```mlir
    %y = tessel.batch_norm %x, %s, %b, %m, %v {epsilon = 1.0e-05 : f32} : (tensor<4x16x8x8xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<4x16x8x8xf32>
    %z = tessel.batch_norm %x, %s, %b, %bm, %bv {batch_stats, epsilon = 1.0e-05 : f32} : (tensor<4x16x8x8xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<4x16x8x8xf32>
    ```

    **Constraints**

    * (C1) `x` has rank at least 2.
    * (C2) scale, bias, mean and var are [C].
  }];
  let arguments = (ins Tessel_FloatTensor:$input, Tessel_FloatTensor:$scale,
                       Tessel_FloatTensor:$bias, Tessel_FloatTensor:$mean,
                       Tessel_FloatTensor:$variance,
                       DefaultValuedAttr<F32Attr, "1e-5f">:$epsilon,
                       UnitAttr:$batch_stats);
  let results = (outs Tessel_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $scale `,` $bias `,` $mean `,` $variance attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Tessel_BatchNormTrainOp
    : Tessel_ComputeOp<"batch_norm_train", "buildBatchNormTrainRule",
                       [AllTypesMatch<["input", "result"]>]> {
  let summary = "Training-mode batch normalisation over dim 1";
  let description = [{
    ONNX BatchNormalization with `training_mode=1`: `x` normalised with the
    batch's own per-channel mean and biased variance (over every dim but 1),
    then scaled and shifted; `running_mean` and `running_var` are the
    running statistics it updates, with ONNX's `momentum`
    (`running (momentum) + batch (1 - momentum)`, the variance unbiased as
    PyTorch keeps it). `-tessel-batch-norm-train` lowers it to reductions
    and a `tessel.batch_norm` before autodiff, and assigns the running
    statistics when training; it has no instruction of its own.

    ```mlir
    %y = tessel.batch_norm_train %x, %s, %b, %rm, %rv {epsilon = 1.0e-05 : f32, momentum = 0.9 : f32} : (tensor<4x16x8x8xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<4x16x8x8xf32>
    ```

    **Constraints**

    * (C1) `x` has rank at least 2; the result has its type.
    * (C2) scale, bias, running_mean and running_var are [C].
  }];
  let arguments = (ins Tessel_FloatTensor:$input, Tessel_FloatTensor:$scale,
                       Tessel_FloatTensor:$bias, Tessel_FloatTensor:$running_mean,
                       Tessel_FloatTensor:$running_var,
                       DefaultValuedAttr<F32Attr, "1e-5f">:$epsilon,
                       DefaultValuedAttr<F32Attr, "0.9f">:$momentum);
  let results = (outs Tessel_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $scale `,` $bias `,` $running_mean `,` $running_var attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

def Tessel_GatherOp : Tessel_ComputeOp<"gather", "buildGatherRule",
                                       [InferTypeOpAdaptor, Tessel_FinitePreserving]>,
    Tessel_Instruction<70, "gather", [Tessel_RtAttr<"axis">]>,
    Tessel_GradientFrom<"buildGatherGradient"> {
  let summary = "Gathers slices along one axis (embedding lookup)";
  let description = [{
    ONNX Gather: the result shape is `data[:axis] ++ indices ++ data[axis+1:]`.
    An embedding is a gather on axis 0 of the table.

    `padding_idx` (an embedding's, from torch.nn.Embedding's `padding_idx`:
    the importer reads it from torch.export's metadata) changes only the
    gradient: the positions whose index is `padding_idx` add nothing to
    the table's gradient, so that row never trains, as in PyTorch.

    ```mlir
    %e = tessel.gather %wte[%ids] axis = 0 : (tensor<50257x768xf32>, tensor<2x128xi64>) -> tensor<2x128x768xf32>
    ```

    **Constraints**

    * (C1) `axis` is in [0, rank(data)).
    * (C2) `padding_idx`, where given, is in [0, dim(data, axis)) and
      `axis` is 0.
  }];
  let arguments = (ins Tessel_AnyTensor:$data, Tessel_IndexTensor:$indices,
                       I64Attr:$axis, OptionalAttr<I64Attr>:$padding_idx);
  let results = (outs Tessel_AnyTensor:$result);
  let assemblyFormat = [{
    $data `[` $indices `]` `axis` `=` $axis attr-dict `:` functional-type(operands, results)
  }];
}

def Tessel_GatherElementsOp
    : Tessel_ComputeOp<"gather_elements", "buildGatherElementsRule",
                       [InferTypeOpAdaptor]>,
    Tessel_Instruction<78, "gather_elements", [Tessel_RtAttr<"axis">]>,
    Tessel_GradientFrom<"buildGatherElementsGradient"> {
  let summary = "Gathers elements along one axis (torch.gather)";
  let description = [{
    ONNX GatherElements: the result has the indices' shape, and
    `result[i0, .., ia, .., in] = data[i0, .., indices[i0, .., ia, .., in], .., in]`
    for `a = axis`. A negative index counts from the end of the axis; an
    index out of range is an error at run time naming it.

    ```mlir
    %y = tessel.gather_elements %x[%idx] axis = 1 : (tensor<2x5xf32>, tensor<2x3xi64>) -> tensor<2x3xf32>
    ```

    **Constraints**

    * (C1) `axis` is in [0, rank(data)).
    * (C2) `indices` has the rank of `data`, and no dim but `axis` larger
      than `data`'s.
  }];
  let arguments = (ins Tessel_AnyTensor:$data, Tessel_IndexTensor:$indices,
                       I64Attr:$axis);
  let results = (outs Tessel_AnyTensor:$result);
  let assemblyFormat = [{
    $data `[` $indices `]` `axis` `=` $axis attr-dict `:` functional-type(operands, results)
  }];
}

def Tessel_ReshapeOp : Tessel_ComputeOp<"reshape", "buildReshapeRule",
                                        [Tessel_DataMovement]>,
    Tessel_Instruction<71, "reshape">,
    Tessel_GradientFrom<"buildReshapeGradient"> {
  let summary = "Reinterprets a tensor with another static shape";
  let description = [{
    Row-major reshape. Its sharding rule uses compound factors: splitting
    [b, t, 768] into [b, t, 12, 64] makes the last operand dim the product
    of the head and head-dim factors, so sharding d means sharding heads.

    ```mlir
    %1 = tessel.reshape %0 : (tensor<2x32x64xf32>) -> tensor<2x32x4x16xf32>
    ```

    **Constraints**

    * (C1) operand and result have the same element type and element count.
  }];
  let arguments = (ins Tessel_AnyTensor:$input);
  let results = (outs Tessel_AnyTensor:$result);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Tessel_TransposeOp : Tessel_ComputeOp<"transpose", "buildTransposeRule",
                                          [InferTypeOpAdaptor, Tessel_DataMovement]>,
    Tessel_Instruction<72, "transpose", [Tessel_RtAttr<"perm">]>,
    Tessel_GradientFrom<"buildTransposeGradient"> {
  let summary = "Permutes dims";
  let description = [{
    `result.shape[i] = input.shape[perm[i]]`.

    ```mlir
    %1 = tessel.transpose %0 perm = [0, 2, 1, 3] : (tensor<2x32x4x16xf32>) -> tensor<2x4x32x16xf32>
    ```

    **Constraints**

    * (C1) `perm` is a permutation of [0, rank).
  }];
  let arguments = (ins Tessel_AnyTensor:$input, DenseI64ArrayAttr:$perm);
  let results = (outs Tessel_AnyTensor:$result);
  let assemblyFormat = "$input `perm` `=` $perm attr-dict `:` functional-type(operands, results)";
}

def Tessel_SliceOp : Tessel_ComputeOp<"slice", "buildSliceRule",
                                      [InferTypeOpAdaptor, Tessel_DataMovement]>,
    Tessel_Instruction<73, "slice", [Tessel_RtAttr<"starts">, Tessel_RtAttr<"ends", "$_op.getLimits()", "ints">, Tessel_RtAttr<"steps", "$_op.getStrides()", "ints">]>,
    Tessel_GradientFrom<"buildSliceGradient"> {
  let summary = "Static strided slice";
  let description = [{
    One `start`, `limit` and positive `stride` per dim, already normalised
    (0 <= start <= limit <= size).

    ```mlir
    %1 = tessel.slice %0 [0:2:1, 0:64:2] : (tensor<4x64xf32>) -> tensor<2x32xf32>
    ```

    **Constraints**

    * (C1) there is one start, limit and stride per dim.
    * (C2) 0 <= start <= limit <= size and stride >= 1.
  }];
  let arguments = (ins Tessel_AnyTensor:$input, DenseI64ArrayAttr:$starts,
                       DenseI64ArrayAttr:$limits, DenseI64ArrayAttr:$strides);
  let results = (outs Tessel_AnyTensor:$result);
  let assemblyFormat = [{
    $input custom<SliceRanges>($starts, $limits, $strides) attr-dict `:` functional-type(operands, results)
  }];
}

def Tessel_ConcatOp : Tessel_ComputeOp<"concat", "buildConcatRule",
                                       [InferTypeOpAdaptor, Tessel_DataMovement]>,
    Tessel_Instruction<74, "concat", [Tessel_RtAttr<"axis", "$_op.getDim()", "int">]>,
    Tessel_GradientFrom<"buildConcatGradient"> {
  let summary = "Concatenates tensors along one dim";
  let description = [{
    ```mlir
    %2 = tessel.concat %0, %1 dim = 1 : (tensor<2x3xf32>, tensor<2x5xf32>) -> tensor<2x8xf32>
    ```

    **Constraints**

    * (C1) at least one operand; all have the same rank and element type.
    * (C2) `dim` is in [0, rank).
    * (C3) every other dim has the same size in all operands.
  }];
  let arguments = (ins Variadic<Tessel_AnyTensor>:$inputs, I64Attr:$dim);
  let results = (outs Tessel_AnyTensor:$result);
  let assemblyFormat = "$inputs `dim` `=` $dim attr-dict `:` functional-type(operands, results)";
}

def Tessel_SplitOp : Tessel_ComputeOp<"split", "buildSplitRule",
                                      [InferTypeOpAdaptor, Tessel_DataMovement]>,
    Tessel_Instruction<75, "split", [Tessel_RtAttr<"axis", "$_op.getDim()", "int">, Tessel_RtAttr<"sizes">]>,
    Tessel_GradientFrom<"buildSplitGradient"> {
  let summary = "Splits a tensor into consecutive pieces along one dim";
  let description = [{
    ```mlir
    %q, %k, %v = tessel.split %0 dim = 2 sizes = [64, 64, 64] : (tensor<2x32x192xf32>) -> (tensor<2x32x64xf32>, tensor<2x32x64xf32>, tensor<2x32x64xf32>)
    ```

    **Constraints**

    * (C1) `dim` is in [0, rank).
    * (C2) one positive size per result, summing to the dim's size.
  }];
  let arguments = (ins Tessel_AnyTensor:$input, I64Attr:$dim,
                       DenseI64ArrayAttr:$sizes);
  let results = (outs Variadic<Tessel_AnyTensor>:$results);
  let assemblyFormat = [{
    $input `dim` `=` $dim `sizes` `=` $sizes attr-dict `:` functional-type(operands, results)
  }];
}

def Tessel_ExpandOp : Tessel_ComputeOp<"expand", "buildElementwiseRule",
                                       [Tessel_DataMovement]>,
    Tessel_Instruction<76, "expand">,
    Tessel_GradientFrom<"buildExpandGradient"> {
  let summary = "Broadcasts a tensor to a larger shape";
  let description = [{
    numpy broadcasting of the operand to the result shape.

    ```mlir
    %1 = tessel.expand %0 : (tensor<1x32xf32>) -> tensor<4x32xf32>
    ```

    **Constraints**

    * (C1) the operand broadcasts to the result shape; same element type.
  }];
  let arguments = (ins Tessel_AnyTensor:$input);
  let results = (outs Tessel_AnyTensor:$result);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Convolution and pooling (NCHW)
//===----------------------------------------------------------------------===//

def Tessel_Conv2DOp : Tessel_ComputeOp<"conv2d", "buildConvRule",
                                       [InferTypeOpAdaptor]>,
    Tessel_CostClassIs<"Convolution">,
    Tessel_Instruction<80, "conv", [Tessel_RtAttr<"strides">, Tessel_RtAttr<"pads">, Tessel_RtAttr<"dilations">, Tessel_RtAttr<"group">, Tessel_RtAttr<"bf16_operands">]>,
    Tessel_GradientFrom<"buildConv2DGradient"> {
  let summary = "2-D convolution, NCHW, weights OIHW";
  let description = [{
    `input` [N, C, H, W], `weight` [O, C/group, KH, KW], optional `bias` [O].
    `pads` are [top, left, bottom, right].

    ```mlir
    %y = tessel.conv2d %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>} : (tensor<4x3x32x32xf32>, tensor<16x3x3x3xf32>, tensor<16xf32>) -> tensor<4x16x32x32xf32>
    ```

    **Constraints**

    * (C1) `input` and `weight` have rank 4; `bias` is [O].
    * (C2) strides and dilations have 2 positive entries, pads 4 non-negative.
    * (C3) `group` divides C and O, and weight dim 1 is C / group.
    * (C4) the output spatial size is positive.

    `bf16_operands` (set by `-tessel-mark-bf16-operands`): `input` and
    `weight` hold bf16 values (f32 whose low 16 bits are zero), so a backend
    may convolve them in bf16 with f32 accumulation; `bias` is added in f32.
  }];
  let arguments = (ins Tessel_FloatTensor:$input, Tessel_FloatTensor:$weight,
                       Optional<Tessel_FloatTensor>:$bias,
                       DefaultValuedAttr<DenseI64ArrayAttr, "{1, 1}">:$strides,
                       DefaultValuedAttr<DenseI64ArrayAttr, "{0, 0, 0, 0}">:$pads,
                       DefaultValuedAttr<DenseI64ArrayAttr, "{1, 1}">:$dilations,
                       DefaultValuedAttr<I64Attr, "1">:$group,
                       UnitAttr:$bf16_operands);
  let results = (outs Tessel_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight (`,` $bias^)? attr-dict `:` functional-type(operands, results)
  }];
}

class Tessel_PoolOp<string mnemonic, string what>
    : Tessel_ComputeOp<mnemonic, "buildPoolRule", [InferTypeOpAdaptor]> {
  let summary = what # " pooling, NCHW";
  let description = [{
    ```mlir
    %y = tessel.}] # mnemonic # [{ %x {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<4x16x32x32xf32>) -> tensor<4x16x16x16xf32>
    ```

    **Constraints**

    * (C1) the input has rank 4.
    * (C2) kernel and strides have 2 positive entries, pads 4 non-negative.
    * (C3) the output spatial size is positive.
  }];
  let arguments = (ins Tessel_FloatTensor:$input, DenseI64ArrayAttr:$kernel,
                       DefaultValuedAttr<DenseI64ArrayAttr, "{1, 1}">:$strides,
                       DefaultValuedAttr<DenseI64ArrayAttr, "{0, 0, 0, 0}">:$pads,
                       UnitAttr:$count_include_pad, UnitAttr:$ceil_mode);
  let results = (outs Tessel_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
}

def Tessel_MaxPoolOp : Tessel_PoolOp<"max_pool", "Max">,
    Tessel_Instruction<81, "pool", [Tessel_RtAttr<"kernel">, Tessel_RtAttr<"strides">, Tessel_RtAttr<"pads">, Tessel_RtAttr<"count_include_pad">, Tessel_RtAttr<"ceil_mode">]>,
    Tessel_GradientFrom<"buildMaxPoolGradient">;
def Tessel_AvgPoolOp : Tessel_PoolOp<"avg_pool", "Average">,
    Tessel_Instruction<82, "pool", [Tessel_RtAttr<"kernel">, Tessel_RtAttr<"strides">, Tessel_RtAttr<"pads">, Tessel_RtAttr<"count_include_pad">, Tessel_RtAttr<"ceil_mode">]>,
    Tessel_GradientFrom<"buildAvgPoolGradient">;

def Tessel_GlobalAvgPoolOp : Tessel_ComputeOp<"global_avg_pool",
                                              "buildGlobalPoolRule",
                                              [InferTypeOpAdaptor], "Mean">,
    Tessel_Instruction<83, "global_pool">,
    Tessel_GradientFrom<"buildGlobalAvgPoolGradient"> {
  let summary = "Mean over the spatial dims, NCHW";
  let description = [{
    [N, C, H, W] -> [N, C, 1, 1]. Sharding a spatial dim makes the result
    partial (`mean`).

    ```mlir
    %y = tessel.global_avg_pool %x : (tensor<4x64x8x8xf32>) -> tensor<4x64x1x1xf32>
    ```

    **Constraints**

    * (C1) the input has rank at least 3.
  }];
  let arguments = (ins Tessel_FloatTensor:$input);
  let results = (outs Tessel_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
}

//===----------------------------------------------------------------------===//
// Backward of convolution and pooling (gradient rules emit them)
//===----------------------------------------------------------------------===//

def Tessel_Conv2DBackwardDataOp
    : Tessel_ComputeOp<"conv2d_backward_data", "buildConvBackwardDataRule">,
    Tessel_CostClassIs<"ConvolutionBackwardData">,
    Tessel_Instruction<110, "conv_backward", [Tessel_RtAttr<"strides">, Tessel_RtAttr<"pads">, Tessel_RtAttr<"dilations">, Tessel_RtAttr<"group">, Tessel_RtAttr<"bf16_operands">]>,
    Tessel_GradientFrom<"buildConv2DBackwardDataGradient"> {
  let summary = "The gradient of conv2d with respect to its input";
  let description = [{
    `grad` is the gradient of a conv2d's result [N, O, OH, OW], `weight` its
    weight [O, C/group, KH, KW]; the result is the gradient of its input
    [N, C, H, W] (the result type fixes H and W, which several input sizes
    give the same OH, OW for with strides above 1). The attributes are the
    forward conv2d's.

    ```mlir
    %dx = tessel.conv2d_backward_data %dy, %w {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>} : (tensor<4x16x16x16xf32>, tensor<16x3x3x3xf32>) -> tensor<4x3x32x32xf32>
    ```

    **Constraints**

    * (C1) `grad`, `weight` and the result have rank 4.
    * (C2) a conv2d of the result's shape with `weight` and these attributes
      gives `grad`'s shape.

    `bf16_operands` (set by `-tessel-mark-bf16-operands`): `grad` and
    `weight` hold bf16 values, so a backend may run it in bf16 with f32
    accumulation.

    It is also ONNX's ConvTranspose (the importer's), so it has a gradient
    of its own: linear in both operands, its `grad`'s gradient is the
    conv2d of the result's gradient with `weight`, its `weight`'s the
    conv2d_backward_weight of the result's gradient (as the conv's input)
    and `grad`.
  }];
  let arguments = (ins Tessel_FloatTensor:$grad, Tessel_FloatTensor:$weight,
                       DefaultValuedAttr<DenseI64ArrayAttr, "{1, 1}">:$strides,
                       DefaultValuedAttr<DenseI64ArrayAttr, "{0, 0, 0, 0}">:$pads,
                       DefaultValuedAttr<DenseI64ArrayAttr, "{1, 1}">:$dilations,
                       DefaultValuedAttr<I64Attr, "1">:$group,
                       UnitAttr:$bf16_operands);
  let results = (outs Tessel_FloatTensor:$result);
  let assemblyFormat = [{
    $grad `,` $weight attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Tessel_Conv2DBackwardWeightOp
    : Tessel_ComputeOp<"conv2d_backward_weight", "buildConvBackwardWeightRule">,
    Tessel_CostClassIs<"ConvolutionBackwardWeight">,
    Tessel_Instruction<111, "conv_backward", [Tessel_RtAttr<"strides">, Tessel_RtAttr<"pads">, Tessel_RtAttr<"dilations">, Tessel_RtAttr<"group">, Tessel_RtAttr<"bf16_operands">]> {
  let summary = "The gradient of conv2d with respect to its weight";
  let description = [{
    `input` is a conv2d's input [N, C, H, W], `grad` the gradient of its
    result [N, O, OH, OW]; the result is the gradient of its weight
    [O, C/group, KH, KW], summed over the batch (sharding N makes it
    partial). The attributes are the forward conv2d's.

    ```mlir
    %dw = tessel.conv2d_backward_weight %x, %dy {pads = array<i64: 1, 1, 1, 1>} : (tensor<4x3x32x32xf32>, tensor<4x16x32x32xf32>) -> tensor<16x3x3x3xf32>
    ```

    **Constraints**

    * (C1) `input`, `grad` and the result have rank 4.
    * (C2) a conv2d of `input` with a weight of the result's shape and these
      attributes gives `grad`'s shape.

    `bf16_operands` (set by `-tessel-mark-bf16-operands`): `input` and
    `grad` hold bf16 values, so a backend may run it in bf16 with f32
    accumulation.
  }];
  let arguments = (ins Tessel_FloatTensor:$input, Tessel_FloatTensor:$grad,
                       DefaultValuedAttr<DenseI64ArrayAttr, "{1, 1}">:$strides,
                       DefaultValuedAttr<DenseI64ArrayAttr, "{0, 0, 0, 0}">:$pads,
                       DefaultValuedAttr<DenseI64ArrayAttr, "{1, 1}">:$dilations,
                       DefaultValuedAttr<I64Attr, "1">:$group,
                       UnitAttr:$bf16_operands);
  let results = (outs Tessel_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $grad attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Tessel_MaxPoolBackwardOp
    : Tessel_ComputeOp<"max_pool_backward", "buildPoolBackwardRule">,
    Tessel_Instruction<112, "pool_backward", [Tessel_RtAttr<"kernel">, Tessel_RtAttr<"strides">, Tessel_RtAttr<"pads">, Tessel_RtAttr<"ceil_mode">]> {
  let summary = "The gradient of max_pool with respect to its input";
  let description = [{
    `input` is a max_pool's input [N, C, H, W], `grad` the gradient of its
    result; the result (`input`'s type) routes each window's gradient to its
    maximum (the first one where several are equal). The attributes are the
    forward max_pool's.

    ```mlir
    %dx = tessel.max_pool_backward %x, %dy {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<4x16x32x32xf32>, tensor<4x16x16x16xf32>) -> tensor<4x16x32x32xf32>
    ```

    **Constraints**

    * (C1) `input` has rank 4 and the result its type.
    * (C2) a max_pool of `input` with these attributes gives `grad`'s shape.
  }];
  let arguments = (ins Tessel_FloatTensor:$input, Tessel_FloatTensor:$grad,
                       DenseI64ArrayAttr:$kernel,
                       DefaultValuedAttr<DenseI64ArrayAttr, "{1, 1}">:$strides,
                       DefaultValuedAttr<DenseI64ArrayAttr, "{0, 0, 0, 0}">:$pads,
                       UnitAttr:$ceil_mode);
  let results = (outs Tessel_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $grad attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Tessel_AvgPoolBackwardOp
    : Tessel_ComputeOp<"avg_pool_backward", "buildPoolBackwardRule">,
    Tessel_Instruction<113, "pool_backward", [Tessel_RtAttr<"kernel">, Tessel_RtAttr<"strides">, Tessel_RtAttr<"pads">, Tessel_RtAttr<"count_include_pad">, Tessel_RtAttr<"ceil_mode">]> {
  let summary = "The gradient of avg_pool with respect to its input";
  let description = [{
    `grad` is the gradient of an avg_pool's result; the result, the gradient
    of its input [N, C, H, W] (the result type fixes H and W), spreads each
    window's gradient evenly over the window's counted elements. The
    attributes are the forward avg_pool's.

    ```mlir
    %dx = tessel.avg_pool_backward %dy {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<4x16x16x16xf32>) -> tensor<4x16x32x32xf32>
    ```

    **Constraints**

    * (C1) `grad` and the result have rank 4.
    * (C2) an avg_pool of the result's shape with these attributes gives
      `grad`'s shape.
  }];
  let arguments = (ins Tessel_FloatTensor:$grad, DenseI64ArrayAttr:$kernel,
                       DefaultValuedAttr<DenseI64ArrayAttr, "{1, 1}">:$strides,
                       DefaultValuedAttr<DenseI64ArrayAttr, "{0, 0, 0, 0}">:$pads,
                       UnitAttr:$count_include_pad, UnitAttr:$ceil_mode);
  let results = (outs Tessel_FloatTensor:$result);
  let assemblyFormat = "$grad attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}
include "dialects/tessel/TrainingOps.td"
include "dialects/tessel/ExtensionOps.td"
include "dialects/tessel/GeminiOps.td"

#endif // TESSEL_OPS_TD
