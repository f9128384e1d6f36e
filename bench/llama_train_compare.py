#!/usr/bin/env python3
"""Benchmark: a Llama-shaped model (transformers' LlamaForCausalLM, 8 layers,
hidden 512, 8 heads, 4 KV heads, ff 1376, vocab 8192; seq 256, batch 4;
random weights), exported by torch.onnx.export's default exporter, trained
with AdamW by tessel-run beside PyTorch eager on the same weights and
batches, at 1 and 2 threads: median ms per step, peak RSS, losses.

    bench/run-llama-train-compare [--threads 1,2] [--steps 5] [--layers 8]

(the script makes its venv with torch, transformers, onnx and onnxscript
from PyPI in build/llama-bench-venv; tests never need it).
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

from benchlib import add_tool_args

ADAMW = dict(lr=1e-4, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01)

CHILD = r"""
import json, sys, time
import numpy as np, torch
import transformers as T
cfg, batches, threads, steps, out = sys.argv[1:6]
threads, steps = int(threads), int(steps)
torch.set_num_threads(threads); torch.set_num_interop_threads(1)
model = T.LlamaForCausalLM(T.LlamaConfig(**json.load(open(cfg + ".json"))))
model.load_state_dict(torch.load(cfg + ".pt"))
model.eval()  # no dropout in Llama; eval: the exported graph's mode
opt = torch.optim.AdamW(model.parameters(), **json.load(open(cfg + ".adamw.json")))
data = np.load(batches)
times, losses = [], []
for k in range(steps):
    b = torch.from_numpy(data[k % len(data)])
    t0 = time.perf_counter()
    logits = model(input_ids=b[:, :-1], use_cache=False).logits
    loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), b[:, 1:].reshape(-1))
    opt.zero_grad(); loss.backward(); opt.step()
    times.append((time.perf_counter() - t0) * 1e3); losses.append(float(loss))
np.save(out, np.array(losses, dtype=np.float32))
print("ms %.3f" % float(np.median(times[1:] if len(times) > 1 else times)))
"""


def measured(cmd, env):
    p = subprocess.run(["/usr/bin/time", "-f", "__RSS_KB__ %M"] + cmd,
                       capture_output=True, text=True, env=env)
    m = re.search(r"__RSS_KB__ (\d+)", p.stderr)
    return p.returncode, p.stdout + p.stderr, int(m.group(1)) if m else 0


def main():
    ap = argparse.ArgumentParser()
    add_tool_args(ap, models=False)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--layers", type=int, default=8)
    ap.add_argument("--seq", type=int, default=256)
    ap.add_argument("--batch", type=int, default=4)
    args = ap.parse_args()
    import torch
    import transformers as T

    env = dict(os.environ)
    env.pop("OPENBLAS_CORETYPE", None)
    env.pop("OPENBLAS_L2_SIZE", None)
    tmp = tempfile.mkdtemp(prefix="tessel-llama-bench-")
    config = dict(vocab_size=8192, hidden_size=512, intermediate_size=1376,
                  num_hidden_layers=args.layers, num_attention_heads=8,
                  num_key_value_heads=4, max_position_embeddings=args.seq)
    torch.manual_seed(0)
    model = T.LlamaForCausalLM(T.LlamaConfig(**config)).eval()
    cfg = os.path.join(tmp, "llama")
    json.dump(config, open(cfg + ".json", "w"))
    json.dump({k: list(v) if isinstance(v, tuple) else v for k, v in ADAMW.items()},
              open(cfg + ".adamw.json", "w"))
    torch.save(model.state_dict(), cfg + ".pt")

    class Logits(torch.nn.Module):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, input_ids):
            return self.m(input_ids=input_ids, use_cache=False).logits

    ids = torch.zeros(args.batch, args.seq, dtype=torch.long)
    onnx_path = os.path.join(tmp, "llama.onnx")
    torch.onnx.export(Logits(model), (ids,), onnx_path, input_names=["input_ids"],
                      output_names=["output"])
    g = torch.Generator().manual_seed(1)
    batches = os.path.join(tmp, "batches.npy")
    np.save(batches, torch.randint(0, config["vocab_size"],
                                   (args.steps, args.batch, args.seq + 1), generator=g).numpy())
    art = os.path.join(tmp, "llama.tsl")
    subprocess.run([args.tesselc, onnx_path, "--train", "--optimizer", "adamw",
                    "--lr", str(ADAMW["lr"]), "--betas", "0.9,0.999", "--eps", "1e-8",
                    "--weight-decay", str(ADAMW["weight_decay"]), "-o", art],
                   check=True, env=env)
    print("Llama %d layers, hidden 512, seq %d, batch %d, AdamW; default exporter; "
          "torch %s; median ms of steps 2..%d; load average %.1f on %d cores"
          % (args.layers, args.seq, args.batch, torch.__version__, args.steps,
             os.getloadavg()[0], os.cpu_count()))
    print("| threads | Tessel ms/step | PyTorch ms/step | PyTorch/Tessel | Tessel RSS MB "
          "| PyTorch RSS MB | max loss rel diff |")
    print("|---|---|---|---|---|---|---|")
    for th in (int(t) for t in args.threads.split(",")):
        t_losses = os.path.join(tmp, "t.npy")
        rc, log, t_rss = measured([args.tessel_run, art, "--steps", str(args.steps),
                                   "--threads", str(th), "--data-lm", batches,
                                   "--losses", t_losses], env)
        if rc != 0:
            sys.exit("tessel-run failed:\n" + log)
        t_ms = float(re.search(r"([\d.]+) ms per step \(median", log).group(1))
        o_losses = os.path.join(tmp, "o.npy")
        rc, log, o_rss = measured([sys.executable, "-c", CHILD, cfg, batches, str(th),
                                   str(args.steps), o_losses], env)
        if rc != 0:
            sys.exit("PyTorch failed:\n" + log)
        o_ms = float(re.search(r"ms ([\d.]+)", log).group(1))
        a, b = np.load(t_losses).astype(np.float64), np.load(o_losses).astype(np.float64)
        print("| %d | %.0f | %.0f | %.2f | %.0f | %.0f | %.2g |"
              % (th, t_ms, o_ms, o_ms / t_ms, t_rss / 1024, o_rss / 1024,
                 np.max(np.abs(a - b) / np.abs(b))))


if __name__ == "__main__":
    main()
