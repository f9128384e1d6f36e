#!/usr/bin/env python3
"""Exports llama_hf: Hugging Face transformers' own LlamaForCausalLM (2
layers, hidden 64, 4 heads, 2 KV heads: grouped-query attention, rotary
embeddings, vocab 128, untied head), random weights (seed 0), at batch 2 x
seq 16, with both of PyTorch's ONNX exporters:

  llama_hf/model.onnx     torch.onnx.export(..., dynamo=True)  (the default)
  llama_hf_ts/model.onnx  torch.onnx.export(..., dynamo=False) (TorchScript)

The model takes `input_ids` alone (no attention_mask: transformers builds
the causal mask itself), so neither export needs an op for padding masks.
Beside each model: PyTorch's logits for the saved input (output.npy), and
under llama_hf/train/ an AdamW trajectory (train.json, as
test/models/gpt2_deep/train/): the whole batch of 2, and 2 microbatches of
1 row (PyTorch's accumulation loop: loss / 2 per microbatch, backward, one
step), on batches.npy ([steps, batch, seq + 1]).

    /work/zoo-venv/bin/python test/models/llama_hf/export.py test/models
"""
import json
import os
import sys

import numpy as np
import torch
import transformers

BATCH, SEQ, VOCAB, STEPS = 2, 16, 128, 4
ADAMW = {"lr": 1e-3, "betas": [0.9, 0.999], "eps": 1e-8, "weight_decay": 0.01}


def make_model():
    config = transformers.LlamaConfig(
        vocab_size=VOCAB, hidden_size=64, intermediate_size=128,
        num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
        max_position_embeddings=64, tie_word_embeddings=False,
        attn_implementation="eager")
    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(config)
    # Larger than the 0.02 default, so that the logits and losses move.
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() == 2:
                p.normal_(0.0, 0.08)
    return model.float()


class Logits(torch.nn.Module):
    """input_ids -> logits, without a cache."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids):
        return self.model(input_ids=input_ids, use_cache=False).logits


def export(model, ids, out_dir, dynamo):
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, "model.onnx")
    wrapped = Logits(model).eval()
    kwargs = dict(input_names=["input_ids"], output_names=["logits"],
                  dynamo=dynamo)
    if dynamo:
        kwargs["external_data"] = False
    else:
        kwargs["opset_version"] = 17
    # The TorchScript exporter has no aten::diff, which transformers' check
    # for packed sequences (several sequences in one row, told apart by
    # position_ids) uses; its answer here is None (one sequence per row),
    # so it is given directly while tracing.
    import transformers.masking_utils as masking
    find = masking.find_packed_sequence_indices
    if not dynamo:
        masking.find_packed_sequence_indices = lambda position_ids: None
    try:
        torch.onnx.export(wrapped, (ids,), path, **kwargs)
    finally:
        masking.find_packed_sequence_indices = find
    with torch.no_grad():
        ref = wrapped(ids)
    np.save(os.path.join(out_dir, "input_input_ids.npy"), ids.numpy())
    np.save(os.path.join(out_dir, "output.npy"), ref.numpy())
    import onnx
    m = onnx.load(path)
    meta = {"opset": max(o.version for o in m.opset_import if o.domain in ("", "ai.onnx")),
            "inputs": {"input_ids": [BATCH, SEQ]}, "output": list(ref.shape),
            "exporter": "torch %s torch.onnx.export(dynamo=%s), transformers %s" % (
                torch.__version__, dynamo, transformers.__version__),
            "note": "transformers LlamaForCausalLM: 2 layers, hidden 64, 4 heads, "
                    "2 KV heads, rotary, SwiGLU, RMSNorm, untied head; input_ids only",
            "parameters": sum(p.numel() for p in model.parameters()),
            "ops": sorted({n.op_type for n in m.graph.node})}
    with open(os.path.join(out_dir, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)


def trajectory(model, batches, microbatches):
    model = make_model()  # the same initial weights
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=ADAMW["lr"],
                            betas=tuple(ADAMW["betas"]), eps=ADAMW["eps"],
                            weight_decay=ADAMW["weight_decay"])
    out = []
    for step in batches:
        ids, labels = step[:, :-1], step[:, 1:]
        opt.zero_grad()
        total = 0.0
        for m in range(microbatches):
            rows = slice(m * BATCH // microbatches, (m + 1) * BATCH // microbatches)
            logits = model(input_ids=ids[rows], use_cache=False).logits
            loss = torch.nn.functional.cross_entropy(
                logits.reshape(-1, VOCAB), labels[rows].reshape(-1))
            (loss / microbatches).backward()
            total += loss.item() / microbatches
        opt.step()
        out.append(total)
    return out


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "test/models"
    model = make_model().eval()
    ids = torch.from_numpy(np.random.default_rng(0).integers(0, VOCAB, size=(BATCH, SEQ)))
    export(model, ids, os.path.join(root, "llama_hf"), dynamo=True)
    export(model, ids, os.path.join(root, "llama_hf_ts"), dynamo=False)

    train = os.path.join(root, "llama_hf", "train")
    os.makedirs(train, exist_ok=True)
    batches = torch.from_numpy(np.random.default_rng(1).integers(
        0, VOCAB, size=(STEPS, BATCH, SEQ + 1)))
    np.save(os.path.join(train, "batches.npy"), batches.numpy())
    full = trajectory(model, batches, 1)
    mb2 = trajectory(model, batches, 2)
    ref = {"loss": "mean token cross-entropy of logits[:, t] against input[t+1]",
           "optimizer": {"adamw": ADAMW},
           "first_loss": full[0], "trajectory_full": full, "trajectory_mb2": mb2,
           "batches": "batches.npy: [%d steps, batch %d, seq+1]; step k uses [:, :-1] "
                      "as input and [:, 1:] as labels" % (STEPS, BATCH),
           "microbatches": "trajectory_mb2: 2 microbatches of 1 row per step, "
                           "loss = mean of microbatch means"}
    with open(os.path.join(train, "train.json"), "w") as f:
        json.dump(ref, f, indent=1)


if __name__ == "__main__":
    main()
