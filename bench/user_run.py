#!/usr/bin/env python3
"""Benchmark: the training run of a user, end to end, beside PyTorch.

A char-level GPT-2 (transformers' GPT2LMHeadModel: 4 layers, width 256, 4
heads, a byte vocabulary of the text's distinct bytes, tied head, 128
positions; random weights, seed 0), exported by torch.onnx.export's default
exporter at batch 8 x seq 128, trained on text (Python's own library
sources) with AdamW 1e-3 (weight decay 0.01), a cosine schedule with 20
warmup steps and gradient clipping at 1.0, by tessel-run and by PyTorch
eager on the same batches from the same weights (PyTorch at 1 and at 2
threads: its own noise). Then, from Tessel's side: eval on held-out rows
(tessel-run --eval --resume), the weights (--save-weights) loaded into a
fresh GPT2LMHeadModel with load_state_dict(strict=True) and evaluated by
PyTorch, and the exported model (--export-onnx) evaluated by ONNX Runtime.

    bench/run-user-run [--steps 100] [--no-clip] [--constant-lr]

prints the worst loss difference to PyTorch over the run (and at a few
steps), PyTorch's own 1-vs-2-thread difference, and the three eval losses.
"""
import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

from benchlib import add_tool_args

BATCH, SEQ, WARMUP, VAL_ROWS = 8, 128, 20, 4

CHILD = r"""
import json, sys, math
import numpy as np, torch
import transformers as T
cfg_path, batches, threads, out, clip, schedule, noise = sys.argv[1:8]
noise = float(noise)
gen = torch.Generator().manual_seed(1234)
torch.set_num_threads(int(threads)); torch.set_num_interop_threads(1)
cfg = json.load(open(cfg_path))
model = T.GPT2LMHeadModel(T.GPT2Config(**cfg["config"]))
model.load_state_dict(torch.load(cfg["weights"]))
model.eval()
data = np.load(batches)
steps = data.shape[0]
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)  # PyTorch's defaults: wd 0.01
if schedule == "cosine":
    sched = T.get_cosine_schedule_with_warmup(opt, cfg["warmup"], steps)
else:
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda k: 1.0)
losses, norms = [], []
for k in range(steps):
    b = torch.from_numpy(data[k])
    logits = model(input_ids=b[:, :-1], use_cache=False).logits
    loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), b[:, 1:].reshape(-1))
    opt.zero_grad(); loss.backward()
    if noise > 0:
        # Each gradient element moved by about `noise` of itself: what
        # another order of the same f32 sums gives (f32's epsilon: 1.2e-7).
        for p in model.parameters():
            p.grad.mul_(1 + noise * torch.randn(p.grad.shape, generator=gen))
    if float(clip) > 0:
        norms.append(float(torch.nn.utils.clip_grad_norm_(model.parameters(), float(clip))))
    opt.step(); sched.step()
    losses.append(float(loss))
np.save(out, np.array(losses, dtype=np.float64))
np.save(out + ".norms.npy", np.array(norms, dtype=np.float32))
"""

EVAL = r"""
import json, sys
import numpy as np, torch
import transformers as T
from safetensors.torch import load_file
cfg_path, weights, val = sys.argv[1:4]
cfg = json.load(open(cfg_path))
model = T.GPT2LMHeadModel(T.GPT2Config(**cfg["config"]))
model.load_state_dict(load_file(weights), strict=True)
model.eval()
data = np.load(val)
with torch.no_grad():
    ls = []
    for k in range(data.shape[0]):
        b = torch.from_numpy(data[k])
        logits = model(input_ids=b[:, :-1], use_cache=False).logits
        ls.append(float(torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), b[:, 1:].reshape(-1))))
print("%.9f" % float(np.mean(ls)))
"""


def text_ids(nbytes):
    """Python's library sources as bytes, mapped to a dense vocabulary."""
    files = sorted(glob.glob(os.path.join(os.path.dirname(os.__file__), "*.py")))
    raw = b""
    for f in files:
        raw += open(f, "rb").read()
        if len(raw) >= nbytes:
            break
    raw = np.frombuffer(raw[:nbytes], np.uint8)
    vocab = np.unique(raw)
    lut = np.zeros(256, np.int64)
    lut[vocab] = np.arange(len(vocab))
    return lut[raw], len(vocab)


def run(cmd, env=None, stdout_only=False):
    p = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, env=env)
    if p.returncode != 0:
        sys.exit("failed: %s\n%s%s" % (" ".join(map(str, cmd)), p.stdout, p.stderr))
    return p.stdout if stdout_only else p.stdout + p.stderr


def main():
    ap = argparse.ArgumentParser()
    add_tool_args(ap, models=False, threads=False)
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--no-clip", action="store_true")
    ap.add_argument("--constant-lr", action="store_true")
    ap.add_argument("--keep", default="", help="work in this directory")
    args = ap.parse_args()
    import torch
    import transformers as T

    work = args.keep or tempfile.mkdtemp(prefix="tessel-user-run-")
    os.makedirs(work, exist_ok=True)
    n = (args.steps + VAL_ROWS) * BATCH * (SEQ + 1)
    ids, vocab = text_ids(n)
    rows = ids.reshape(args.steps + VAL_ROWS, BATCH, SEQ + 1)
    np.save(os.path.join(work, "train.npy"), rows[:args.steps])
    np.save(os.path.join(work, "val.npy"), rows[args.steps:])

    cfg = dict(vocab_size=int(vocab), n_embd=256, n_layer=4, n_head=4, n_positions=SEQ,
               resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
    torch.manual_seed(0)
    model = T.GPT2LMHeadModel(T.GPT2Config(**cfg)).eval()
    torch.save(model.state_dict(), os.path.join(work, "init.pt"))
    json.dump({"config": cfg, "weights": os.path.join(work, "init.pt"), "warmup": WARMUP},
              open(os.path.join(work, "cfg.json"), "w"))
    onnx_path = os.path.join(work, "model.onnx")

    # The model itself (PyTorch's parameter names), logits its one output.
    model.config.use_cache = False
    ex = torch.from_numpy(rows[0][:, :-1].copy())
    torch.onnx.export(model, (ex,), onnx_path, input_names=["input_ids"],
                      output_names=["logits"])

    clip = 0.0 if args.no_clip else 1.0
    schedule = "constant" if args.constant_lr else "cosine"
    # PyTorch, 1 and 2 threads.
    # PyTorch at 1 thread, at 2, and at 1 with every gradient element moved
    # by 6e-8 of itself (half an f32 ulp, seeded): how far the dynamics
    # carry a rounding difference of the gradients.
    torch_losses = {}
    for tag, threads, noise in (("1", 1, 0.0), ("2", 2, 0.0), ("noise", 1, 6e-8)):
        out = os.path.join(work, "torch-%s.npy" % tag)
        run([sys.executable, "-c", CHILD, os.path.join(work, "cfg.json"),
             os.path.join(work, "train.npy"), threads, out, clip, schedule, noise])
        torch_losses[tag] = np.load(out)

    art = os.path.join(work, "m.tsl")
    flags = ["--train", "--lr", "1e-3", "--eval-program"]
    if not args.constant_lr:
        flags += ["--lr-schedule", "cosine", "--warmup-steps", str(WARMUP),
                  "--total-steps", str(args.steps)]
    if clip > 0:
        flags += ["--clip-grad-norm", str(clip)]
    run([args.tesselc, onnx_path, "-o", art] + flags)
    ck = os.path.join(work, "ck")
    weights = os.path.join(work, "weights.safetensors")
    trained = os.path.join(work, "trained.onnx")
    env = dict(os.environ, OMP_NUM_THREADS="1")
    run([args.tessel_run, art, "--threads", "1", "--steps", str(args.steps),
         "--data-lm", os.path.join(work, "train.npy"), "--losses",
         os.path.join(work, "tessel.npy"), "--metrics", os.path.join(work, "metrics.jsonl"),
         "--save", ck, "--save-weights", weights, "--export-onnx", trained,
         "--log-every", "1000"], env)
    tessel = np.load(os.path.join(work, "tessel.npy")).astype(np.float64)

    def worst(a, b):
        d = np.abs(a - b)
        return float(d.max()), int(d.argmax()) + 1

    t1, t2, tn = torch_losses["1"], torch_losses["2"], torch_losses["noise"]
    print("run: %d steps, vocab %d, %s lr, clip %s" % (args.steps, vocab, schedule, clip or "none"))
    print("loss at step 1: tessel %.7f  torch %.7f" % (tessel[0], t1[0]))
    print("worst |tessel - torch(1 thread)| = %.3g (step %d)" % worst(tessel, t1))
    print("worst |torch(2 threads) - torch(1 thread)| = %.3g (step %d)" % worst(t2, t1))
    print("worst |torch(gradients +-6e-8) - torch(1 thread)| = %.3g (step %d)" % worst(tn, t1))
    for k in (10, 20, 50, args.steps):
        if k <= args.steps:
            print("  step %3d: tessel %+.3g, torch 2 threads %+.3g, torch +-6e-8 %+.3g" % (
                k, tessel[k - 1] - t1[k - 1], t2[k - 1] - t1[k - 1], tn[k - 1] - t1[k - 1]))

    # Eval three ways on the held-out rows.
    val = os.path.join(work, "val.npy")
    line = run([args.tessel_run, art, "--eval", "--data-lm", val, "--resume", ck])
    tessel_eval = float(line.split("eval loss ")[1].split()[0])
    torch_eval = float(run([sys.executable, "-c", EVAL, os.path.join(work, "cfg.json"),
                            weights, val], stdout_only=True).strip().splitlines()[-1])
    ort_eval = None
    try:
        import onnxruntime as ort
        s = ort.InferenceSession(trained)
        ls = []
        for b in np.load(val):
            z = s.run(None, {"input_ids": b[:, :-1]})[0].astype(np.float64)
            z = z - z.max(-1, keepdims=True)
            lp = z - np.log(np.exp(z).sum(-1, keepdims=True))
            ls.append(-np.take_along_axis(lp, b[:, 1:, None], -1).mean())
        ort_eval = float(np.mean(ls))
    except ImportError:
        pass
    print("eval after %d steps: tessel-run --eval %.7f, --save-weights in transformers "
          "(strict=True) %.7f, --export-onnx in ONNX Runtime %s" % (
              args.steps, tessel_eval, torch_eval,
              "%.7f" % ort_eval if ort_eval is not None else "(onnxruntime missing)"))
    print("work directory: %s" % work)


if __name__ == "__main__":
    main()
