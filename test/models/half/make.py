#!/usr/bin/env python3
"""Builds the models the precision tests use: small random transformers cast
with .to(torch.bfloat16) / .to(torch.float16), as users hold checkpoints, or
.to(torch.float64), and exported by torch.onnx.export, with PyTorch's own
output of the cast model as the reference.

    python make.py [OUT_DIR]

needs torch, transformers, onnx, onnxscript. Writes OUT_DIR/NAME/:

  model.onnx (+ model.onnx.data)  the export (the default exporter's
                                  stack traces dropped, to keep the files
                                  small; the importer reads no trace)
  input_ids.npy                   i64 [2, 16]
  output.npy                      PyTorch's logits of the cast model: f32
                                  holding the bf16 values (numpy has no
                                  bf16), float16 for f16, float64 for f64
  meta.json                       dtype, exporter, versions
  train/ (llama_bf16, llama_f16, gpt2_bf16)
      batches.npy  i64 [5, 2, 17]: step k trains on [:, :-1] -> [:, 1:]
      train.json   the 5 losses of AdamW on f32 masters (train_reference)

NAME: llama_bf16, llama_f16, gpt2_bf16 (tied head), gpt2_f16 by the default
exporter; encoder_f16_ts (torch's nn.TransformerEncoder) by the TorchScript
exporter (dynamo=False), which refuses transformers 5's models; llama_f64
(default exporter) and encoder_f64_ts (TorchScript), smaller (hidden 32, one
layer) since each weight takes eight bytes.
"""
import json
import os
import sys
import warnings

import numpy as np
import onnx
import torch
import transformers as T

warnings.filterwarnings("ignore")
BATCH, SEQ = 2, 16


class LogitsOnly(torch.nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids):
        return self.model(input_ids=input_ids, use_cache=False)[0]


class Encoder(torch.nn.Module):
    """nn.TransformerEncoder over an embedding: torch's own layers."""

    def __init__(self, hidden=64, layers=2, activation="relu"):
        super().__init__()
        self.embed = torch.nn.Embedding(128, hidden)
        layer = torch.nn.TransformerEncoderLayer(hidden, 4, 2 * hidden, dropout=0.0,
                                                 activation=activation,
                                                 batch_first=True)
        self.encoder = torch.nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.head = torch.nn.Linear(hidden, 128)

    def forward(self, input_ids, use_cache=False):
        return (self.head(self.encoder(self.embed(input_ids))),)


def build(arch):
    if arch == "encoder":
        return Encoder()
    if arch == "encoder_small":
        return Encoder(hidden=32, layers=1, activation="gelu")
    if arch == "llama_small":
        c = T.LlamaConfig(vocab_size=128, hidden_size=32, intermediate_size=64,
                          num_hidden_layers=1, num_attention_heads=4,
                          num_key_value_heads=2, max_position_embeddings=64)
        return T.LlamaForCausalLM(c)
    if arch == "llama":
        c = T.LlamaConfig(vocab_size=128, hidden_size=64, intermediate_size=128,
                          num_hidden_layers=2, num_attention_heads=4,
                          num_key_value_heads=4, max_position_embeddings=64)
        return T.LlamaForCausalLM(c)
    c = T.GPT2Config(vocab_size=128, n_embd=64, n_layer=2, n_head=4, n_positions=64)
    return T.GPT2LMHeadModel(c)


def make(out, name, arch, dtype, dynamo):
    torch.manual_seed(0)
    model = LogitsOnly(build(arch)).eval().to(dtype)
    ids = torch.randint(0, 128, (BATCH, SEQ), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        ref = model(ids)
    d = os.path.join(out, name)
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, "model.onnx")
    torch.onnx.export(model, (ids,), path, dynamo=dynamo,
                      input_names=["input_ids"], output_names=["logits"])
    m = onnx.load(path)
    for n in m.graph.node:
        keep = [p for p in n.metadata_props if p.key != "pkg.torch.onnx.stack_trace"]
        del n.metadata_props[:]
        n.metadata_props.extend(keep)
    for f in os.listdir(d):
        if f.startswith("model.onnx"):
            os.remove(os.path.join(d, f))
    if dynamo:
        onnx.save(m, path, save_as_external_data=True, location="model.onnx.data",
                  size_threshold=0)
    else:
        onnx.save(m, path)
    np.save(os.path.join(d, "input_ids.npy"), ids.numpy())
    np.save(os.path.join(d, "output.npy"),
            ref.float().numpy() if dtype == torch.bfloat16 else ref.numpy())
    meta = {"dtype": str(dtype).replace("torch.", ""),
            "exporter": "dynamo" if dynamo else "torchscript",
            "torch": torch.__version__, "transformers": T.__version__}
    with open(os.path.join(d, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)
    print(name, ref.shape, "max|logit| %.4f" % ref.float().abs().max())


def train_reference(out, name, arch, dtype, steps=5):
    """train/: five AdamW steps of the half model as PyTorch AMP and
    Megatron lay them out: f32 master weights (the half model's values,
    widened) and optimizer state, the half model as the working copy
    (rounded from the masters each step), the loss in f32 on the logits
    cast up, fp16 with a dynamic loss scale of 2^16 (GradScaler's)."""
    torch.manual_seed(0)
    half = LogitsOnly(build(arch)).eval().to(dtype)
    master = [p.detach().float().clone().requires_grad_(True) for p in half.parameters()]
    opt = torch.optim.AdamW(master, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01)
    scale = 65536.0 if dtype == torch.float16 else 1.0
    batches = torch.randint(0, 128, (steps, BATCH, SEQ + 1),
                            generator=torch.Generator().manual_seed(2))
    losses = []
    for k in range(steps):
        with torch.no_grad():
            for m, h in zip(master, half.parameters()):
                h.copy_(m)
        x, y = batches[k, :, :-1], batches[k, :, 1:]
        logits = half(x).float()
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
        (loss * scale).backward()
        grads = [h.grad.float() / scale for h in half.parameters()]
        half.zero_grad(set_to_none=True)
        losses.append(loss.item())
        if not all(torch.isfinite(g).all() for g in grads):
            scale /= 2  # GradScaler: skip the step, halve the scale
            continue
        for m, g in zip(master, grads):
            m.grad = g
        opt.step()
        opt.zero_grad(set_to_none=True)
    d = os.path.join(out, name, "train")
    os.makedirs(d, exist_ok=True)
    np.save(os.path.join(d, "batches.npy"), batches.numpy())
    with open(os.path.join(d, "train.json"), "w") as f:
        json.dump({"loss": "mean token cross-entropy of logits[:, t] against input[t+1], in f32",
                   "optimizer": {"adamw": {"lr": 1e-3, "betas": [0.9, 0.999], "eps": 1e-8,
                                           "weight_decay": 0.01}},
                   "masters": "f32", "loss_scale": 65536.0 if dtype == torch.float16 else None,
                   "trajectory": losses}, f, indent=1)
    print(name, "train", ["%.6f" % l for l in losses])


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    make(out, "llama_bf16", "llama", torch.bfloat16, True)
    make(out, "llama_f16", "llama", torch.float16, True)
    make(out, "gpt2_bf16", "gpt2", torch.bfloat16, True)
    make(out, "gpt2_f16", "gpt2", torch.float16, True)
    make(out, "encoder_f16_ts", "encoder", torch.float16, False)
    make(out, "llama_f64", "llama_small", torch.float64, True)
    make(out, "encoder_f64_ts", "encoder_small", torch.float64, False)
    train_reference(out, "llama_bf16", "llama", torch.bfloat16)
    train_reference(out, "llama_f16", "llama", torch.float16)
    train_reference(out, "gpt2_bf16", "gpt2", torch.bfloat16)


if __name__ == "__main__":
    main()
