#!/usr/bin/env python3
"""Writes the two models of test/Training/folded-row.test (needs onnx >= 1.16
for metadata_props on values; python3 -m venv v && v/bin/pip install onnx
numpy):

  unfolded.onnx  logits = (tok.weight[ids] + tt.weight[zeros]) @ head.weight:
                 the token-type embedding gathered at constant indices (row 0
                 at every position), as PyTorch computes BERT's embeddings
  folded.onnx    the same with tt.weight[zeros] folded into a constant C
                 [1, 4, 6] (every row tt.weight[0]) whose metadata says it was
                 folded from tt.weight, as torch.onnx.export's optimizer
                 writes it: pkg.onnxscript.optimizer.folded_from
  batches.npy    i64 [4 steps, 2, 5]: step k trains on [:, :-1] -> [:, 1:]

    python make.py [OUT_DIR]
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(0)
V, S, H, B = 8, 4, 6, 2
tok = rng.normal(0, 0.5, (V, H)).astype(np.float32)
tt = rng.normal(0, 0.5, (2, H)).astype(np.float32)
head = rng.normal(0, 0.5, (H, V)).astype(np.float32)


def model(folded):
    inits = [numpy_helper.from_array(tok, "tok.weight"),
             numpy_helper.from_array(head, "head.weight")]
    nodes = [helper.make_node("Gather", ["tok.weight", "input_ids"], ["e"], name="tok_gather")]
    infos = []
    if folded:
        inits.append(numpy_helper.from_array(np.broadcast_to(tt[0], (1, S, H)).copy(), "C"))
        info = helper.make_tensor_value_info("C", TensorProto.FLOAT, [1, S, H])
        info.metadata_props.add(key="pkg.onnxscript.optimizer.folded_from",
                                value="['tt.weight', 'token_type_ids', 'expand']")
        infos.append(info)
        nodes.append(helper.make_node("Add", ["e", "C"], ["h"], name="add_tt"))
    else:
        inits.append(numpy_helper.from_array(tt, "tt.weight"))
        inits.append(numpy_helper.from_array(np.zeros((1, S), np.int64), "token_type_ids"))
        nodes.append(helper.make_node("Gather", ["tt.weight", "token_type_ids"], ["t"], name="tt_gather"))
        nodes.append(helper.make_node("Add", ["e", "t"], ["h"], name="add_tt"))
    nodes.append(helper.make_node("MatMul", ["h", "head.weight"], ["logits"], name="head"))
    g = helper.make_graph(nodes, "folded_row" if folded else "unfolded_row",
                          [helper.make_tensor_value_info("input_ids", TensorProto.INT64, [B, S])],
                          [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [B, S, V])],
                          inits, value_info=infos)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    return m


onnx.save(model(True), os.path.join(out, "folded.onnx"))
onnx.save(model(False), os.path.join(out, "unfolded.onnx"))
np.save(os.path.join(out, "batches.npy"), rng.integers(0, V, (4, B, S + 1)).astype(np.int64))
