#!/usr/bin/env python3
"""Exports the benchmark models with PyTorch's ONNX exporter (opset 17).

- gpt2_small.onnx: a GPT-2-small-shaped model (12 layers, d=768, 12 heads,
  vocab 50257, 124M parameters) with HuggingFace parameter names, fixed
  input_ids [1, 128], random weights (seed 0).
- resnet50_b1.onnx, resnet50_b8.onnx: torchvision's ResNet-50 (random
  weights, eval mode), images [1|8, 3, 224, 224].

Run with Debian's python3 (python3-torch, python3-torchvision):
    /usr/bin/python3 bench/models/export_models.py OUT_DIR
"""
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


def export(model, args, names, path):
    torch.onnx.export(model, args, path, input_names=names, output_names=["output"],
                      opset_version=17, do_constant_folding=True)
    print("wrote", path, "(%.1f MB)" % (os.path.getsize(path) / 1e6))


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "bench/models/out"
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
