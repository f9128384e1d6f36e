#!/usr/bin/env python3
"""Exports vit_tiny: a Vision Transformer built from PyTorch's own
nn.TransformerEncoderLayer (batch_first=False, as nn.TransformerEncoder uses
it by default: [seq, batch, d] inside, nn.MultiheadAttention's layout),
a Conv2d patch embedding, a class token, learned position embeddings, a
final LayerNorm and a linear head; random weights (seed 0), exported with
torch.onnx at opset 17, and PyTorch's own output for the saved input.

    /usr/bin/python3 test/models/vit_tiny/export.py test/models/vit_tiny
"""
import json
import os
import sys

import numpy as np
import torch
import torch.nn as nn

IMG, PATCH, CH, D, HEADS, LAYERS, FF, CLASSES, BATCH = 16, 4, 3, 32, 4, 2, 64, 10, 4


class ViT(nn.Module):
    def __init__(self):
        super().__init__()
        self.patch = nn.Conv2d(CH, D, PATCH, stride=PATCH)
        n = (IMG // PATCH) ** 2
        self.cls = nn.Parameter(0.02 * torch.randn(1, 1, D))
        self.pos = nn.Parameter(0.02 * torch.randn(n + 1, 1, D))
        layer = nn.TransformerEncoderLayer(D, HEADS, FF, dropout=0.0,
                                           activation="gelu")
        self.encoder = nn.TransformerEncoder(layer, LAYERS, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(D)
        self.head = nn.Linear(D, CLASSES)

    def forward(self, images):
        b = images.shape[0]
        x = self.patch(images).flatten(2).permute(2, 0, 1)  # [n, b, d]
        x = torch.cat([self.cls.expand(1, b, D), x], dim=0) + self.pos
        x = self.encoder(x)
        return self.head(self.norm(x[0]))


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "."
    torch.manual_seed(0)
    model = ViT().eval()
    images = torch.from_numpy(
        np.random.default_rng(0).standard_normal((BATCH, CH, IMG, IMG)).astype(np.float32))
    with torch.no_grad():
        ref = model(images)
        torch.onnx.export(model, (images,), os.path.join(out, "model.onnx"),
                          opset_version=17, input_names=["images"],
                          output_names=["logits"], do_constant_folding=True)
    np.save(os.path.join(out, "input_images.npy"), images.numpy())
    np.save(os.path.join(out, "output.npy"), ref.numpy())
    meta = {"opset": 17, "inputs": {"images": list(images.shape)}, "output": list(ref.shape),
            "exporter": "torch %s torch.onnx.export" % torch.__version__,
            "note": "ViT from nn.TransformerEncoderLayer (seq-first MultiheadAttention), "
                    "Conv2d patches, class token, GELU MLP",
            "parameters": sum(p.numel() for p in model.parameters())}
    with open(os.path.join(out, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)


if __name__ == "__main__":
    main()
