#!/usr/bin/env python3
"""Writes this folder: a transformers Llama whose attention the CUDA tiles
take (1 layer, 2 query heads of 32 and 1 key-value head: GQA; vocab 64),
random weights (seed 0), exported by torch.onnx.export's default exporter
(dynamo, external data) with an attention_mask input; and its inputs: 2
sequences of 70 tokens, the second left-padded by 9 (whose first rows
attend no key: the exporter's finfo.min rows), and 2 steps of --data-lm
batches [2, 2, 71]. Needs torch and transformers (not the tests: they read
the files). test/Runtime/emulated-tiles.test runs it.

    make.py OUT_DIR
"""
import os
import sys
import warnings

import numpy as np
import torch
import transformers as T

warnings.filterwarnings("ignore")


class Logits(torch.nn.Module):
    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, input_ids, attention_mask):
        return self.m(input_ids=input_ids, attention_mask=attention_mask,
                      use_cache=False).logits


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    cfg = T.LlamaConfig(vocab_size=64, hidden_size=64, intermediate_size=96,
                        num_hidden_layers=1, num_attention_heads=2,
                        num_key_value_heads=1, max_position_embeddings=128)
    model = Logits(T.LlamaForCausalLM(cfg).eval())
    ids = torch.randint(0, 64, (2, 70))
    mask = torch.ones(2, 70, dtype=torch.long)
    mask[1, :9] = 0
    torch.onnx.export(model, (ids, mask), os.path.join(out, "model.onnx"),
                      input_names=["input_ids", "attention_mask"],
                      output_names=["logits"], dynamo=True, external_data=True)
    np.save(os.path.join(out, "input_ids.npy"), ids.numpy())
    np.save(os.path.join(out, "attention_mask.npy"), mask.numpy())
    rng = np.random.default_rng(0)
    np.save(os.path.join(out, "batches.npy"),
            rng.integers(0, 64, (2, 2, 71)).astype(np.int64))


if __name__ == "__main__":
    main()
