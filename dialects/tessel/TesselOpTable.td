//===- TesselOpTable.td - every op, for tessel-tblgen -------*- tablegen -*-===//
//
// The root that tools/tessel-tblgen reads: every op definition of the
// dialect, with their Tessel_Instruction / Tessel_OnnxOneToOne mixins.
//
//===----------------------------------------------------------------------===//

include "dialects/tessel/TesselOps.td"
include "dialects/tessel/CollectiveOps.td"

// Instructions the exporter writes that have no op of their own.
def Tessel_CopyInstruction
    : Tessel_RuntimeOnlyInstruction<77, "copy", "Copy", "reshape">;
