#!/usr/bin/python3
"""Writes an ONNX model whose dims promise more data than it holds, or more
elements than 64 bits count (test/Import/oversized-tensors.test).

  oversized_model.py CASE OUT.onnx

CASE: short-typed    float initializer [2^40] holding 1 float
      overflow-input graph input float [2^32, 2^32, 4]
      bytes-overflow float initializer [2^61] (elements fit, bytes do not)
      const-of-shape ConstantOfShape of [2^32, 2^32, 8]
      expand-overflow Expand of a [1] input to [2^32, 2^32, 8]
"""
import sys

import onnx
from onnx import TensorProto, helper


def main():
    case, out = sys.argv[1], sys.argv[2]
    inits, nodes = [], []
    x = helper.make_tensor_value_info("X", TensorProto.FLOAT, [2, 3])
    y = helper.make_tensor_value_info("Y", TensorProto.FLOAT, [2, 3])
    if case in ("const-of-shape", "expand-overflow"):
        y = helper.make_tensor_value_info("Y", TensorProto.FLOAT, [2 ** 32, 2 ** 32, 8])
    if case == "short-typed":
        t = helper.make_tensor("W", TensorProto.FLOAT, [1], [1.0])
        del t.dims[:]
        t.dims.append(2 ** 40)
        t.float_data.append(2.0)
        inits.append(t)
        nodes.append(helper.make_node("Add", ["X", "W"], ["Y"]))
    elif case == "overflow-input":
        x = helper.make_tensor_value_info("X", TensorProto.FLOAT, [2 ** 32, 2 ** 32, 4])
        nodes.append(helper.make_node("Relu", ["X"], ["Y"]))
    elif case == "bytes-overflow":
        t = helper.make_tensor("W", TensorProto.FLOAT, [1], [1.0])
        del t.dims[:]
        t.dims.append(2 ** 61)
        t.ClearField("float_data")
        t.raw_data = b"\0" * 4
        inits.append(t)
        nodes.append(helper.make_node("Add", ["X", "W"], ["Y"]))
    elif case == "const-of-shape":
        inits.append(helper.make_tensor("S", TensorProto.INT64, [3], [2 ** 32, 2 ** 32, 8]))
        nodes.append(helper.make_node("ConstantOfShape", ["S"], ["Y"], name="/fill"))
    elif case == "expand-overflow":
        inits.append(helper.make_tensor("S", TensorProto.INT64, [3], [2 ** 32, 2 ** 32, 8]))
        x = helper.make_tensor_value_info("X", TensorProto.FLOAT, [1])
        nodes.append(helper.make_node("Expand", ["X", "S"], ["Y"], name="/expand"))
    else:
        raise SystemExit("unknown case " + case)
    graph = helper.make_graph(nodes, "g", [x], [y], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    with open(out, "wb") as f:
        f.write(model.SerializeToString())
    return 0


if __name__ == "__main__":
    sys.exit(main())
