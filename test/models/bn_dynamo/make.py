#!/usr/bin/env python3
"""A conv + BatchNorm2d + ReLU + conv net in training mode, exported by
torch.onnx.export(dynamo=True) (torch 2.15) twice:

  unfused.onnx  optimize=False: the batch norm is a BatchNormalization node
                without training_mode (the exporter writes PyTorch's
                training-mode batch norm as an inference one; its FX node
                metadata says training=True);
  fused.onnx    optimize=True (the default): onnxscript's
                FuseBatchNormIntoConv folded it into the first Conv.

train/: the inputs, per-step MSE targets, and PyTorch's own SGD (lr 0.1)
trajectory from the same weights (train.json: trajectory, first_loss).
Run from this directory with a venv that has torch and onnxscript.
"""
import copy
import json
import os

import numpy as np
import torch

torch.manual_seed(0)
nn = torch.nn
m = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                  nn.Conv2d(8, 4, 1))
m.train()
x = torch.randn(2, 3, 8, 8)
for name, optimize in (("unfused.onnx", False), ("fused.onnx", True)):
    torch.onnx.export(copy.deepcopy(m), (x,), name, input_names=["x"],
                      output_names=["out"], dynamo=True, optimize=optimize)
steps = 3
targets = torch.randn(steps, 2, 4, 8, 8)
os.makedirs("train", exist_ok=True)
np.save("train/x.npy", x.numpy())
np.save("train/targets.npy", targets.numpy())
opt = torch.optim.SGD(m.parameters(), lr=0.1)
losses = []
for k in range(steps):
    opt.zero_grad()
    loss = nn.functional.mse_loss(m(x), targets[k])
    loss.backward()
    opt.step()
    losses.append(loss.item())
json.dump({"first_loss": losses[0], "trajectory": losses, "optimizer": {"sgd": {"lr": 0.1}}},
          open("train/train.json", "w"), indent=1)
