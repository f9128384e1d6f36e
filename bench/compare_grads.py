#!/usr/bin/env python3
"""ResNet-50's first-step gradients, Tessel against PyTorch, with the noise floor.

ResNet-50 in training mode (BatchNorm on batch statistics, random weights)
has gradients that f32 rounding alone moves by up to 10-15% of a tensor's
max|grad|: a ReLU input within rounding of 0 flips its mask. So comparing
Tessel's f32 gradients with PyTorch's f32 ones says little by itself. This
compares both with PyTorch in f64 (the exact answer, to f32's eyes) and
prints, per parameter, Tessel's distance from it next to PyTorch f32's and
next to f64's own distance when the images carry 1e-7 relative noise (the
spread rounding causes). Tessel is right where its distances are of the
same size as PyTorch f32's (docs/training.md, "ResNet-50's gradients").

    python bench/compare_grads.py --tesselc BIN --tessel-run BIN --models DIR
        [--grads FILE.safetensors: Tessel's gradients already made] [--all]

Run it with a python that has PyTorch 2.x and torchvision
(build/train-bench-venv, made by bench/run-train-compare). Exit status 1
where Tessel's whole-gradient distance from f64 is over twice PyTorch f32's.
"""
import argparse
import copy
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch
import torch.nn.functional as F
import torchvision

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "test", "Inputs"))
from safetensors_np import read_safetensors  # noqa: E402


def torch_grads(base, images, labels, dtype):
    model = copy.deepcopy(base).to(dtype)
    loss = F.cross_entropy(model(torch.from_numpy(images).to(dtype)), labels)
    loss.backward()
    return {k: p.grad.double().numpy() for k, p in model.named_parameters()}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tesselc")
    ap.add_argument("--tessel-run")
    ap.add_argument("--models", required=True)
    ap.add_argument("--grads", help="Tessel's gradients (safetensors) instead of running it")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--all", action="store_true", help="every parameter, not the 15 furthest")
    args = ap.parse_args()
    m = args.models
    images = np.load(os.path.join(m, "resnet50_b8_train_images.npy"))[0]
    labels = torch.from_numpy(np.load(os.path.join(m, "resnet50_b8_train_labels.npy"))[0])

    grads_path = args.grads
    if grads_path is None:
        if not (args.tesselc and args.tessel_run):
            sys.exit("compare_grads: give --grads, or --tesselc and --tessel-run")
        tmp = tempfile.mkdtemp(prefix="compare_grads.")
        art, grads_path = os.path.join(tmp, "rn.tsl"), os.path.join(tmp, "grads.safetensors")
        subprocess.run([args.tesselc, os.path.join(m, "resnet50_b8_train.onnx"), "--train",
                        "--loss", "cross_entropy", "--optimizer", "sgd", "--lr", "0.01",
                        "--momentum", "0.9", "--grads-program", "-o", art], check=True)
        subprocess.run([args.tessel_run, art, "--threads", str(args.threads), "--steps", "1",
                        "--data", "images=" + os.path.join(m, "resnet50_b8_train_images.npy"),
                        "--data", "labels=" + os.path.join(m, "resnet50_b8_train_labels.npy"),
                        "--grads", grads_path], check=True)
    tessel = read_safetensors(grads_path, only="F32")

    torch.set_num_threads(args.threads)
    base = torchvision.models.resnet50(weights=None)
    base.load_state_dict(torch.load(os.path.join(m, "resnet50_state.pt")))
    base.train()
    g64 = torch_grads(base, images, labels, torch.float64)
    g32 = torch_grads(base, images, labels, torch.float32)
    noise = np.random.default_rng(0).standard_normal(images.shape)
    g64n = torch_grads(base, images.astype(np.float64) * (1 + 1e-7 * noise), labels, torch.float64)

    missing = sorted(set(g64) - set(tessel))
    if missing:
        sys.exit(f"compare_grads: {grads_path} has no gradient for {', '.join(missing[:5])}")
    t = {}
    for k, ref in g64.items():
        g = tessel[k].astype(np.float64)
        if g.shape != ref.shape and g.T.shape == ref.shape:
            g = g.T  # the export stores fc.weight transposed
        if g.shape != ref.shape:
            sys.exit(f"compare_grads: {k}: Tessel's gradient is {list(g.shape)}, PyTorch's {list(ref.shape)}")
        t[k] = g

    def relmax(a, r):
        return np.abs(a - r).max() / max(np.abs(r).max(), 1e-30)

    rows = sorted(((relmax(t[k], g64[k]), relmax(g32[k], g64[k]), relmax(g64n[k], g64[k]), k)
                   for k in g64), reverse=True)
    print("max|g - g_f64| / max|g_f64| per parameter (the furthest first)")
    print(f"{'parameter':34} {'tessel':>9} {'torch f32':>9} {'f64+1e-7':>9}")
    for r in rows if args.all else rows[:15]:
        print(f"{r[3]:34} {r[0]:9.2e} {r[1]:9.2e} {r[2]:9.2e}")
    cols = np.array([r[:3] for r in rows])
    print(f"{'median over ' + str(len(rows)):34} " + " ".join(f"{c:9.2e}" for c in np.median(cols, 0)))

    ref = np.concatenate([g64[k].ravel() for k in g64])

    def whole(g):
        return np.linalg.norm(np.concatenate([g[k].ravel() for k in g64]) - ref) / np.linalg.norm(ref)

    wt, w32, w64n = whole(t), whole(g32), whole(g64n)
    print(f"whole gradient, |g - g_f64| / |g_f64|: tessel {wt:.2e}, torch f32 {w32:.2e}, f64+1e-7 {w64n:.2e}")
    if wt > 2 * w32:
        print("compare_grads: Tessel's gradients are further from f64 than twice PyTorch f32's")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
