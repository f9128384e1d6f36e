"""Writes MODEL's copy whose initializers keep their type and shape and hold
no values: the model as shapes only.  usage: strip_data.py IN.onnx OUT.onnx"""
import sys

import onnx

model = onnx.load(sys.argv[1])
for t in model.graph.initializer:
    for field in ("raw_data", "float_data", "double_data", "int32_data",
                  "int64_data", "uint64_data", "string_data"):
        t.ClearField(field)
onnx.save(model, sys.argv[2])
