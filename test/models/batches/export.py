#!/usr/bin/env python3
"""Exports the models of the layout sweep (test/Tools/layout-sweep.test):
two small language models at batch 1, 2 and 3, as a user exports one
example (batch 1) or a few, so that every built-in plan and plugin is
compiled over every small mesh for each batch size.

  llama_b{1,2,3}/model.onnx  transformers LlamaForCausalLM (2 layers, hidden
                             32, 4 heads, 2 KV heads, vocab 64), seq 8,
                             torch.onnx.export's default (dynamo) exporter
  gpt2_b{1,2,3}/model.onnx   transformers GPT2LMHeadModel (2 layers, width
                             32, 4 heads, vocab 64, tied head), seq 8,
                             torch.onnx.export(..., dynamo=False)

Random weights (seed 0). Beside each: input_input_ids.npy and PyTorch's
logits (output.npy), so that a sweep can check results as well as exits.

    VENV/bin/python test/models/batches/export.py test/models/batches
"""
import os
import sys
import warnings

warnings.filterwarnings("ignore")

import numpy as np
import torch
import transformers

SEQ, VOCAB = 8, 64


class Logits(torch.nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids):
        return self.model(input_ids=input_ids, use_cache=False).logits


def llama():
    config = transformers.LlamaConfig(
        vocab_size=VOCAB, hidden_size=32, intermediate_size=64,
        num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
        max_position_embeddings=32, tie_word_embeddings=False,
        attn_implementation="eager")
    torch.manual_seed(0)
    return transformers.LlamaForCausalLM(config).float().eval()


def gpt2():
    config = transformers.GPT2Config(
        vocab_size=VOCAB, n_embd=32, n_layer=2, n_head=4, n_positions=32,
        attn_implementation="eager")
    torch.manual_seed(0)
    return transformers.GPT2LMHeadModel(config).float().eval()


def export(model, batch, out_dir, dynamo):
    os.makedirs(out_dir, exist_ok=True)
    torch.manual_seed(batch)
    ids = torch.randint(0, VOCAB, (batch, SEQ))
    wrapped = Logits(model).eval()
    path = os.path.join(out_dir, "model.onnx")
    kwargs = dict(input_names=["input_ids"], output_names=["logits"],
                  dynamo=dynamo)
    if dynamo:
        kwargs["external_data"] = False
    else:
        kwargs["opset_version"] = 17
    import transformers.masking_utils as masking
    find = masking.find_packed_sequence_indices
    if not dynamo:
        masking.find_packed_sequence_indices = lambda position_ids: None
    try:
        with torch.no_grad():
            torch.onnx.export(wrapped, (ids,), path, **kwargs)
    finally:
        masking.find_packed_sequence_indices = find
    np.save(os.path.join(out_dir, "input_input_ids.npy"), ids.numpy())
    with torch.no_grad():
        np.save(os.path.join(out_dir, "output.npy"), wrapped(ids).numpy())


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(__file__)
    for batch in (1, 2, 3):
        export(llama(), batch, os.path.join(out, "llama_b%d" % batch), True)
        export(gpt2(), batch, os.path.join(out, "gpt2_b%d" % batch), False)
    print("wrote", out)


if __name__ == "__main__":
    main()
