"""Writes the tensors of affine.mlir as the initializers of an ONNX model
whose graph has nothing to do with them (an Identity), its input x, and
numpy's x @ w + b. Usage: write_onnx_weights.py OUT.onnx X.npy"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out, x_path = sys.argv[1], sys.argv[2]
rng = np.random.default_rng(11)
w = rng.standard_normal((3, 4)).astype(np.float32)
b = rng.standard_normal(4).astype(np.float32)
graph = helper.make_graph(
    [helper.make_node("Identity", ["other"], ["same"], name="unrelated")],
    "weights_only",
    [helper.make_tensor_value_info("other", TensorProto.FLOAT, [7])],
    [helper.make_tensor_value_info("same", TensorProto.FLOAT, [7])],
    initializer=[numpy_helper.from_array(w, "layer.w"),
                 numpy_helper.from_array(b, "layer.b")])
onnx.save(helper.make_model(graph), out)
x = rng.standard_normal((2, 3)).astype(np.float32)
np.save(x_path, x)
np.save(out + ".ref.npy", x @ w + b)
