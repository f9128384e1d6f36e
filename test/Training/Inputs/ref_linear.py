#!/usr/bin/python3
"""An independent NumPy reference for the training options on a linear model.

  ref_linear.py gen MODEL.onnx OUT_DIR STEPS
      writes OUT_DIR/x.npy [STEPS, 8, 256], OUT_DIR/targets.npy
      [STEPS, 8, 10] and OUT_DIR/labels.npy [STEPS, 8] (int64, some -100):
      the batches of each step.
  ref_linear.py check MODEL.onnx OUT_DIR LOSSES.npy [--optimizer sgd|adam|adamw]
          [--lr F] [--momentum F] [--nesterov] [--weight-decay F] [--lr-schedule S]
          [--warmup-steps N] [--total-steps N] [--clip-grad-norm F]
          [--microbatches K] [--loss mse|cross_entropy]
      trains y = x fc3.weight^T + fc3.bias, loss mean((y - t)^2) or the
      cross-entropy of y against labels (-100 ignored), in float64
      with gradients written by hand, PyTorch's SGD / Adam / AdamW, LambdaLR
      schedules (transformers' cosine with warmup) and clip_grad_norm_, and
      compares the step losses with LOSSES.npy (1e-4 relative).
"""
import argparse
import math
import os
import sys

import numpy as np


def load_fc3(model):
    import onnx
    from onnx import numpy_helper
    init = {i.name: numpy_helper.to_array(i)
            for i in onnx.load(model).graph.initializer}
    return (init["fc3.weight"].astype(np.float64),
            init["fc3.bias"].astype(np.float64))


def gen(model, out, steps):
    rng = np.random.default_rng(7)
    x = rng.standard_normal((steps, 8, 256)).astype(np.float32)
    t = rng.standard_normal((steps, 8, 10)).astype(np.float32)
    np.save(os.path.join(out, "x.npy"), x)
    np.save(os.path.join(out, "targets.npy"), t)
    # Ignored positions spread unevenly, so that the mean of microbatch
    # means differs from the batch's mean.
    labels = rng.integers(0, 10, (steps, 8)).astype(np.int64)
    labels[:, [1, 5, 6]] = -100
    np.save(os.path.join(out, "labels.npy"), labels)


def factor(a, k):
    """LambdaLR's factor for the k-th update (k = 0, 1, ...)."""
    w = max(1, a.warmup_steps)
    if a.lr_schedule == "constant":
        return 1.0
    if k < a.warmup_steps:
        return k / w
    if a.lr_schedule == "linear-warmup":
        return 1.0
    if k >= a.total_steps:
        return 0.0
    p = (k - a.warmup_steps) / max(1, a.total_steps - a.warmup_steps)
    return max(0.0, 0.5 * (1.0 + math.cos(math.pi * p)))


def loss_and_grads(W, b, x, t):
    y = x @ W.T + b
    d = y - t
    loss = np.mean(d * d)
    dy = 2.0 * d / d.size
    return loss, dy.T @ x, dy.sum(0)


def ce_loss_and_grads(W, b, x, labels):
    y = x @ W.T + b
    z = y - y.max(1, keepdims=True)
    lsm = z - np.log(np.exp(z).sum(1, keepdims=True))
    valid = labels != -100
    count = valid.sum()
    safe = np.where(valid, labels, 0)
    picked = lsm[np.arange(len(y)), safe]
    loss = -np.sum(picked * valid) / count
    onehot = np.eye(y.shape[1])[safe]
    dy = (np.exp(lsm) - onehot) * valid[:, None] / count
    return loss, dy.T @ x, dy.sum(0)


def check(a):
    W, b = load_fc3(a.model)
    xs = np.load(os.path.join(a.dir, "x.npy")).astype(np.float64)
    if a.loss == "mse":
        ts = np.load(os.path.join(a.dir, "targets.npy")).astype(np.float64)
        fwd = loss_and_grads
    else:
        ts = np.load(os.path.join(a.dir, "labels.npy"))
        fwd = ce_loss_and_grads
    got = np.load(a.losses).astype(np.float64)
    params = [W, b]
    state = [dict() for _ in params]
    want = []
    for k in range(len(got)):
        x, t = xs[k % len(xs)], ts[k % len(ts)]
        # Gradient accumulation: loss / K per microbatch.
        K = a.microbatches
        loss, grads = 0.0, [np.zeros_like(p) for p in params]
        for m in range(K):
            rows = slice(m * len(x) // K, (m + 1) * len(x) // K)
            l, gW, gb = fwd(params[0], params[1], x[rows], t[rows])
            loss += l / K
            grads[0] += gW / K
            grads[1] += gb / K
        want.append(loss)
        if a.clip_grad_norm > 0:
            norm = math.sqrt(sum(float(np.sum(g * g)) for g in grads))
            coef = min(1.0, a.clip_grad_norm / (norm + 1e-6))
            print("step %d: grad norm %.4f, clip coef %.4f" % (k, norm, coef))
            grads = [g * coef for g in grads]
        lr = a.lr * factor(a, k)
        for p, g, s in zip(params, grads, state):
            if a.optimizer == "sgd":
                d = g + a.weight_decay * p
                if a.momentum:
                    s["buf"] = a.momentum * s.get("buf", 0.0) + d if "buf" in s else d
                    d = d + a.momentum * s["buf"] if a.nesterov else s["buf"]
                p -= lr * d
            else:  # adam (L2 weight decay) or adamw (decoupled)
                step = s["step"] = s.get("step", 0) + 1
                if a.optimizer == "adam":
                    g = g + a.weight_decay * p
                else:
                    p *= 1.0 - lr * a.weight_decay
                s["m"] = 0.9 * s.get("m", 0.0) + 0.1 * g
                s["v"] = 0.999 * s.get("v", 0.0) + 0.001 * g * g
                bc1, bc2 = 1 - 0.9 ** step, 1 - 0.999 ** step
                denom = np.sqrt(s["v"]) / math.sqrt(bc2) + 1e-8
                p -= (lr / bc1) * s["m"] / denom
    want = np.array(want)
    rel = np.max(np.abs(got - want) / np.abs(want))
    print("losses", " ".join("%.6f" % v for v in got))
    print("numpy ", " ".join("%.6f" % v for v in want))
    print("worst step rel %.2e" % rel)
    assert rel <= 1e-4, "off by %.2e" % rel
    # The trajectory must move: the options under test change it.
    assert len(set(np.round(got, 6))) == len(got), "the loss does not move"


def main():
    if sys.argv[1] == "gen":
        gen(sys.argv[2], sys.argv[3], int(sys.argv[4]))
        return
    ap = argparse.ArgumentParser()
    ap.add_argument("cmd")
    ap.add_argument("model")
    ap.add_argument("dir")
    ap.add_argument("losses")
    ap.add_argument("--optimizer", default="adamw")
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--momentum", type=float, default=0.0)
    ap.add_argument("--nesterov", action="store_true")
    # torch.optim's defaults: AdamW 0.01, Adam and SGD 0.
    ap.add_argument("--weight-decay", type=float, default=None)
    ap.add_argument("--lr-schedule", default="constant")
    ap.add_argument("--warmup-steps", type=int, default=0)
    ap.add_argument("--total-steps", type=int, default=0)
    ap.add_argument("--clip-grad-norm", type=float, default=0.0)
    ap.add_argument("--microbatches", type=int, default=1)
    ap.add_argument("--loss", default="mse")
    a = ap.parse_args()
    if a.weight_decay is None:
        a.weight_decay = 0.01 if a.optimizer == "adamw" else 0.0
    check(a)


if __name__ == "__main__":
    main()
