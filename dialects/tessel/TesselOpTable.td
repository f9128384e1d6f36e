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
// Waits for the asynchronous all_reduce (a gradient bucket's) or all_gather
// (a prefetched parameter's, FSDP) that reads operand 0 and writes operand
// 1; written before the first use of its result. No results.
def Tessel_WaitInstruction
    : Tessel_RuntimeOnlyInstruction<130, "wait", "Wait", "wait">;
