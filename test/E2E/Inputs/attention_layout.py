#!/usr/bin/env python3
"""Writes a self-attention block in PyTorch's nn.MultiheadAttention layout
(batch_first=False inside: [seq, batch, d], heads folded as batch*heads,
[seq*batch, d] around out_proj) as ONNX, an input, and the numpy reference.

    attention_layout.py OUTDIR

OUTDIR/model.onnx takes x [batch, seq, d] (batch first, so the built-in dp
plan splits the batch) and returns y = LayerNorm(x + MHA(x)) [batch, seq, d].
OUTDIR/x.npy is the input, OUTDIR/ref.npy the float64 numpy reference.
"""
import os
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper, save

B, S, D, H = 4, 5, 8, 2
HD = D // H


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(12)
    x = rng.standard_normal((B, S, D)).astype(np.float32)
    w_in = (rng.standard_normal((D, 3 * D)) / np.sqrt(D)).astype(np.float32)
    b_in = (0.1 * rng.standard_normal(3 * D)).astype(np.float32)
    w_out = (rng.standard_normal((D, D)) / np.sqrt(D)).astype(np.float32)
    b_out = (0.1 * rng.standard_normal(D)).astype(np.float32)
    gamma = (1 + 0.1 * rng.standard_normal(D)).astype(np.float32)
    beta = (0.1 * rng.standard_normal(D)).astype(np.float32)

    def i64(name, values):
        return numpy_helper.from_array(np.array(values, dtype=np.int64), name)

    inits = [numpy_helper.from_array(a, n) for a, n in
             [(w_in, "in_proj_weight"), (b_in, "in_proj_bias"),
              (w_out, "out_proj_weight"), (b_out, "out_proj_bias"),
              (gamma, "norm_weight"), (beta, "norm_bias"),
              (np.array(1 / np.sqrt(HD), np.float32), "scale")]]
    inits += [i64("heads_shape", [S, B * H, HD]), i64("flat_shape", [S * B, D]),
              i64("sbd_shape", [S, B, D]), i64("split", [D, D, D])]
    n = helper.make_node
    nodes = [
        n("Transpose", ["x"], ["xt"], perm=[1, 0, 2]),            # [S,B,D]
        n("MatMul", ["xt", "in_proj_weight"], ["qkv0"]),
        n("Add", ["qkv0", "in_proj_bias"], ["qkv"]),              # [S,B,3D]
        n("Split", ["qkv", "split"], ["q0", "k0", "v0"], axis=2),
    ]
    for t in "qkv":
        nodes += [n("Reshape", [t + "0", "heads_shape"], [t + "1"]),  # [S,B*H,HD]
                  n("Transpose", [t + "1"], [t + "h"], perm=[1, 0, 2])]  # [B*H,S,HD]
    nodes += [
        n("Transpose", ["kh"], ["kt"], perm=[0, 2, 1]),
        n("MatMul", ["qh", "kt"], ["s0"]),
        n("Mul", ["s0", "scale"], ["s"]),
        n("Softmax", ["s"], ["p"], axis=-1),
        n("MatMul", ["p", "vh"], ["o0"]),                          # [B*H,S,HD]
        n("Transpose", ["o0"], ["o1"], perm=[1, 0, 2]),            # [S,B*H,HD]
        n("Reshape", ["o1", "flat_shape"], ["o2"]),                # [S*B,D]
        n("MatMul", ["o2", "out_proj_weight"], ["o3"]),
        n("Add", ["o3", "out_proj_bias"], ["o4"]),
        n("Reshape", ["o4", "sbd_shape"], ["o5"]),                 # [S,B,D]
        n("Add", ["xt", "o5"], ["r"]),
        n("LayerNormalization", ["r", "norm_weight", "norm_bias"], ["ln"],
          axis=-1, epsilon=1e-5),
        n("Transpose", ["ln"], ["y"], perm=[1, 0, 2]),             # [B,S,D]
    ]
    graph = helper.make_graph(
        nodes, "attention_layout",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [B, S, D])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [B, S, D])],
        inits)
    save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]),
         os.path.join(out, "model.onnx"))
    np.save(os.path.join(out, "x.npy"), x)

    # The reference, per batch and head, in float64: no reshape involved.
    f = np.float64
    ref = np.empty((B, S, D))
    for b in range(B):
        xb = x[b].astype(f)                                       # [S,D]
        qkv = xb @ w_in.astype(f) + b_in.astype(f)
        q, k, v = qkv[:, :D], qkv[:, D:2 * D], qkv[:, 2 * D:]
        heads = []
        for h in range(H):
            sl = slice(h * HD, (h + 1) * HD)
            s = q[:, sl] @ k[:, sl].T / np.sqrt(HD)
            p = np.exp(s - s.max(-1, keepdims=True))
            p /= p.sum(-1, keepdims=True)
            heads.append(p @ v[:, sl])
        o = np.concatenate(heads, axis=1) @ w_out.astype(f) + b_out.astype(f)
        r = xb + o
        mu = r.mean(-1, keepdims=True)
        var = ((r - mu) ** 2).mean(-1, keepdims=True)
        ref[b] = (r - mu) / np.sqrt(var + 1e-5) * gamma.astype(f) + beta.astype(f)
    np.save(os.path.join(out, "ref.npy"), ref.astype(np.float32))


if __name__ == "__main__":
    main()
