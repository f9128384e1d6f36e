#!/usr/bin/env python3
"""Benchmark: what tesselc holds in memory at real size (docs/scale.md).

For a model exported at real size (bench/export_llama.py: a 0.7 B Llama by
torch's default exporter, weights in external data), runs each tesselc
command of the table under GNU time and prints its peak resident set size
(file-backed pages count) and wall time beside the model's weight bytes and
a peer measured in the same run: onnx.load of the same model with its
external data (what reading the model costs the reference library), and
the artifact's bytes where one is written. With --check, each artifact that
runs on up to --ranks ranks is run and its logits compared with PyTorch's
(output.npy beside the model).

    scale_memory.py --tesselc build/bin/tesselc --tessel-run build/bin/tessel-run
                    --model DIR [--workdir W] [--check] [--ranks 4]

DIR holds model.onnx (+ model.onnx.data), input_input_ids.npy, output.npy
and shapes/model.onnx (export_llama.py --shapes-only).
"""
import argparse
import os
import re
import shutil
import subprocess
import sys

import numpy as np

COMMANDS = [
    ("one device", [], True, 1),
    ("tp=4 megatron", ["--mesh", "tp=4", "--plan=megatron"], True, 4),
    ("dp=2,tp=2 megatron", ["--mesh", "dp=2,tp=2", "--plan=megatron"], True, 4),
    ("pp=4 (inference)", ["--mesh", "pp=4"], True, 4),
    ("zero2 dp=4 --train --predict",
     ["--train", "--mesh", "dp=4", "--plugin", "zero2", "--predict"], False, 0),
    ("fsdp dp=4 --train", ["--train", "--mesh", "dp=4", "--plugin", "fsdp"],
     True, 0),
    ("shapes only: tp=4 --predict",
     ["SHAPES", "--mesh", "tp=4", "--plan=megatron", "--predict"], False, 0),
    ("shapes only: --plan=auto --train --devices 4 --emit=plan",
     ["SHAPES", "--train", "--plan=auto", "--devices", "4", "--explain",
      "--emit=plan", "-o", "PLAN"], False, 0),
]


def timed(cmd):
    p = subprocess.run(["/usr/bin/time", "-v"] + cmd, capture_output=True,
                       text=True)
    rss = re.search(r"Maximum resident set size \(kbytes\): (\d+)", p.stderr)
    wall = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (\S+)",
                     p.stderr)
    secs = 0.0
    if wall:
        for part in wall.group(1).split(":"):
            secs = secs * 60 + float(part)
    return p.returncode, int(rss.group(1)) * 1024 if rss else 0, secs, p


def du(path):
    total = 0
    for base, _, files in os.walk(path):
        for f in files:
            total += os.path.getsize(os.path.join(base, f))
    return total


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tesselc", required=True)
    ap.add_argument("--tessel-run", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--workdir", default="/tmp/scale-memory")
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--ranks", type=int, default=4)
    args = ap.parse_args()
    model = os.path.join(args.model, "model.onnx")
    shapes = os.path.join(args.model, "shapes", "model.onnx")
    weights = sum(os.path.getsize(os.path.join(args.model, f))
                  for f in os.listdir(args.model) if f.endswith(".data"))
    os.makedirs(args.workdir, exist_ok=True)
    gib = float(1 << 30)
    print("model %s: weights %.2f GiB in external data" % (model,
                                                           weights / gib))
    rc, rss, secs, _ = timed([sys.executable, "-c",
                              "import onnx, sys; onnx.load(sys.argv[1])",
                              model])
    print("peer: onnx.load with external data: peak RSS %.2f GiB, %.1f s"
          % (rss / gib, secs))
    print("%-58s %10s %8s %12s %s" % ("tesselc command", "peak RSS",
                                        "wall", "artifact", "check"))
    for name, extra, writes, ranks in COMMANDS:
        src = model
        extra = list(extra)
        if extra and extra[0] == "SHAPES":
            src, extra = shapes, extra[1:]
            if not os.path.exists(src):
                print("%-58s (no %s)" % (name, src))
                continue
        art = os.path.join(args.workdir, "a.tsl")
        shutil.rmtree(art, ignore_errors=True)
        extra = [os.path.join(args.workdir, "plan.yaml") if e == "PLAN"
                 else e for e in extra]
        cmd = [args.tesselc, src] + extra + (["-o", art] if writes else [])
        rc, rss, secs, p = timed(cmd)
        size = du(art) if writes and rc == 0 else 0
        check = ""
        if rc != 0:
            check = "FAILED: " + (p.stderr.strip().splitlines() or ["?"])[0]
        elif args.check and writes and 0 < ranks <= args.ranks:
            out = os.path.join(args.workdir, "out.npy")
            run = [args.tessel_run, art, "--input", "input_ids=" +
                   os.path.join(args.model, "input_input_ids.npy"),
                   "--output", out] + (["-n", str(ranks)] if ranks > 1 else [])
            r = subprocess.run(run, capture_output=True, text=True)
            if r.returncode:
                check = "run failed: " + r.stderr.strip()[-200:]
            else:
                diff = np.abs(np.load(out) - np.load(
                    os.path.join(args.model, "output.npy"))).max()
                check = "max |diff| from PyTorch %.2g" % diff
        print("%-58s %7.2f GiB %6.1f s %8.2f GiB %s"
              % (name, rss / gib, secs, size / gib, check), flush=True)
        shutil.rmtree(art, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
