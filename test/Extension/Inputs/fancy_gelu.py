#!/usr/bin/python3
"""The example plugin's FancyGelu (examples/plugins), checked without it.

  fancy_gelu.py model OUT_DIR
      OUT_DIR/model.onnx: y = FancyGelu(x @ W) (com.example, alpha 1.5) on
      x [4, 8], W [8, 6]; x.npy, targets.npy, and x1.npy / targets1.npy
      (the same with a leading dim of 1: one training step's --data row).
  fancy_gelu.py bad OUT_DIR
      OUT_DIR/beta.onnx (FancyGelu with an attribute it does not take) and
      OUT_DIR/two.onnx (FancyGelu on two inputs).
  fancy_gelu.py output OUT_DIR Y.npy
      Y against numpy's x @ W * sigmoid(1.5 x @ W).
  fancy_gelu.py grads OUT_DIR GRADS.safetensors
      the gradient of the mse loss mean((y - targets)^2) with respect to W
      against central differences in float64 (no plugin code involved).
"""
import os
import sys

import numpy as np
from safetensors_np import read_safetensors

ALPHA = 1.5


def fancy_gelu(z):
    return z / (1.0 + np.exp(-ALPHA * z))


def data(out):
    rng = np.random.default_rng(7)
    x = rng.standard_normal((4, 8)).astype(np.float32)
    w = (rng.standard_normal((8, 6)) * 0.5).astype(np.float32)
    t = rng.standard_normal((4, 6)).astype(np.float32)
    return x, w, t


def model(out):
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    x, w, t = data(out)
    nodes = [
        helper.make_node("MatMul", ["x", "W"], ["z"], name="matmul"),
        helper.make_node("FancyGelu", ["z"], ["y"], name="fancy",
                         domain="com.example", alpha=ALPHA),
    ]
    graph = helper.make_graph(
        nodes, "fancy",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 6])],
        [numpy_helper.from_array(w, "W")])
    m = helper.make_model(graph, opset_imports=[
        helper.make_opsetid("", 17), helper.make_opsetid("com.example", 1)])
    m.ir_version = 8
    onnx.save(m, os.path.join(out, "model.onnx"))
    np.save(os.path.join(out, "x.npy"), x)
    np.save(os.path.join(out, "targets.npy"), t)
    np.save(os.path.join(out, "x1.npy"), x[None])
    np.save(os.path.join(out, "targets1.npy"), t[None])


def bad(out):
    import onnx
    from onnx import TensorProto, helper

    def save(name, node, inputs):
        graph = helper.make_graph(
            [node], name,
            [helper.make_tensor_value_info(i, TensorProto.FLOAT, [4, 6])
             for i in inputs],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 6])])
        m = helper.make_model(graph, opset_imports=[
            helper.make_opsetid("", 17), helper.make_opsetid("com.example", 1)])
        m.ir_version = 8
        onnx.save(m, os.path.join(out, name + ".onnx"))

    save("beta", helper.make_node("FancyGelu", ["z"], ["y"], name="fancy",
                                  domain="com.example", beta=2.0), ["z"])
    save("two", helper.make_node("FancyGelu", ["a", "b"], ["y"], name="fancy",
                                 domain="com.example"), ["a", "b"])


def output(out, path):
    x, w, _ = data(out)
    want = fancy_gelu(x.astype(np.float64) @ w.astype(np.float64))
    got = np.load(path)
    err = np.max(np.abs(got - want))
    print("max |y - numpy| = %.3g" % err)
    if got.shape != want.shape or not err < 1e-5:
        sys.exit("FancyGelu output differs from numpy's")


def grads(out, path):
    x, w, t = data(out)
    x, w, t = x.astype(np.float64), w.astype(np.float64), t.astype(np.float64)

    def loss(w):
        return np.mean((fancy_gelu(x @ w) - t) ** 2)

    h = 1e-6
    want = np.zeros_like(w)
    for i in np.ndindex(*w.shape):
        d = np.zeros_like(w)
        d[i] = h
        want[i] = (loss(w + d) - loss(w - d)) / (2 * h)
    got = read_safetensors(path)["W"]
    err = np.max(np.abs(got - want)) / np.max(np.abs(want))
    print("max |dW - finite differences| / max |dW| = %.3g" % err)
    if got.shape != want.shape or not err < 1e-4:
        sys.exit("the gradient of W differs from finite differences")


if __name__ == "__main__":
    cmd, out = sys.argv[1:3]
    if cmd == "model":
        model(out)
    elif cmd == "bad":
        bad(out)
    elif cmd == "output":
        output(out, sys.argv[3])
    elif cmd == "grads":
        grads(out, sys.argv[3])
