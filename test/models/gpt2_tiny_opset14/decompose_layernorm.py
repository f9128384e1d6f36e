#!/usr/bin/env python3
"""Writes gpt2_tiny as PyTorch's exporter writes it at opset 14: ONNX has no
LayerNormalization before opset 17, so torch.onnx (1.13, symbolic_opset9's
native_layer_norm) emits each nn.LayerNorm as

    mean = ReduceMean(x, axes=[-1]);  d = Sub(x, mean)
    var  = ReduceMean(Pow(d, Constant 2.0), axes=[-1])
    y    = Add(Mul(Div(d, Sqrt(Add(var, Constant eps))), weight), bias)

(checked against torch.onnx.export(nn.LayerNorm(8), opset_version=14) with
torch 1.13.1: the same eleven nodes in this order, the node names
/<module>/ReduceMean ... as below). Every other node of GPT-2 is the same at
opsets 14 and 17, so the rest of the graph is kept.

    /usr/bin/python3 test/models/gpt2_tiny_opset14/decompose_layernorm.py \
        test/models/gpt2_tiny/model.onnx test/models/gpt2_tiny_opset14/model.onnx
"""
import sys

import numpy as np
import onnx
from onnx import helper, numpy_helper


def decompose(node):
    x, weight, bias = node.input
    (y,) = node.output
    eps = next(a.f for a in node.attribute if a.name == "epsilon")
    axis = next((a.i for a in node.attribute if a.name == "axis"), -1)
    assert axis == -1, "GPT-2 normalises the last dim"
    p = node.name.rsplit("/", 1)[0]  # /h.0/ln_1

    def out(op):
        return f"{p}/{op}_output_0"

    def const(name, value):
        return helper.make_node(
            "Constant", [], [out(name)], name=f"{p}/{name}",
            value=numpy_helper.from_array(np.array(value, dtype=np.float32), ""))

    return [
        helper.make_node("ReduceMean", [x], [out("ReduceMean")], name=f"{p}/ReduceMean", axes=[-1]),
        helper.make_node("Sub", [x, out("ReduceMean")], [out("Sub")], name=f"{p}/Sub"),
        const("Constant", 2.0),
        helper.make_node("Pow", [out("Sub"), out("Constant")], [out("Pow")], name=f"{p}/Pow"),
        helper.make_node("ReduceMean", [out("Pow")], [out("ReduceMean_1")], name=f"{p}/ReduceMean_1", axes=[-1]),
        const("Constant_1", eps),
        helper.make_node("Add", [out("ReduceMean_1"), out("Constant_1")], [out("Add")], name=f"{p}/Add"),
        helper.make_node("Sqrt", [out("Add")], [out("Sqrt")], name=f"{p}/Sqrt"),
        helper.make_node("Div", [out("Sub"), out("Sqrt")], [out("Div")], name=f"{p}/Div"),
        helper.make_node("Mul", [out("Div"), weight], [out("Mul")], name=f"{p}/Mul"),
        helper.make_node("Add", [out("Mul"), bias], [y], name=f"{p}/Add_1"),
    ]


def main(src, dst):
    model = onnx.load(src)
    nodes = []
    for n in model.graph.node:
        nodes.extend(decompose(n) if n.op_type == "LayerNormalization" else [n])
    del model.graph.node[:]
    model.graph.node.extend(nodes)
    for o in model.opset_import:
        if o.domain in ("", "ai.onnx"):
            o.version = 14
    onnx.checker.check_model(model)
    onnx.save(model, dst)


if __name__ == "__main__":
    main(*sys.argv[1:3])
