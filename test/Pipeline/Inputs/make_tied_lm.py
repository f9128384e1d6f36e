#!/usr/bin/python3
"""make_tied_lm.py OUT_DIR

A tiny causal LM whose head reads its embedding directly, as
Gemm(h, E, transB=1) (no transpose between): OUT_DIR/model.onnx (input_ids
[2, 16] -> logits [2, 16, 32]) and OUT_DIR/batches.npy (4 steps of
[2, 17] tokens, seeded)."""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

V, D, B, T = 32, 8, 2, 16


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(0)
    inits = [
        numpy_helper.from_array(rng.normal(0, 0.5, (V, D)).astype(np.float32), "wte"),
        numpy_helper.from_array(rng.normal(0, 0.5, (D, D)).astype(np.float32), "w1"),
        numpy_helper.from_array(np.array([B * T, D], np.int64), "flat"),
        numpy_helper.from_array(np.array([B, T, V], np.int64), "unflat"),
    ]
    nodes = [
        helper.make_node("Gather", ["wte", "input_ids"], ["emb"], name="/embed/Gather"),
        helper.make_node("MatMul", ["emb", "w1"], ["mm"], name="/block/MatMul"),
        helper.make_node("Tanh", ["mm"], ["h"], name="/block/Tanh"),
        helper.make_node("Reshape", ["h", "flat"], ["h2"], name="/head/Reshape"),
        helper.make_node("Gemm", ["h2", "wte"], ["l2"], name="/head/Gemm", transB=1),
        helper.make_node("Reshape", ["l2", "unflat"], ["logits"], name="/head/Reshape_1"),
    ]
    graph = helper.make_graph(
        nodes, "tied_lm",
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64, [B, T])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [B, T, V])],
        inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, os.path.join(out, "model.onnx"))
    np.save(os.path.join(out, "batches.npy"),
            rng.integers(0, V, (4, B, T + 1)).astype(np.int64))


if __name__ == "__main__":
    main()
