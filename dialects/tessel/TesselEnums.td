//===- TesselEnums.td - tessel enums -----------------------*- tablegen -*-===//

#ifndef TESSEL_ENUMS_TD
#define TESSEL_ENUMS_TD

include "mlir/IR/EnumAttr.td"

def Tessel_ReductionKind : I32EnumAttr<"ReductionKind",
    "the reduction a partial value or a collective performs", [
      I32EnumAttrCase<"Sum", 0, "sum">,
      I32EnumAttrCase<"Max", 1, "max">,
      I32EnumAttrCase<"Min", 2, "min">,
      I32EnumAttrCase<"Mean", 3, "mean">
    ]> {
  let cppNamespace = "::mlir::tessel";
}

def Tessel_ComparePredicate : I32EnumAttr<"ComparePredicate",
    "an elementwise comparison", [
      I32EnumAttrCase<"EQ", 0, "eq">,
      I32EnumAttrCase<"NE", 1, "ne">,
      I32EnumAttrCase<"LT", 2, "lt">,
      I32EnumAttrCase<"LE", 3, "le">,
      I32EnumAttrCase<"GT", 4, "gt">,
      I32EnumAttrCase<"GE", 5, "ge">
    ]> {
  let cppNamespace = "::mlir::tessel";
}

def Tessel_CostClass : I32EnumAttr<"CostClass",
    "how the cost model counts an op's FLOPs (CostOpInterface)", [
      // One per result element: the default of ops without the interface.
      I32EnumAttrCase<"PerElement", 0, "per_element">,
      // 2 x result elements x the last dim of operand 0 (matmul, gemm).
      I32EnumAttrCase<"Contraction", 1, "contraction">,
      // 2 x elements of output y x weight w's elements per output channel,
      // with (y, w) = (result 0, operand 1) for the forward, (operand 0,
      // operand 1) for the input gradient, (operand 1, result 0) for the
      // weight gradient.
      I32EnumAttrCase<"Convolution", 2, "convolution">,
      I32EnumAttrCase<"ConvolutionBackwardData", 3, "convolution_backward_data">,
      I32EnumAttrCase<"ConvolutionBackwardWeight", 4,
                      "convolution_backward_weight">,
      // tessel.attention: 2 x (q's elements / D) x T x (D + Dv), its two
      // products; tessel.attention_grad: the same x (3 D + 2 Dv) / (D + Dv),
      // its five (the scores recomputed, dp, dv, dq, dkt).
      I32EnumAttrCase<"Attention", 5, "attention">,
      I32EnumAttrCase<"AttentionBackward", 6, "attention_backward">
    ]> {
  let cppNamespace = "::mlir::tessel";
}

#endif // TESSEL_ENUMS_TD
