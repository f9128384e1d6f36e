#!/usr/bin/env python3
"""Moves the epsilon of every decomposed layer norm (the `Constant_1` node of
/<module>/ReduceMean ... /Add_1, as torch writes it at opset 14) into an
initializer, as exporters that store constants as initializers do. The norm
is then not recognised (its epsilon is no compile-time constant) and stays
decomposed: a plan's traffic with norms left as elementwise ops.

    eps_initializer.py IN.onnx OUT.onnx
"""
import sys

import onnx

m = onnx.load(sys.argv[1])
keep = []
for n in m.graph.node:
    if n.op_type == "Constant" and n.name.endswith("/Constant_1"):
        t = onnx.helper.get_attribute_value(n.attribute[0])
        t.name = n.output[0]
        m.graph.initializer.append(t)
    else:
        keep.append(n)
del m.graph.node[:]
m.graph.node.extend(keep)
onnx.save(m, sys.argv[2])
