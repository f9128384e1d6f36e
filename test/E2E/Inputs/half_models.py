#!/usr/bin/env python3
"""Runs test/models/half's models with tesselc and tessel-run on
one device and sharded, and prints one line per check (half-models.test):

  NAME 1 device: max abs error E, bound B: ok     against PyTorch's output
  NAME tp=2: max abs error E, bound B: ok         against one device
  NAME weights R x the ONNX data: ok              the artifact's weight files

    half_models.py --tesselc PATH --tessel-run PATH --models DIR --work DIR
"""
import argparse
import json
import os
import subprocess
import sys

import numpy as np

# Tolerances relative to max|logit| (issue 45): PyTorch's half model on one
# device, and one device for the sharded runs.
TOL_REF = {"bfloat16": 2e-2, "float16": 1e-2}
TOL_SHARDED = 1e-2
RUNS = {"llama_bf16": ["tp=2", "pp=2", "dp=2"]}


TOOLS = {}


def run(cmd):
    cmd = [TOOLS.get(cmd[0], cmd[0])] + cmd[1:]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        sys.exit("%s failed:\n%s" % (" ".join(cmd), r.stderr))


def compare(label, out, ref, tol):
    a, b = np.load(out), np.load(ref)
    if a.shape != b.shape or a.dtype != b.dtype:
        print("%s: MISMATCH: %s %s against %s %s" % (label, a.dtype, a.shape, b.dtype, b.shape))
        return
    err = float(np.max(np.abs(a.astype(np.float64) - b.astype(np.float64))))
    bound = tol * float(np.max(np.abs(b.astype(np.float64))))
    print("%s: max abs error %.3e, bound %.3e: %s" % (label, err, bound, "ok" if err <= bound else "MISMATCH"))


def compile_and_run(model, inputs, work, tag, mesh=None, plan=None, ranks=1):
    art = os.path.join(work, tag + ".tsl")
    cmd = ["tesselc", model, "-o", art]
    if mesh:
        cmd += ["--mesh", mesh]
    if plan:
        cmd += ["--plan", plan]
    run(cmd)
    out = os.path.join(work, tag + ".npy")
    run(["tessel-run", art, "-n", str(ranks), "--input", "input_ids=" + inputs, "--output", out])
    return art, out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tesselc", required=True)
    ap.add_argument("--tessel-run", required=True)
    ap.add_argument("--models", required=True)
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    TOOLS.update({"tesselc": args.tesselc, "tessel-run": args.tessel_run})
    for name in ["llama_bf16", "llama_f16", "gpt2_bf16", "gpt2_f16", "encoder_f16_ts"]:
        d = os.path.join(args.models, name)
        with open(os.path.join(d, "meta.json")) as f:
            meta = json.load(f)
        model, inputs = os.path.join(d, "model.onnx"), os.path.join(d, "input_ids.npy")
        art, one = compile_and_run(model, inputs, args.work, name)
        compare(name + " 1 device", one, os.path.join(d, "output.npy"), TOL_REF[meta["dtype"]])
        for mesh in RUNS.get(name, ["tp=2"]):
            plan = {"tp": "megatron", "pp": None, "dp": "dp"}[mesh.split("=")[0]]
            _, out = compile_and_run(model, inputs, args.work, name + "_" + mesh.replace("=", ""),
                                     mesh=mesh, plan=plan, ranks=2)
            compare("%s %s" % (name, mesh), out, one, TOL_SHARDED)
        if name == "llama_bf16":
            data = os.path.getsize(os.path.join(d, "model.onnx.data"))
            weights = sum(os.path.getsize(os.path.join(art, f)) for f in os.listdir(art)
                          if f.endswith(".safetensors"))
            ratio = weights / data
            print("%s weights %.3fx the ONNX data: %s" % (name, ratio, "ok" if ratio <= 1.1 else "MISMATCH"))


if __name__ == "__main__":
    main()
