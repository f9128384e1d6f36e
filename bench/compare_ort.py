#!/usr/bin/env python3
"""tessel-run against ONNX Runtime on the CPU, in one run, same thread counts.

For each model and thread count: the median time per run of each engine
(warm-up excluded), their ratio (ORT / Tessel: >= 1.0 means Tessel is no
slower), the peak RSS of each engine's process, and the max abs difference of
the outputs. Run bench/run-ort-compare, which sets up and calls this.

    python3 bench/compare_ort.py --tesselc BIN --tessel-run BIN --models DIR
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

import benchlib

MODELS = [  # (name, onnx file, input name, input .npy)
    ("gpt2-small seq128 b1", "gpt2_small.onnx", "input_ids", "gpt2_small_input_ids.npy"),
    ("resnet50 b1", "resnet50_b1.onnx", "images", "resnet50_b1_images.npy"),
    ("resnet50 b8", "resnet50_b8.onnx", "images", "resnet50_b8_images.npy"),
]

ORT_CHILD = r"""
import sys, time, resource
import numpy as np
import onnxruntime as ort
model, name, inp, threads, repeat, out = sys.argv[1:7]
so = ort.SessionOptions()
so.intra_op_num_threads = int(threads)
so.inter_op_num_threads = 1
so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
sess = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
x = np.load(inp)
feed = {name: x}
y = sess.run(None, feed)[0]  # warm-up
times = []
for _ in range(int(repeat)):
    t0 = time.perf_counter(); sess.run(None, feed); times.append((time.perf_counter() - t0) * 1e3)
np.save(out, y)
times.sort()
print("ms", times[len(times) // 2])
print("rss_kb", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def run_measured(cmd, env):
    """Runs cmd; returns (its log, peak RSS in KB of that process), or
    exits with the log when it fails."""
    rc, log, rss = benchlib.run_measured(cmd, env)
    if rc != 0:
        sys.exit("failed: %s\n%s" % (" ".join(cmd), log))
    return log, rss


def main():
    ap = argparse.ArgumentParser()
    benchlib.add_tool_args(ap)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--python", default=sys.executable,
                    help="a python that has onnxruntime and numpy")
    args = ap.parse_args()

    env = dict(os.environ)
    # BUILD-NOTES: the preset Haswell core type halves OpenBLAS; benchmarks unset it.
    env.pop("OPENBLAS_CORETYPE", None)
    env.pop("OPENBLAS_L2_SIZE", None)

    tmp = tempfile.mkdtemp(prefix="tessel-bench-")
    rows = []
    for label, onnx_file, in_name, in_npy in MODELS:
        model = os.path.join(args.models, onnx_file)
        inp = os.path.join(args.models, in_npy)
        if not os.path.exists(model):
            print("skip %s: %s missing" % (label, model))
            continue
        art = os.path.join(tmp, onnx_file.replace(".onnx", ".tsl"))
        subprocess.run([args.tesselc, model, "-o", art], check=True, env=env)
        for threads in [int(t) for t in args.threads.split(",")]:
            t_out = os.path.join(tmp, "tessel.npy")
            out, t_rss = run_measured(
                [args.tessel_run, art, "--input", "%s=%s" % (in_name, inp),
                 "--output", t_out, "--threads", str(threads),
                 "--repeat", str(args.repeat + 1)], env)
            t_ms = float(re.search(r"([\d.]+) ms per run", out).group(1))
            o_out = os.path.join(tmp, "ort.npy")
            out, o_rss = run_measured(
                [args.python, "-c", ORT_CHILD, model, in_name, inp, str(threads),
                 str(args.repeat), o_out], env)
            o_ms = float(re.search(r"ms ([\d.]+)", out).group(1))
            diff = float(np.max(np.abs(np.load(t_out) - np.load(o_out))))
            rows.append((label, threads, t_ms, o_ms, o_ms / t_ms, t_rss, o_rss, diff))

    print()
    print("| model | threads | Tessel ms | ORT ms | ORT/Tessel | Tessel RSS MB | ORT RSS MB | max abs diff |")
    print("|---|---|---|---|---|---|---|---|")
    for label, th, t_ms, o_ms, ratio, t_rss, o_rss, diff in rows:
        print("| %s | %d | %.1f | %.1f | %.2f | %.0f | %.0f | %.2e |" %
              (label, th, t_ms, o_ms, ratio, t_rss / 1024, o_rss / 1024, diff))


if __name__ == "__main__":
    main()
