#!/usr/bin/env python3
"""Exports llama_tiny: a 2-layer Llama with HuggingFace's module names
(model.layers.N.self_attn.{q,k,v,o}_proj, mlp.{gate,up,down}_proj, RMSNorm,
rotary embeddings, SwiGLU, causal attention, tied-free lm_head), random
weights (seed 0), with PyTorch's ONNX exporter at opset 17, and PyTorch's own
output for the saved input.

    /usr/bin/python3 test/models/llama_tiny/export.py test/models/llama_tiny

With a second argument, the MLP's hidden size (test/models/llama_ff512:
ff=512, which tp=3 does not divide):

    /usr/bin/python3 test/models/llama_tiny/export.py test/models/llama_ff512 512
"""
import json
import math
import os
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

D, HEADS, LAYERS, FF, VOCAB, SEQ, BATCH = 64, 4, 2, 176, 256, 16, 2


class RMSNorm(nn.Module):
    def __init__(self, d, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(1.0 + 0.1 * torch.randn(d))
        self.eps = eps

    def forward(self, x):
        var = x.pow(2).mean(-1, keepdim=True)
        return self.weight * (x / torch.sqrt(var + self.eps))


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.q_proj = nn.Linear(D, D, bias=False)
        self.k_proj = nn.Linear(D, D, bias=False)
        self.v_proj = nn.Linear(D, D, bias=False)
        self.o_proj = nn.Linear(D, D, bias=False)

    def forward(self, x, cos, sin, mask):
        b, t, _ = x.shape
        hd = D // HEADS
        q = self.q_proj(x).view(b, t, HEADS, hd).transpose(1, 2)
        k = self.k_proj(x).view(b, t, HEADS, hd).transpose(1, 2)
        v = self.v_proj(x).view(b, t, HEADS, hd).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        w = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(hd) + mask
        o = torch.matmul(F.softmax(w, dim=-1), v)
        return self.o_proj(o.transpose(1, 2).reshape(b, t, D))


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.gate_proj = nn.Linear(D, FF, bias=False)
        self.up_proj = nn.Linear(D, FF, bias=False)
        self.down_proj = nn.Linear(FF, D, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class Layer(nn.Module):
    def __init__(self):
        super().__init__()
        self.input_layernorm = RMSNorm(D)
        self.self_attn = Attention()
        self.post_attention_layernorm = RMSNorm(D)
        self.mlp = MLP()

    def forward(self, x, cos, sin, mask):
        x = x + self.self_attn(self.input_layernorm(x), cos, sin, mask)
        return x + self.mlp(self.post_attention_layernorm(x))


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed_tokens = nn.Embedding(VOCAB, D)
        self.layers = nn.ModuleList([Layer() for _ in range(LAYERS)])
        self.norm = RMSNorm(D)
        hd = D // HEADS
        inv = 1.0 / (10000 ** (torch.arange(0, hd, 2).float() / hd))
        ang = torch.outer(torch.arange(SEQ).float(), inv)
        emb = torch.cat((ang, ang), dim=-1)
        self.register_buffer("cos", emb.cos()[None, None])
        self.register_buffer("sin", emb.sin()[None, None])
        causal = torch.full((SEQ, SEQ), float("-inf")).triu(1)
        self.register_buffer("mask", causal[None, None])

    def forward(self, ids):
        x = self.embed_tokens(ids)
        for layer in self.layers:
            x = layer(x, self.cos, self.sin, self.mask)
        return self.norm(x)


class LlamaForCausalLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.model = Model()
        self.lm_head = nn.Linear(D, VOCAB, bias=False)

    def forward(self, input_ids):
        return self.lm_head(self.model(input_ids))


def main():
    global FF
    out = sys.argv[1] if len(sys.argv) > 1 else "."
    if len(sys.argv) > 2:
        FF = int(sys.argv[2])
    torch.manual_seed(0)
    model = LlamaForCausalLM().eval()
    for p in model.parameters():
        if p.dim() == 2:
            nn.init.normal_(p, std=0.08)
    ids = torch.from_numpy(np.random.default_rng(0).integers(0, VOCAB, size=(BATCH, SEQ)))
    with torch.no_grad():
        ref = model(ids)
    torch.onnx.export(model, (ids,), os.path.join(out, "model.onnx"), opset_version=17,
                      input_names=["input_ids"], output_names=["logits"],
                      do_constant_folding=True)
    np.save(os.path.join(out, "input_input_ids.npy"), ids.numpy())
    np.save(os.path.join(out, "output.npy"), ref.numpy())
    meta = {"opset": 17, "inputs": {"input_ids": [BATCH, SEQ]}, "output": list(ref.shape),
            "exporter": "torch %s torch.onnx.export" % torch.__version__,
            "note": "tiny Llama (ff=%d), HuggingFace module names: RMSNorm (Pow/ReduceMean/Sqrt/Div), "
                    "rotary (Slice/Neg/Concat), SwiGLU (Sigmoid/Mul), causal additive mask" % FF,
            "parameters": sum(p.numel() for p in model.parameters())}
    with open(os.path.join(out, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)


if __name__ == "__main__":
    main()
