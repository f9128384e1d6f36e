#!/usr/bin/env python3
"""Inference of a model kept in bf16 / fp16 beside PyTorch eager in the same
type and beside Tessel's own f32 run of the same weights, on this CPU:

    bench/run-half-compare [--hidden 1024 --layers 8 --seq 128 --threads 1,2]

A Llama of the given size (random weights, vocab 32000), cast with
.to(dtype) and exported by torch.onnx.export's default exporter; one batch of
--seq tokens. Prints ms per run (median of --repeat after a warm-up) and
peak RSS for each, and the logits' max difference from PyTorch's, relative
to max|logit|.
"""
import argparse
import os
import re
import sys
import tempfile
import time
import warnings

import numpy as np
import torch
import transformers as T

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import add_tool_args, run_measured, first_error  # noqa: E402

warnings.filterwarnings("ignore")


class LogitsOnly(torch.nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids):
        return self.model(input_ids=input_ids, use_cache=False)[0]


def torch_ms(model, ids, threads, repeat):
    torch.set_num_threads(threads)
    with torch.no_grad():
        model(ids)
        times = []
        for _ in range(repeat):
            t = time.perf_counter()
            out = model(ids)
            times.append((time.perf_counter() - t) * 1e3)
    return float(np.median(times)), out.float().numpy()


def tessel(args, art, ids_path, out_path, threads):
    cmd = [args.tessel_run, art, "--input", "input_ids=" + ids_path, "--output", out_path,
           "--threads", str(threads), "--repeat", str(args.repeat)]
    rc, log, rss = run_measured(cmd, dict(os.environ))
    if rc:
        return None, first_error(log), rss
    m = re.search(r"([0-9.]+) ms per run", log)
    return float(m.group(1)), None, rss


def main():
    ap = argparse.ArgumentParser()
    add_tool_args(ap, models=False)
    ap.add_argument("--hidden", type=int, default=1024)
    ap.add_argument("--layers", type=int, default=8)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--dtypes", default="bf16,f16")
    args = ap.parse_args()
    threads = [int(t) for t in args.threads.split(",")]
    work = tempfile.mkdtemp(prefix="half-compare-")
    torch.manual_seed(0)
    cfg = T.LlamaConfig(vocab_size=32000, hidden_size=args.hidden,
                        intermediate_size=args.hidden * 8 // 3 // 64 * 64,
                        num_hidden_layers=args.layers, num_attention_heads=args.hidden // 64,
                        num_key_value_heads=args.hidden // 64, max_position_embeddings=2048)
    base = LogitsOnly(T.LlamaForCausalLM(cfg)).eval()
    params = sum(p.numel() for p in base.parameters())
    ids = torch.randint(0, 32000, (1, args.seq), generator=torch.Generator().manual_seed(1))
    ids_path = os.path.join(work, "ids.npy")
    np.save(ids_path, ids.numpy())
    print("Llama hidden %d, %d layers, %.0f M parameters, 1 x %d tokens"
          % (args.hidden, args.layers, params / 1e6, args.seq))
    print("%-6s %-8s %10s %10s %10s %9s %9s" % ("dtype", "threads", "torch ms", "tessel ms",
                                            "f32 ms", "RSS MB", "max diff"))
    runs = [("f32", torch.float32)] + [(d, {"bf16": torch.bfloat16, "f16": torch.float16}[d])
                                       for d in args.dtypes.split(",")]
    f32_ms = {}
    for name, dtype in runs:
        model = LogitsOnly(T.LlamaForCausalLM(cfg)).eval()
        model.load_state_dict(base.state_dict())
        model = model.to(dtype)
        path = os.path.join(work, name + ".onnx")
        torch.onnx.export(model, (ids,), path, dynamo=True, input_names=["input_ids"],
                          output_names=["logits"])
        art = os.path.join(work, name + ".tsl")
        rc, log, _ = run_measured([args.tesselc, path, "-o", art], dict(os.environ))
        if rc:
            print("%-6s tesselc failed: %s" % (name, first_error(log)))
            continue
        for t in threads:
            ref_ms, ref = torch_ms(model, ids, t, args.repeat)
            out = os.path.join(work, "%s-%d.npy" % (name, t))
            ms, err, rss = tessel(args, art, ids_path, out, t)
            if ms is None:
                print("%-6s %-8d %10.1f %10s  %s" % (name, t, ref_ms, "n/a", err))
                continue
            got = np.load(out).astype(np.float64)
            diff = np.abs(got - ref).max() / np.abs(ref).max()
            if name == "f32":
                f32_ms[t] = ms
            print("%-6s %-8d %10.1f %10.1f %10s %9.0f %9.1e" % (
                name, t, ref_ms, ms, "%.1f" % f32_ms[t] if t in f32_ms else "", rss / 1024, diff))


if __name__ == "__main__":
    main()
