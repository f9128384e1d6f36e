#!/usr/bin/python3
"""Writes pre_export_stats.npz: the BatchNorm running statistics PyTorch's
reference training (train.json, buffers_mb4.npz) started from.

torch.onnx.export(..., training=TrainingMode.TRAINING) runs the model twice
in training mode on the export input (input_images.npy), and each run
updates the running statistics (momentum 0.1) before they are written as
the initializers of model.onnx. The reference then trained a copy of the
model made before the export, so its running statistics started two
updates earlier: r0 = (r - 0.1 s) / 0.9, twice, s the export batch's
statistics (mean, unbiased variance; they depend on the weights only).
Made with PyTorch 1.13 (Debian's python3-torch), which tests never need:
  python3 pre_export_stats.py   (in this directory)
"""
import os

import numpy as np
import onnx
import torch
import torch.nn.functional as F
from onnx import numpy_helper

here = os.path.dirname(os.path.abspath(__file__))
model = onnx.load(os.path.join(here, "..", "model.onnx"))
init = {t.name: torch.tensor(numpy_helper.to_array(t).copy())
        for t in model.graph.initializer}
# Zero running statistics: one update leaves 0.1 x the batch statistics.
stats = {k: torch.zeros_like(v) for k, v in init.items() if "running" in k}
attrs = lambda n: {a.name: onnx.helper.get_attribute_value(a) for a in n.attribute}
values = {"images": torch.tensor(np.load(os.path.join(here, "..", "input_images.npy")))}
with torch.no_grad():
    for n in model.graph.node:
        a, i = attrs(n), n.input
        if n.op_type == "Conv":
            y = F.conv2d(values[i[0]], init[i[1]], stride=a["strides"],
                         padding=a["pads"][:2])
        elif n.op_type == "BatchNormalization":
            y = F.batch_norm(values[i[0]], stats[i[3]], stats[i[4]], init[i[1]],
                             init[i[2]], True, 0.1, a["epsilon"])
        elif n.op_type == "Relu":
            y = F.relu(values[i[0]])
        elif n.op_type == "Add":
            y = values[i[0]] + values[i[1]]
        else:  # the head: no BatchNorm after it
            break
        values[n.output[0]] = y
before = {}
for k, r in stats.items():
    r0 = init[k].double()
    for _ in range(2):
        r0 = (r0 - r.double()) / 0.9
    before[k] = r0.float().numpy()
np.savez(os.path.join(here, "pre_export_stats.npz"), **before)
print("wrote %d running statistics" % len(before))
