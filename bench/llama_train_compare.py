#!/usr/bin/env python3
"""Benchmark: a Llama-shaped model (transformers' LlamaForCausalLM, 8 layers,
hidden 512, 8 heads, 4 KV heads, ff 1376, vocab 8192; seq 256, batch 4;
random weights), exported by torch.onnx.export's default exporter, trained
with AdamW by tessel-run beside PyTorch eager (its default attention, SDPA)
on the same weights and batches, at 1 and 2 threads: median ms per step,
peak RSS, losses.

    bench/run-llama-train-compare [--threads 1,2] [--steps 5] [--layers 8]
        [--hidden 512 --heads 8 --kv-heads 4 --ff 1376] [--seq 256[,2048]]
        [--compare-unfused] [--dtype bf16]

--dtype bf16 exports the model cast to bf16 (Tessel trains it on f32
master weights: docs/precision.md) and trains PyTorch's f32 model under
torch.autocast("cpu", dtype=torch.bfloat16), the usual way to train in
bf16 with PyTorch; the losses then differ by the two layouts' roundings.

Several --seq values give one table row per length, so that the memory
growth with the sequence shows beside PyTorch's. --compare-unfused adds a
row of Tessel compiled with --no-fuse-attention --no-fuse-elementwise
(docs/fusion.md).

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
cfg, batches, threads, steps, out, dtype = sys.argv[1:7]
threads, steps = int(threads), int(steps)
import contextlib
autocast = (lambda: torch.autocast("cpu", dtype=torch.bfloat16)) if dtype == "bf16" \
    else contextlib.nullcontext
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
    with autocast():
        logits = model(input_ids=b[:, :-1], use_cache=False).logits
    loss = torch.nn.functional.cross_entropy(logits.float().reshape(-1, logits.shape[-1]),
                                             b[:, 1:].reshape(-1))
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
    ap.add_argument("--seq", default="256", help="one length or several, comma-separated")
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--hidden", type=int, default=512)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--kv-heads", type=int, default=4)
    ap.add_argument("--ff", type=int, default=1376)
    ap.add_argument("--vocab", type=int, default=8192)
    ap.add_argument("--dtype", choices=["f32", "bf16"], default="f32",
                    help="bf16: Tessel trains the bf16 export, PyTorch under autocast")
    ap.add_argument("--compare-unfused", action="store_true",
                    help="also time Tessel compiled without its fusions")
    args = ap.parse_args()
    seqs = [int(x) for x in args.seq.split(",")]
    print("| seq | threads | Tessel ms/step | PyTorch ms/step | PyTorch/Tessel | Tessel RSS MB "
          "| PyTorch RSS MB | max loss rel diff |")
    print("|---|---|---|---|---|---|---|---|")
    for seq in seqs:
        run_one(args, seq)


def run_one(args, seq):
    import torch
    import transformers as T

    env = dict(os.environ)
    env.pop("OPENBLAS_CORETYPE", None)
    env.pop("OPENBLAS_L2_SIZE", None)
    tmp = tempfile.mkdtemp(prefix="tessel-llama-bench-")
    config = dict(vocab_size=args.vocab, hidden_size=args.hidden,
                  intermediate_size=args.ff, num_hidden_layers=args.layers,
                  num_attention_heads=args.heads, num_key_value_heads=args.kv_heads,
                  max_position_embeddings=seq)
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

    ids = torch.zeros(args.batch, seq, dtype=torch.long)
    onnx_path = os.path.join(tmp, "llama.onnx")
    exported = Logits(model)
    if args.dtype == "bf16":
        exported = Logits(T.LlamaForCausalLM(T.LlamaConfig(**config)).eval())
        exported.m.load_state_dict(model.state_dict())
        exported = exported.to(torch.bfloat16).eval()
    torch.onnx.export(exported, (ids,), onnx_path, input_names=["input_ids"],
                      output_names=["output"])
    g = torch.Generator().manual_seed(1)
    batches = os.path.join(tmp, "batches.npy")
    np.save(batches, torch.randint(0, config["vocab_size"],
                                   (args.steps, args.batch, seq + 1), generator=g).numpy())
    variants = [("", [])]
    if args.compare_unfused:
        variants.append((" unfused", ["--no-fuse-attention", "--no-fuse-elementwise"]))
    arts = []
    for name, flags in variants:
        art = os.path.join(tmp, "llama%s.tsl" % name.strip())
        subprocess.run([args.tesselc, onnx_path, "--train", "--optimizer", "adamw",
                        "--lr", str(ADAMW["lr"]), "--betas", "0.9,0.999", "--eps", "1e-8",
                        "--weight-decay", str(ADAMW["weight_decay"]), "-o", art] + flags,
                       check=True, env=env)
        arts.append((name, art))
    print("<!-- Llama %d layers, hidden %d, %d/%d heads, seq %d, batch %d, %s, AdamW; default "
          "exporter; torch %s; median ms of steps 2..%d; load average %.1f on %d cores -->"
          % (args.layers, args.hidden, args.heads, args.kv_heads, seq, args.batch, args.dtype,
             torch.__version__, args.steps, os.getloadavg()[0], os.cpu_count()))
    for th in (int(t) for t in args.threads.split(",")):
        o_losses = os.path.join(tmp, "o.npy")
        rc, log, o_rss = measured([sys.executable, "-c", CHILD, cfg, batches, str(th),
                                   str(args.steps), o_losses, args.dtype], env)
        if rc != 0:
            sys.exit("PyTorch failed:\n" + log)
        o_ms = float(re.search(r"ms ([\d.]+)", log).group(1))
        for name, art in arts:
            t_losses = os.path.join(tmp, "t.npy")
            rc, log, t_rss = measured([args.tessel_run, art, "--steps", str(args.steps),
                                       "--threads", str(th), "--data-lm", batches,
                                       "--losses", t_losses], env)
            if rc != 0:
                sys.exit("tessel-run failed:\n" + log)
            t_ms = float(re.search(r"([\d.]+) ms per step \(median", log).group(1))
            a, b = np.load(t_losses).astype(np.float64), np.load(o_losses).astype(np.float64)
            print("| %d%s | %d | %.0f | %.0f | %.2f | %.0f | %.0f | %.2g |"
                  % (seq, name, th, t_ms, o_ms, o_ms / t_ms, t_rss / 1024, o_rss / 1024,
                     np.max(np.abs(a - b) / np.abs(b))))


if __name__ == "__main__":
    main()
