//===- TesselRuntime.td - how ops reach the runtime --------*- tablegen -*-===//
//
// The part of an op's single description that the runtime and the ONNX
// importer need, mixed into the op's ODS definition:
//
//   def Tessel_LeakyReluOp : Tessel_UnaryOp<"leaky_relu", ...>,
//       Tessel_Instruction<17, "unary", [Tessel_RtAttr<"alpha">]>,
//       Tessel_OnnxOneToOne<"LeakyRelu", 6, [Tessel_OnnxAttr<"alpha", "0.01">]>;
//
// tools/tessel-tblgen reads these and generates the runtime's op-kind list
// (runtime/artifact/generated/tessel/runtime/OpKinds.inc), the artifact schema's OpKind
// enum (runtime/artifact/generated/op_kind.proto), the exporter's attribute encoders and
// the importer's one-to-one rows. See docs/adding-an-op.md.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_RUNTIME_TD
#define TESSEL_RUNTIME_TD

// One attribute of an instruction in the artifact.
//   name:  its name in the artifact.
//   value: the C++ expression of its value over `$_op` (the op) and `$_ctx`
//          (the exporter: `$_ctx.groupOf(axes)` is a collective's group on
//          this rank); default: the getter of the op's attribute `name`.
//   type:  "int" | "ints" | "float" | "str"; default: from the ODS attribute.
class Tessel_RtAttr<string name, string value = "", string type = ""> {
  string rtName = name;
  string rtValue = value;
  string rtType = type;
}

// An op the runtime executes as one instruction.
//   kind:   its number in the artifact schema (never reused, never changed).
//   check:  the family of load-time checks (runtime/lib/Program.cpp) that
//           validates its operands, results and attributes: "unary", "binary",
//           "compare", "where", "matmul", "gemm", "reduce", "softmax", "norm",
//           "batch_norm", "gather", "reshape", "transpose", "slice", "concat",
//           "split", "expand", "conv", "pool", "global_pool", "collective".
//   attrs:  its attributes in the artifact.
//   name:   the instruction's name; default: the op's mnemonic.
//   enum:   the runtime's OpKind enumerator; default: the C++ class name
//           without its `Op` suffix.
class Tessel_Instruction<int kind, string check, list<Tessel_RtAttr> attrs = [],
                         string name = "", string enum = ""> {
  int rtKind = kind;
  string rtCheck = check;
  list<Tessel_RtAttr> rtAttrs = attrs;
  string rtName = name;
  string rtEnum = enum;
}

// An instruction the exporter writes that has no op of its own (e.g. `copy`).
class Tessel_RuntimeOnlyInstruction<int kind, string name, string enum,
                                    string check>
    : Tessel_Instruction<kind, check, [], name, enum>;

// An elementwise unary instruction whose math is one scalar function: the
// functor `scalar::<OpKind enumerator>` of runtime/include/tessel/runtime/
// ScalarOps.h, which both backends map over a buffer (no kernel of its own
// on either). The op's Tessel_RtAttr attributes, numbers only, become the
// functor's members of the same name in camel case.
//   types: the dtypes it takes: "Float" (f32; f64 on the CPU), "Numeric"
//          (f32, i64, i32; f64 on the CPU) or "Bool".
// tools/tessel-tblgen lists these ops in TESSEL_RUNTIME_UNARY_SCALAR_OPS
// (OpKinds.inc), from which the backends register their kernels.
class Tessel_ScalarFunction<string types = "Float"> {
  string scalarTypes = types;
}

// An elementwise binary instruction (numpy broadcasting) whose math is one
// scalar function of two values: the functor `scalar::<OpKind enumerator>`
// of runtime/include/tessel/runtime/BinaryOps.h, which both backends map
// over a broadcast plan (no kernel of its own on either).
//   types: "Float" (f32; f64 on the CPU), "Numeric" (f32, i64, i32; f64
//          on the CPU) or "Integer" (i64, i32); the program verifier takes
//          the operands' dtypes from it.
// tools/tessel-tblgen lists these ops in TESSEL_RUNTIME_BINARY_SCALAR_OPS
// (OpKinds.inc), from which the backends register their kernels.
class Tessel_BinaryScalarFunction<string types = "Numeric"> {
  string binaryScalarTypes = types;
}

// An ONNX attribute that maps onto an op attribute of the same meaning.
//   onnx:  the ONNX attribute's name; ir: the op attribute's (default: same).
//   dflt:  ONNX's default when the node omits it ("" : required).
class Tessel_OnnxAttr<string onnx, string dflt = "", string ir = ""> {
  string onnxName = onnx;
  string onnxDefault = dflt;
  string irName = !if(!empty(ir), onnx, ir);
}

// An ONNX op (domain "", `opType`, from opset `since`) that imports one-to-one
// into this op: the node's float inputs become its operands, its result has
// the first operand's type, and `attrs` carry over. Ops whose mapping is not
// one-to-one keep their row in lib/Import/OpImporters.cpp.
class Tessel_OnnxOneToOne<string opType, int since,
                          list<Tessel_OnnxAttr> attrs = []> {
  string onnxOpType = opType;
  int onnxSince = since;
  list<Tessel_OnnxAttr> onnxAttrs = attrs;
}

#endif // TESSEL_RUNTIME_TD
