#!/usr/bin/env python3
"""Runs test/models/half's models (bf16, fp16 and f64) with tesselc and
tessel-run on one device and sharded, and prints one line per check
(half-models.test):

  NAME 1 device: max abs error E, bound B: ok     against PyTorch's output
  NAME tp=2: max abs error E, bound B: ok         against one device
  NAME weights R x the ONNX data: ok              the artifact's weight files
  NAME unfused: max abs error 0, bound 0: ok      --no-fuse-elementwise, bit for bit

and with --train, for the models with a train/ reference (make.py's
train_reference: AdamW on f32 masters of the half model):

  NAME train 1 device: 5 losses within R relative: ok
  NAME train unfused: the same losses: ok         --no-fuse-elementwise, bit for bit

    half_models.py --tesselc PATH --tessel-run PATH --models DIR --work DIR [--train]
"""
import argparse
import json
import os
import subprocess
import sys

import numpy as np

# Tolerances relative to max|logit| (issue 45): PyTorch's half model on one
# device, and one device for the sharded runs.
# f64 is computed in f64: within 1e-12 of PyTorch's f64 model, where f32
# arithmetic would be some 1e-7 away. But transformers' Llama computes its
# RMSNorm in f32 whatever the model's type (hidden_states.to(float32), three
# Casts in the export), so its reference holds f32 roundings: 1e-6 there.
TOL_REF = {"bfloat16": 2e-2, "float16": 1e-2, "float64": 1e-12}
TOL_REF_OF = {"llama_f64": 1e-6}
TOL_SHARDED = {"bfloat16": 1e-2, "float16": 1e-2, "float64": 1e-12}
RUNS = {"llama_bf16": ["tp=2", "pp=2", "dp=2"], "llama_f64": ["tp=2", "pp=2", "dp=2"]}
# Five losses against PyTorch's AMP-style reference: each op's half
# rounding may fall the other way where f32 sums differ in order.
TOL_TRAIN = 1e-3
SHARDED_TRAIN = {"dp=2": ["--mesh", "dp=2", "--plan", "dp"],
                 "tp=2": ["--mesh", "tp=2", "--plan", "megatron"],
                 "pp=2": ["--mesh", "pp=2", "--microbatches", "2"],
                 "zero2": ["--mesh", "dp=2", "--plugin", "zero2"]}
TRAIN_RUNS = {"llama_bf16": ["1 device"] + list(SHARDED_TRAIN), "llama_f16": ["1 device"],
              "gpt2_bf16": ["1 device", "tp=2"]}
PLANS = {"tp": "megatron", "pp": None, "dp": "dp"}


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


def compile_and_run(model, inputs, work, tag, mesh=None, plan=None, ranks=1, flags=()):
    art = os.path.join(work, tag + ".tsl")
    cmd = ["tesselc", model, "-o", art] + list(flags)
    if mesh:
        cmd += ["--mesh", mesh]
    if plan:
        cmd += ["--plan", plan]
    run(cmd)
    out = os.path.join(work, tag + ".npy")
    run(["tessel-run", art, "-n", str(ranks), "--input", "input_ids=" + inputs, "--output", out])
    return art, out


def train(name, d, work):
    cfg = json.load(open(os.path.join(d, "train", "train.json")))
    adamw = cfg["optimizer"]["adamw"]
    want = np.array(cfg["trajectory"])
    batches = os.path.join(d, "train", "batches.npy")
    first = None
    for where in TRAIN_RUNS[name] + ["unfused"]:
        tag = "%s_train_%s" % (name, where.replace(" ", "_").replace("=", ""))
        art = os.path.join(work, tag + ".tsl")
        cmd = ["tesselc", os.path.join(d, "model.onnx"), "--train", "--optimizer", "adamw",
               "--lr", str(adamw["lr"]), "--betas", "%s,%s" % tuple(adamw["betas"]),
               "--eps", str(adamw["eps"]), "--weight-decay", str(adamw["weight_decay"]),
               "-o", art]
        ranks = 2 if where in SHARDED_TRAIN else 1
        cmd += SHARDED_TRAIN.get(where, [])
        if where == "unfused":
            cmd += ["--no-fuse-elementwise"]
        run(cmd)
        losses = os.path.join(work, tag + ".npy")
        run(["tessel-run", art, "-n", str(ranks), "--steps", str(len(want)),
             "--data-lm", batches, "--losses", losses])
        got = np.load(losses).astype(np.float64)
        if first is None:
            first = got
        if where == "unfused":
            # The fused elementwise chains (their casts to and from the
            # half included) compute what the ops one by one do.
            same = np.array_equal(got, first)
            print("%s train unfused: the same losses: %s" % (name, "ok" if same else "MISMATCH"))
            continue
        rel = float(np.max(np.abs(got - want) / np.abs(want)))
        print("%s train %s: %d losses within %.2e relative: %s"
              % (name, where, len(got), rel, "ok" if rel <= TOL_TRAIN else "MISMATCH"))


def exported(name, d, work):
    """Four steps, then --export-onnx and --save-weights: the exported model
    (in the model's half type, the masters rounded) run by Tessel on step
    5's batch gives the reference's fifth loss, computed by the half
    working copy rounded from the same masters."""
    cfg = json.load(open(os.path.join(d, "train", "train.json")))
    batches = os.path.join(d, "train", "batches.npy")
    art = os.path.join(work, name + "_export.tsl")
    run(["tesselc", os.path.join(d, "model.onnx"), "--train", "--optimizer", "adamw",
         "--lr", "1e-3", "-o", art])
    onnx_path = os.path.join(work, name + "_trained.onnx")
    weights = os.path.join(work, name + "_trained.safetensors")
    run(["tessel-run", art, "--steps", "4", "--data-lm", batches,
         "--export-onnx", onnx_path, "--save-weights", weights])
    with open(weights, "rb") as f:
        n = int.from_bytes(f.read(8), "little")
        header = json.loads(f.read(n))
    types = sorted({v["dtype"] for k, v in header.items() if k != "__metadata__"})
    batch = np.load(batches)[4]
    ids = os.path.join(work, name + "_ids.npy")
    np.save(ids, batch[:, :-1])
    run(["tesselc", onnx_path, "-o", os.path.join(work, name + "_trained.tsl")])
    out = os.path.join(work, name + "_trained_out.npy")
    run(["tessel-run", os.path.join(work, name + "_trained.tsl"), "--input", "input_ids=" + ids,
         "--output", out])
    logits = np.load(out).astype(np.float64)
    z = logits - logits.max(-1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(-1, keepdims=True))
    labels = batch[:, 1:]
    loss = -np.take_along_axis(logp, labels[..., None], -1).mean()
    want = cfg["trajectory"][4]
    rel = abs(loss - want) / want
    print("%s export after 4 steps: weights %s, loss %.6f against %.6f (%.2e relative): %s"
          % (name, ",".join(types), loss, want, rel, "ok" if rel <= TOL_TRAIN else "MISMATCH"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tesselc", required=True)
    ap.add_argument("--tessel-run", required=True)
    ap.add_argument("--models", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--train", action="store_true")
    args = ap.parse_args()
    TOOLS.update({"tesselc": args.tesselc, "tessel-run": args.tessel_run})
    if args.train:
        for name in TRAIN_RUNS:
            train(name, os.path.join(args.models, name), args.work)
        for name in ["llama_bf16", "llama_f16"]:
            exported(name, os.path.join(args.models, name), args.work)
        return
    for name in ["llama_bf16", "llama_f16", "gpt2_bf16", "gpt2_f16", "encoder_f16_ts",
                 "llama_f64", "encoder_f64_ts"]:
        d = os.path.join(args.models, name)
        with open(os.path.join(d, "meta.json")) as f:
            meta = json.load(f)
        model, inputs = os.path.join(d, "model.onnx"), os.path.join(d, "input_ids.npy")
        art, one = compile_and_run(model, inputs, args.work, name)
        compare(name + " 1 device", one, os.path.join(d, "output.npy"),
                TOL_REF_OF.get(name, TOL_REF[meta["dtype"]]))
        _, unfused = compile_and_run(model, inputs, args.work, name + "_unfused",
                                     flags=["--no-fuse-elementwise"])
        compare(name + " unfused", unfused, one, 0.0)
        for mesh in RUNS.get(name, ["tp=2"]):
            plan = PLANS[mesh.split("=")[0]]
            _, out = compile_and_run(model, inputs, args.work, name + "_" + mesh.replace("=", ""),
                                     mesh=mesh, plan=plan, ranks=2)
            compare("%s %s" % (name, mesh), out, one, TOL_SHARDED[meta["dtype"]])
        if name in ("llama_bf16", "llama_f64"):
            data = os.path.getsize(os.path.join(d, "model.onnx.data"))
            weights = sum(os.path.getsize(os.path.join(art, f)) for f in os.listdir(art)
                          if f.endswith(".safetensors"))
            ratio = weights / data
            print("%s weights %.3fx the ONNX data: %s" % (name, ratio, "ok" if ratio <= 1.1 else "MISMATCH"))


if __name__ == "__main__":
    main()
