#!/usr/bin/python3
"""Writes the hostile inputs of test/E2E/hostile-inputs.test (issue 31): each
one crashed a tool or was refused without naming what it refused.

  hostile_inputs.py CASE OUT

CASE:
  mesh-overflow      a plan whose mesh axes are each 2^32 and whose rule
                     splits a dim over both (their product is 2^64)
  deep-yaml N        a YAML plan with a rule's value nested N brackets deep
  deep-json N        the same as a JSON plan
  deep-block N       a YAML plan with N block sequences nested ("- - - ...")
  deep-safetensors N a safetensors file whose header nests N arrays deep
  const-of-shape     ONNX: ConstantOfShape of float[2^20, 2^20] (4 TiB) from
                     a constant shape, then used by an Add
  const-of-shape-run ONNX: ConstantOfShape of float[2^22 + 1] (one element
                     past the fold budget) of 2.5, plus an input X [1]
  extdata-wrap       ONNX: an external-data offset of 2^64 - 16
  extdata-past-end   ONNX: an offset of 2^63 - 8 and length 256, which end
                     past 2^63
  arena-tb           ONNX: Relu of float[2^18, 2^20] inputs (1 TiB each)
  arena-pb           ONNX: Relu of float[2^28, 2^20] (1 PiB each)
  arena-eb           ONNX: Relu of float[2^40, 2^20] (2^60 elements)
Needs Debian's python3-onnx for the ONNX cases (run with /usr/bin/python3).
"""
import json
import os
import struct
import sys


def deep(n):
    return "[" * n + "]" * n


def onnx_model(nodes, inputs, outputs, inits):
    from onnx import helper
    graph = helper.make_graph(nodes, "g", inputs, outputs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def main():
    case, out = sys.argv[1], sys.argv[-1]
    n = int(sys.argv[2]) if len(sys.argv) > 3 else 0
    if case == "mesh-overflow":
        text = ("mesh: {a: 4294967296, b: 4294967296}\n"
                "rules:\n"
                "  - {weight: '*', split: {dim: 0, axes: [a, b]}}\n")
    elif case == "deep-yaml":
        text = "rules:\n  - {weight: w, replicate: " + deep(n) + "}\n"
    elif case == "deep-json":
        text = '{"rules": [{"weight": "w", "replicate": ' + deep(n) + "}]}\n"
    elif case == "deep-block":
        text = "rules:\n  - weight: w\n    replicate:\n      " + "- " * n + "x\n"
    elif case == "deep-safetensors":
        header = ('{"__metadata__": {"x": ' + deep(n) + '}, "w": {"dtype": "F32", '
                  '"shape": [1], "data_offsets": [0, 4]}}').encode()
        with open(out, "wb") as f:
            f.write(struct.pack("<Q", len(header)) + header + b"\0" * 4)
        return 0
    else:
        import onnx
        from onnx import TensorProto, helper
        f32 = TensorProto.FLOAT
        if case == "const-of-shape":
            shape = helper.make_tensor("S", TensorProto.INT64, [2], [2 ** 20, 2 ** 20])
            one = helper.make_tensor("one", f32, [1], [1.0])
            model = onnx_model(
                [helper.make_node("ConstantOfShape", ["S"], ["C"], name="/fill",
                                  value=helper.make_tensor("v", f32, [1], [2.0])),
                 helper.make_node("Add", ["C", "one"], ["Y"], name="/add")],
                [], [helper.make_tensor_value_info("Y", f32, [2 ** 20, 2 ** 20])],
                [shape, one])
        elif case == "const-of-shape-run":
            n = 2 ** 22 + 1
            model = onnx_model(
                [helper.make_node("ConstantOfShape", ["S"], ["C"], name="/fill",
                                  value=helper.make_tensor("v", f32, [1], [2.5])),
                 helper.make_node("Add", ["C", "X"], ["Y"], name="/add")],
                [helper.make_tensor_value_info("X", f32, [1])],
                [helper.make_tensor_value_info("Y", f32, [n])],
                [helper.make_tensor("S", TensorProto.INT64, [1], [n])])
        elif case in ("extdata-wrap", "extdata-past-end"):
            w = helper.make_tensor("W", f32, [8, 8], [0.0] * 64)
            w.ClearField("float_data")
            w.data_location = TensorProto.EXTERNAL
            offset = 2 ** 64 - 16 if case == "extdata-wrap" else 2 ** 63 - 8
            for k, v in (("location", "w.bin"), ("offset", str(offset)),
                         ("length", "256")):
                e = w.external_data.add()
                e.key, e.value = k, v
            with open(os.path.join(os.path.dirname(os.path.abspath(out)), "w.bin"), "wb") as f:
                f.write(b"\0" * 256)
            model = onnx_model(
                [helper.make_node("MatMul", ["X", "W"], ["Y"], name="/mm")],
                [helper.make_tensor_value_info("X", f32, [2, 8])],
                [helper.make_tensor_value_info("Y", f32, [2, 8])], [w])
        elif case in ("arena-tb", "arena-pb", "arena-eb"):
            rows = {"arena-tb": 2 ** 18, "arena-pb": 2 ** 28, "arena-eb": 2 ** 40}[case]
            model = onnx_model(
                [helper.make_node("Relu", ["X"], ["Y"], name="/relu")],
                [helper.make_tensor_value_info("X", f32, [rows, 2 ** 20])],
                [helper.make_tensor_value_info("Y", f32, [rows, 2 ** 20])], [])
        else:
            raise SystemExit("unknown case " + case)
        with open(out, "wb") as f:
            f.write(model.SerializeToString())
        return 0
    with open(out, "w") as f:
        f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
