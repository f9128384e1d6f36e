#!/usr/bin/env python3
"""Adds the f64 trajectory to train.json: the 8 SGD steps of train.json's
reference, run by PyTorch in float64 on the same weights and batches.

f32 training of this ResNet is chaotic at the 1e-4 level: a ReLU whose
input rounds to the other side of 0 changes the step, and 8 steps amplify
it. Measured (27 November 2026): oneDNN 2.6's AVX2 convolution rounds
layer1.conv1's output at one element of batch 0 one ulp-step lower than its
AVX-512 kernel; after BatchNorm that element is 4e-8 (AVX-512, PyTorch, f64)
or 0 (AVX2), the ReLU passes or blocks its gradient, the first step's
gradients of layer1.bn1 move by 2.4e-3 of their largest, and the 8-step
trajectory by 4.0e-4. Both are correct f32.

The f64 run is the exact answer to f32's eyes; `f32_chaos` records how far
correct f32-level runs land from it: PyTorch f32 itself; f64 with 1e-7
relative noise on the images; and f64 with noise of 1e-7 of each ReLU
input's standard deviation (the size of two kernels' rounding differences
there) under 8 seeds, whose largest drift (a ReLU flip in one seed) is the
envelope Training/resnet-sgd.test holds Tessel to, against the f64 run.

The graph is interpreted from model.onnx (Conv, BatchNormalization in
training mode, Relu, Add, GlobalAveragePool, Flatten, Gemm), as
pre_export_stats.py does: no model code, the same initializers. Needs torch
and onnx (any recent version):
  python3 f64_reference.py   (in this directory)
"""
import json
import os

import numpy as np
import onnx
import torch
import torch.nn.functional as F
from onnx import numpy_helper

here = os.path.dirname(os.path.abspath(__file__))
model = onnx.load(os.path.join(here, "..", "model.onnx"))
ref = json.load(open(os.path.join(here, "train.json")))
images = np.load(os.path.join(here, "images.npy"))
labels = np.load(os.path.join(here, "labels.npy"))
attrs = lambda n: {a.name: onnx.helper.get_attribute_value(a) for a in n.attribute}
init = {t.name: numpy_helper.to_array(t).copy() for t in model.graph.initializer}


def trajectory(dtype, noise=0.0, relu_noise=0.0, seed=7):
    torch.manual_seed(0)
    params = {k: torch.tensor(v, dtype=dtype, requires_grad="running" not in k)
              for k, v in init.items()}
    trained = [p for p in params.values() if p.requires_grad]
    opt = torch.optim.SGD(trained, **ref["optimizer"]["sgd"])
    rng = np.random.default_rng(seed)
    out = []
    for step in range(len(images)):
        x = images[step].astype(np.float64)
        if noise:
            x = x * (1 + noise * rng.standard_normal(x.shape))
        values = {"images": torch.tensor(x, dtype=dtype)}
        for n in model.graph.node:
            a, i, v = attrs(n), n.input, values
            if n.op_type == "Conv":
                y = F.conv2d(v[i[0]], params[i[1]],
                             params[i[2]] if len(i) > 2 else None,
                             stride=a["strides"], padding=a["pads"][:2])
            elif n.op_type == "BatchNormalization":
                # Batch statistics; the running ones play no part in the loss.
                y = F.batch_norm(v[i[0]], None, None, params[i[1]],
                                 params[i[2]], True, 0.0, a["epsilon"])
            elif n.op_type == "Relu":
                x = v[i[0]]
                if relu_noise:
                    x = x + relu_noise * x.detach().std() * torch.tensor(
                        rng.standard_normal(tuple(x.shape)), dtype=dtype)
                y = F.relu(x)
            elif n.op_type == "Add":
                y = v[i[0]] + v[i[1]]
            elif n.op_type == "GlobalAveragePool":
                y = v[i[0]].mean(dim=(2, 3), keepdim=True)
            elif n.op_type == "Flatten":
                y = v[i[0]].flatten(a.get("axis", 1))
            elif n.op_type == "Gemm":
                assert a.get("transB") == 1 and a.get("alpha", 1.0) == 1.0
                y = v[i[0]] @ params[i[1]].T + params[i[2]]
            else:
                raise SystemExit("f64_reference.py: no rule for %s" % n.op_type)
            values[n.output[0]] = y
        loss = F.cross_entropy(values[model.graph.output[0].name],
                               torch.tensor(labels[step], dtype=torch.long))
        out.append(loss.item())
        opt.zero_grad()
        loss.backward()
        opt.step()
    return np.array(out)


rel = lambda a, b: float(np.max(np.abs(a - b) / np.abs(b)))
torch.set_num_threads(1)
f64 = trajectory(torch.float64)
f32 = trajectory(torch.float32)
f64n = trajectory(torch.float64, noise=1e-7)
relu = [rel(trajectory(torch.float64, relu_noise=1e-7, seed=s), f64)
        for s in range(8)]
old = np.array(ref["trajectory_full"])
print("f64 first loss %.9f (train.json's f32 %.9f)" % (f64[0], ref["first_loss"]))
print("max rel distance from f64: torch %s f32 %.2e, f64 + 1e-7 input noise "
      "%.2e, train.json's trajectory_full %.2e"
      % (torch.__version__, rel(f32, f64), rel(f64n, f64), rel(old, f64)))
print("f64 + 1e-7 x std noise at the ReLUs, 8 seeds: %s"
      % " ".join("%.1e" % r for r in relu))
ref["trajectory_full_f64"] = f64.tolist()
ref["f32_chaos"] = {
    "note": "max over the 8 steps of |loss - f64 loss| / |f64 loss|",
    "torch_f32": rel(f32, f64), "f64_input_noise_1e-7": rel(f64n, f64),
    "trajectory_full": rel(old, f64),
    "relu_noise_1e-7_seeds": relu, "envelope": max(relu),
    "torch": torch.__version__}
with open(os.path.join(here, "train.json"), "w") as f:
    json.dump(ref, f, indent=1)
    f.write("\n")
