#!/usr/bin/env python3
"""Exports bert_tiny: Hugging Face transformers' BertForSequenceClassification
(2 layers, hidden 32, 2 heads, vocab 64, 3 classes), random weights (seed
0), at batch 3 x seq 8 (a batch dp=2 does not divide), with
torch.onnx.export(..., dynamo=True), and PyTorch's logits for the saved
input. The model takes `input_ids` alone (no attention_mask).

    /work/zoo-venv/bin/python test/models/bert_tiny/export.py test/models/bert_tiny
"""
import json
import os
import sys

import numpy as np
import torch
import transformers

BATCH, SEQ, VOCAB = 3, 8, 64


class Logits(torch.nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids):
        return self.model(input_ids=input_ids).logits


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "."
    config = transformers.BertConfig(
        vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2,
        num_attention_heads=2, intermediate_size=64, max_position_embeddings=16,
        num_labels=3, attn_implementation="eager", hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0)
    torch.manual_seed(0)
    model = Logits(transformers.BertForSequenceClassification(config)).eval()
    ids = torch.from_numpy(np.random.default_rng(0).integers(0, VOCAB, size=(BATCH, SEQ)))
    with torch.no_grad():
        ref = model(ids)
    path = os.path.join(out, "model.onnx")
    torch.onnx.export(model, (ids,), path, input_names=["input_ids"],
                      output_names=["logits"], dynamo=True, external_data=False)
    np.save(os.path.join(out, "input_input_ids.npy"), ids.numpy())
    np.save(os.path.join(out, "output.npy"), ref.numpy())
    import onnx
    m = onnx.load(path)
    meta = {"opset": max(o.version for o in m.opset_import if o.domain in ("", "ai.onnx")),
            "inputs": {"input_ids": [BATCH, SEQ]}, "output": list(ref.shape),
            "exporter": "torch %s torch.onnx.export(dynamo=True), transformers %s" % (
                torch.__version__, transformers.__version__),
            "note": "transformers BertForSequenceClassification: 2 layers, hidden 32, "
                    "2 heads, 3 classes; input_ids only; batch 3",
            "parameters": sum(p.numel() for p in model.parameters()),
            "ops": sorted({n.op_type for n in m.graph.node})}
    with open(os.path.join(out, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)


if __name__ == "__main__":
    main()
