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

#endif // TESSEL_ENUMS_TD
