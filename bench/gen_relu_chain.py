#!/usr/bin/env python3
"""Writes an ONNX model that is a chain of N Relu nodes over a [4, 64] input.

    gen_relu_chain.py N OUT.onnx

Each node's output is a fresh buffer that dies at the next node, so the
artifact has N + 1 arena buffers: the buffer planner's worst case for an
all-pairs check and its easiest case for packing (two buffers live at once).
Used by bench/run-compile-scaling. Needs Debian's python3-onnx.
"""
import sys

import onnx
from onnx import TensorProto, helper


def main():
    n, out = int(sys.argv[1]), sys.argv[2]
    names = ["x"] + ["r%d" % i for i in range(1, n)] + ["y"]
    nodes = [helper.make_node("Relu", [names[i]], [names[i + 1]],
                              name="/relu_%d" % i) for i in range(n)]
    graph = helper.make_graph(
        nodes, "relu_chain",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 64])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 64])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
