#!/usr/bin/env python3
"""Exports the benchmark models with PyTorch's ONNX exporter (opset 17).

- gpt2_small.onnx: a GPT-2-small-shaped model (12 layers, d=768, 12 heads,
  vocab 50257, 124M parameters) with HuggingFace parameter names, fixed
  input_ids [1, 128], random weights (seed 0).
- resnet50_b1.onnx, resnet50_b8.onnx: torchvision's ResNet-50 (random
  weights, eval mode), images [1|8, 3, 224, 224].

With --train, the training benchmark's models instead (bench/run-train-compare):
- gpt2_small_train_b{1,4,8}.onnx: the same GPT-2-small
  with input_ids [1|4, 128]; gpt2_small_state.pt its PyTorch state dict (the
  same weights for PyTorch's side); gpt2_small_b{1,4,8}_batches.npy token
  batches [steps, batch, 129] (input = [:, :-1], labels = [:, 1:]);
  gpt2_small_train.json: whether the export keeps lm_head tied to wte.
- resnet50_b8_train.onnx: ResNet-50 exported in training mode (BatchNorm
  with batch statistics), resnet50_state.pt, resnet50_b8_train_images.npy
  [steps, 8, 3, 224, 224], resnet50_b8_train_labels.npy [steps, 8].

Run with Debian's python3 (python3-torch, python3-torchvision):
    /usr/bin/python3 bench/models/export_models.py OUT_DIR [--train]
"""
import json
import math
import os
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class Conv1D(nn.Module):
    """HuggingFace's Conv1D: y = x @ W + b with W stored [in, out]."""

    def __init__(self, n_in, n_out):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(n_in, n_out) * 0.02)
        self.bias = nn.Parameter(torch.zeros(n_out))

    def forward(self, x):
        return torch.matmul(x, self.weight) + self.bias


class Attention(nn.Module):
    def __init__(self, d, heads, ctx):
        super().__init__()
        self.heads = heads
        self.c_attn = Conv1D(d, 3 * d)
        self.c_proj = Conv1D(d, d)
        self.register_buffer(
            "bias", torch.tril(torch.ones(ctx, ctx, dtype=torch.bool)).view(1, 1, ctx, ctx))

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.c_attn(x).split(d, dim=2)
        shape = (b, t, self.heads, d // self.heads)
        q = q.view(shape).transpose(1, 2)
        k = k.view(shape).transpose(1, 2)
        v = v.view(shape).transpose(1, 2)
        w = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(d // self.heads)
        w = torch.where(self.bias[:, :, :t, :t], w, torch.tensor(torch.finfo(w.dtype).min))
        w = F.softmax(w, dim=-1)
        o = torch.matmul(w, v).transpose(1, 2).reshape(b, t, d)
        return self.c_proj(o)


class MLP(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.c_fc = Conv1D(d, 4 * d)
        self.c_proj = Conv1D(4 * d, d)

    def forward(self, x):
        return self.c_proj(F.gelu(self.c_fc(x), approximate="tanh"))


class Block(nn.Module):
    def __init__(self, d, heads, ctx):
        super().__init__()
        self.ln_1 = nn.LayerNorm(d)
        self.attn = Attention(d, heads, ctx)
        self.ln_2 = nn.LayerNorm(d)
        self.mlp = MLP(d)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT2(nn.Module):
    def __init__(self, layers=12, d=768, heads=12, vocab=50257, ctx=1024):
        super().__init__()
        self.wte = nn.Embedding(vocab, d)
        self.wpe = nn.Embedding(ctx, d)
        self.h = nn.ModuleList([Block(d, heads, ctx) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(d)

    def forward(self, input_ids):
        t = input_ids.shape[1]
        pos = torch.arange(t, dtype=torch.long).unsqueeze(0)
        x = self.wte(input_ids) + self.wpe(pos)
        for block in self.h:
            x = block(x)
        return self.ln_f(x)


class Named(nn.Module):
    """HuggingFace's GPT2LMHeadModel layout: `transformer.` parameters and an
    `lm_head` tied to the token embedding (exported as node /lm_head/MatMul)."""

    def __init__(self, model):
        super().__init__()
        self.transformer = model
        self.lm_head = nn.Linear(model.wte.weight.shape[1], model.wte.weight.shape[0],
                                 bias=False)
        self.lm_head.weight = model.wte.weight

    def forward(self, input_ids):
        return self.lm_head(self.transformer(input_ids))


def load_gpt2_small(models):
    """The benchmark's GPT-2-small as PyTorch trains it: the exported weights
    (gpt2_small_state.pt in `models`), lm_head untied where the export keeps
    it as an initializer of its own (gpt2_small_train.json)."""
    model = Named(GPT2())
    model.load_state_dict(torch.load(os.path.join(models, "gpt2_small_state.pt")))
    with open(os.path.join(models, "gpt2_small_train.json")) as f:
        if not json.load(f)["lm_head_tied"]:
            model.lm_head.weight = nn.Parameter(model.transformer.wte.weight.detach().clone())
    return model


def export(model, args, names, path):
    torch.onnx.export(model, args, path, input_names=names, output_names=["output"],
                      opset_version=17, do_constant_folding=True)
    print("wrote", path, "(%.1f MB)" % (os.path.getsize(path) / 1e6))


TRAIN_STEPS = 8


def lm_head_tied(path):
    """Whether the exported lm_head reads wte itself (a Transpose of it) rather
    than an initializer of its own (the exporter folds the transpose)."""
    import onnx
    m = onnx.load(path, load_external_data=False)
    names = {i.name: list(i.dims) for i in m.graph.initializer}
    for n in m.graph.node:
        if n.op_type == "MatMul" and n.name.startswith("/lm_head"):
            return n.input[1] not in names
    raise SystemExit("%s: no /lm_head MatMul node" % path)


def export_train(out):
    torch.manual_seed(0)
    rng = np.random.default_rng(1)
    gpt2 = Named(GPT2()).eval()
    torch.save(gpt2.state_dict(), os.path.join(out, "gpt2_small_state.pt"))
    tied = {}
    for batch in (1, 4, 8):
        ids = torch.zeros(batch, 128, dtype=torch.long)
        path = os.path.join(out, "gpt2_small_train_b%d.onnx" % batch)
        with torch.no_grad():
            export(gpt2, (ids,), ["input_ids"], path)
        tied[batch] = lm_head_tied(path)
        batches = rng.integers(0, 50257, size=(TRAIN_STEPS, batch, 129), dtype=np.int64)
        np.save(os.path.join(out, "gpt2_small_b%d_batches.npy" % batch), batches)
    with open(os.path.join(out, "gpt2_small_train.json"), "w") as f:
        json.dump({"lm_head_tied": tied[1]}, f)

    import torchvision
    resnet = torchvision.models.resnet50(weights=None)
    torch.save(resnet.state_dict(), os.path.join(out, "resnet50_state.pt"))
    images = torch.zeros(8, 3, 224, 224)
    path = os.path.join(out, "resnet50_b8_train.onnx")
    resnet.train()
    torch.onnx.export(resnet, (images,), path, input_names=["images"],
                      output_names=["output"], opset_version=17,
                      training=torch.onnx.TrainingMode.TRAINING,
                      do_constant_folding=False)
    print("wrote", path)
    np.save(os.path.join(out, "resnet50_b8_train_images.npy"),
            rng.standard_normal((TRAIN_STEPS, 8, 3, 224, 224), dtype=np.float32))
    np.save(os.path.join(out, "resnet50_b8_train_labels.npy"),
            rng.integers(0, 1000, size=(TRAIN_STEPS, 8), dtype=np.int64))


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "bench/models/out"
    if "--train" in sys.argv[2:]:
        os.makedirs(out, exist_ok=True)
        return export_train(out)
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    with torch.no_grad():
        gpt2 = Named(GPT2()).eval()
        ids = torch.from_numpy(rng.integers(0, 50257, size=(1, 128), dtype=np.int64))
        np.save(os.path.join(out, "gpt2_small_input_ids.npy"), ids.numpy())
        export(gpt2, (ids,), ["input_ids"], os.path.join(out, "gpt2_small.onnx"))

        import torchvision
        resnet = torchvision.models.resnet50(weights=None).eval()
        for batch in (1, 8):
            images = torch.from_numpy(rng.standard_normal((batch, 3, 224, 224), dtype=np.float32))
            np.save(os.path.join(out, "resnet50_b%d_images.npy" % batch), images.numpy())
            export(resnet, (images,), ["images"], os.path.join(out, "resnet50_b%d.onnx" % batch))


if __name__ == "__main__":
    main()
