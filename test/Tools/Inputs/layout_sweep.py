#!/usr/bin/env python3
"""The layout sweep (issue 42's batch-1 class): compiles small language
models exported at batch 1, 2 and 3 (test/models/batches) with every
built-in plan and plugin over meshes with dp, tp, pp in SIZES, for
inference and training, and asserts that each compile ends in an artifact
or in one clear error (exit 1 and a line with "error:" that says what),
never a signal, a hang, an internal error or an empty message. The
artifacts of inference layouts on at most --run-ranks ranks are run and
compared with PyTorch's logits (output.npy beside each model).

    layout_sweep.py --tesselc T --tessel-run R --models DIR --workdir W
                    [--sizes 1,2,3,4] [--run-ranks 4] [--jobs 2]

Prints one line per outcome class and each failure; exits 1 on any.
"""
import argparse
import concurrent.futures as futures
import itertools
import os
import shutil
import subprocess
import sys

import numpy as np

PLANS = ["dp", "megatron"]
PLUGINS = ["ddp", "zero1", "zero2", "fsdp", "gemini"]


def layouts(sizes, train):
    """(name, args) for every plan/plugin over every mesh."""
    for dp, tp, pp in itertools.product(sizes, repeat=3):
        mesh = "dp=%d,tp=%d,pp=%d" % (dp, tp, pp)
        for plan in PLANS:
            if plan == "dp" and tp > 1:
                continue  # dp names no tp split: megatron covers tp
            yield ("%s %s" % (plan, mesh),
                   ["--mesh", mesh, "--plan=" + plan])
        if not train:
            continue
        if tp == 1 and pp == 1:
            for plugin in PLUGINS:
                yield ("%s dp=%d" % (plugin, dp),
                       ["--mesh", "dp=%d" % dp, "--plugin", plugin])
        yield ("hybrid %s" % mesh,
               ["--plugin", "hybrid:dp=%d,tp=%d,pp=%d" % (dp, tp, pp)])


def compile_one(tesselc, model, args, out):
    cmd = [tesselc, model, "-o", out] + args
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    except subprocess.TimeoutExpired:
        return "hang", "no exit in 300 s: " + " ".join(cmd)
    text = p.stdout + p.stderr
    if p.returncode == 0:
        return "ok", ""
    if p.returncode < 0 or p.returncode > 1:
        return "signal", "exit %d: %s\n%s" % (p.returncode, " ".join(cmd),
                                             text[-2000:])
    errors = [l for l in text.splitlines() if "error:" in l]
    if not errors or any("internal" in l.lower() or "assert" in l.lower()
                         for l in errors):
        return "unclear", "%s\n%s" % (" ".join(cmd), text[-2000:])
    return "error", errors[0]


def run_one(tessel_run, art, model_dir, ranks, out):
    cmd = [tessel_run, art, "--input",
           "input_ids=" + os.path.join(model_dir, "input_input_ids.npy"),
           "--output", out]
    if ranks > 1:
        cmd += ["-n", str(ranks)]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    except subprocess.TimeoutExpired:
        return "run hang: " + " ".join(cmd)
    if p.returncode != 0:
        return "run failed (exit %d): %s\n%s" % (p.returncode, " ".join(cmd),
                                                p.stderr[-2000:])
    got = np.load(out)
    want = np.load(os.path.join(model_dir, "output.npy"))
    if got.shape != want.shape:
        return "shape %s, PyTorch's %s: %s" % (got.shape, want.shape,
                                               " ".join(cmd))
    diff = float(np.abs(got - want).max())
    if not diff <= 2e-4:
        return "max |diff| %.3g from PyTorch: %s" % (diff, " ".join(cmd))
    return ""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tesselc", required=True)
    ap.add_argument("--tessel-run", required=True)
    ap.add_argument("--models", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--sizes", default="1,2,3,4")
    ap.add_argument("--run-ranks", type=int, default=4)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--only", default="", help="models, comma-separated")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    shutil.rmtree(args.workdir, ignore_errors=True)
    os.makedirs(args.workdir)
    names = sorted(d for d in os.listdir(args.models)
                   if os.path.isfile(os.path.join(args.models, d,
                                                  "model.onnx")))
    if args.only:
        names = [n for n in names if n in args.only.split(",")]
    jobs = []
    for name in names:
        for train in (False, True):
            for lname, largs in layouts(sizes, train):
                if train:
                    largs = ["--train"] + largs
                jobs.append((name, train, lname, largs))

    def work(i_job):
        i, (name, train, lname, largs) = i_job
        model_dir = os.path.join(args.models, name)
        art = os.path.join(args.workdir, "a%d.tsl" % i)
        kind, detail = compile_one(args.tesselc,
                                   os.path.join(model_dir, "model.onnx"),
                                   largs, art)
        ran = False
        if kind == "ok" and not train:
            mesh = largs[largs.index("--mesh") + 1]
            ranks = 1
            for axis in mesh.split(","):
                ranks *= int(axis.split("=")[1])
            if ranks <= args.run_ranks:
                why = run_one(args.tessel_run, art, model_dir, ranks,
                              os.path.join(args.workdir, "o%d.npy" % i))
                ran = True
                if why:
                    kind, detail = "wrong", why
        shutil.rmtree(art, ignore_errors=True)
        what = "%s %s %s" % (name, "train" if train else "infer", lname)
        return kind, what, detail, ran

    counts, failures, errors, runs = {}, [], {}, 0
    with futures.ThreadPoolExecutor(args.jobs) as pool:
        for kind, what, detail, ran in pool.map(work, enumerate(jobs)):
            counts[kind] = counts.get(kind, 0) + 1
            runs += ran
            if kind == "error":
                errors.setdefault(detail.split("error:", 1)[-1][:90],
                                  []).append(what)
            elif kind != "ok":
                failures.append("%s: %s: %s" % (kind, what, detail))
    print("layout sweep: %d compiles over %s: %s; %d artifacts run against "
          "PyTorch" % (len(jobs), ",".join(names),
                       ", ".join("%s %d" % kv for kv in sorted(counts.items())),
                       runs))
    for message, whats in sorted(errors.items(), key=lambda e: -len(e[1])):
        print("  error x%d (e.g. %s):%s" % (len(whats), whats[0], message))
    for f in failures:
        print("FAIL", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
