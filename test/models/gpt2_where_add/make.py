#!/usr/bin/env python3
"""transformers 4.26 to 4.4x's eager GPT-2 attention given an attention_mask
(GPT-Neo's and GPT-J's alike): where(causal, w, finfo.min) plus the additive
padding mask (1 - attention_mask) * finfo.min, then softmax. Left padding:
batch 1's first 3 tokens are padding, so its first query rows keep only
padded keys, every score of theirs rounds to finfo.min, and PyTorch still
gives their kept keys a gradient (tessel.attention's keep operand).

Exported by torch 2.15 twice: ts.onnx (dynamo=False, opset 17, the exporter
of that time, in training mode) and dyn.onnx (the default exporter). train/: the inputs, the
output, per-step MSE targets, PyTorch's gradients of the first step's loss
(ts/grads.npz, dyn/grads.npz: by each export's names) and its SGD (lr 0.1)
trajectory (train.json).
Run from this directory with a venv that has torch and onnxscript.
"""
import json
import os

import numpy as np
import torch

torch.manual_seed(0)


class OldGpt2(torch.nn.Module):
    """bench/check_torch_exports.py's gpt2_where_add builds it too."""

    def __init__(self, d=32, heads=4, layers=2, vocab=50, n=16):
        super().__init__()
        self.heads = heads
        # No position embedding: the exporters fold wpe(arange(s)) into a
        # constant [s, d] table, whose gradient grads.npz could not name.
        self.wte = torch.nn.Embedding(vocab, d)
        self.ln = torch.nn.ModuleList(torch.nn.LayerNorm(d) for _ in range(layers))
        self.qkv = torch.nn.ModuleList(torch.nn.Linear(d, 3 * d) for _ in range(layers))
        self.proj = torch.nn.ModuleList(torch.nn.Linear(d, d) for _ in range(layers))
        self.register_buffer("bias", torch.tril(torch.ones(n, n, dtype=torch.bool)).view(1, 1, n, n),
                             persistent=False)

    def forward(self, input_ids, attention_mask):
        b, s = input_ids.shape
        x = self.wte(input_ids)
        low = torch.finfo(x.dtype).min
        pad = (1.0 - attention_mask[:, None, None, :].to(x.dtype)) * low
        for ln, qkv, proj in zip(self.ln, self.qkv, self.proj):
            q, k, v = qkv(ln(x)).split(x.size(-1), dim=2)
            q, k, v = (t.view(b, s, self.heads, -1).transpose(1, 2) for t in (q, k, v))
            w = torch.matmul(q, k.transpose(-1, -2)) / torch.full([], v.size(-1) ** 0.5)
            w = torch.where(self.bias[:, :, :s, :s], w, torch.full([], low, dtype=x.dtype))
            w = torch.softmax(w + pad, dim=-1)
            o = torch.matmul(w, v).transpose(1, 2).reshape(b, s, -1)
            x = x + proj(o)
        return x


def main():
    m = OldGpt2()
    ids = torch.randint(0, 50, (2, 8))
    mask = torch.ones(2, 8, dtype=torch.long)
    mask[1, :3] = 0
    args = (ids, mask)
    names = dict(input_names=["input_ids", "attention_mask"], output_names=["out"])
    # In training mode, as one exports a model to train: the weights keep their
    # names (no folded transposes), so grads.npz names them.
    torch.onnx.export(m, args, "ts.onnx", dynamo=False, opset_version=17,
                      training=torch.onnx.TrainingMode.TRAINING, **names)
    torch.onnx.export(m, args, "dyn.onnx", dynamo=True, external_data=False, **names)

    steps = 3
    targets = torch.randn(steps, 2, 8, 32)
    os.makedirs("train", exist_ok=True)
    np.save("train/input_ids.npy", ids.numpy())
    np.save("train/attention_mask.npy", mask.numpy())
    np.save("train/targets.npy", targets.numpy())
    with torch.no_grad():
        np.save("train/out.npy", m(*args).numpy())
    loss = torch.nn.functional.mse_loss(m(*args), targets[0])
    loss.backward()
    # grads.npz per export, by the export's initializer names: the exporters
    # rename nn.Linear's weights (stored transposed, "onnx::MatMul_N",
    # "val_N"); each is found by its values.
    import onnx
    from onnx import numpy_helper
    for export in ("ts", "dyn"):
        inits = {i.name: numpy_helper.to_array(i)
                 for i in onnx.load(export + ".onnx").graph.initializer}
        out = {}
        for n, p in m.named_parameters():
            w, g = p.detach().numpy(), p.grad.numpy()
            found = [k for k, v in inits.items() if k not in dict(m.named_parameters())
                     and v.shape == w.T.shape and np.array_equal(v, w.T)]
            if n in inits or len(found) != 1:
                out[n] = g
            else:
                out[found[0]] = g.T
        os.makedirs("train/" + export, exist_ok=True)
        np.savez("train/%s/grads.npz" % export, **out)
    m.zero_grad()
    opt = torch.optim.SGD(m.parameters(), lr=0.1)
    losses = []
    for k in range(steps):
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(m(*args), targets[k])
        loss.backward()
        opt.step()
        losses.append(loss.item())
    json.dump({"first_loss": losses[0], "trajectory": losses, "optimizer": {"sgd": {"lr": 0.1}}},
              open("train/train.json", "w"), indent=1)


if __name__ == "__main__":
    main()
