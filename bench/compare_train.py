#!/usr/bin/env python3
"""One training step, Tessel against PyTorch eager on the CPU, in one run.

For each model and thread count: the median time of a training step
(forward + loss + backward + optimizer update; the first step excluded as
warm-up) of each engine, their ratio (PyTorch / Tessel: >= 1.0 means Tessel
is no slower), the peak RSS of each engine's process, and how far the two
engines' losses are apart (the same weights and batches on both sides);
ResNet-50 also with Winograd for its trained 3x3 convs (TESSEL_WINOGRAD=1).
Then data parallelism (bench/train_dp.py): dp=2 on 2 ranks x 1 thread
against one rank, strong and weak scaling, beside PyTorch's DDP over gloo. Run bench/run-train-compare, which sets up and calls this with a
python that has PyTorch 2.x.

    python3 bench/compare_train.py --tesselc BIN --tessel-run BIN --models DIR
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

import numpy as np

import train_dp
from benchlib import add_tool_args, first_error, run_measured

HERE = os.path.dirname(os.path.abspath(__file__))

ADAMW = ["--optimizer", "adamw", "--lr", "1e-4", "--weight-decay", "0.01",
         "--betas", "0.9,0.999", "--eps", "1e-8"]
SGD = ["--optimizer", "sgd", "--lr", "0.01", "--momentum", "0.9"]

# (label, kind, onnx, batch, optimizer flags, tessel-run's extra environment)
ROWS = [
    ("gpt2-small seq128 b1", "gpt2", "gpt2_small_train_b1.onnx", 1, ADAMW, {}),
    ("gpt2-small seq128 b4", "gpt2", "gpt2_small_train_b4.onnx", 4, ADAMW, {}),
    ("resnet50 b8 (SGD)", "resnet", "resnet50_b8_train.onnx", 8, SGD, {}),
    # Winograd for the trained 3x3 convs (opt-in: rounds unlike PyTorch's
    # direct convolution; runtime/cpu/ConvTraining.cpp). PyTorch's column is
    # the row above's run.
    ("resnet50 b8 (SGD) TESSEL_WINOGRAD=1", "resnet", "resnet50_b8_train.onnx", 8, SGD,
     {"TESSEL_WINOGRAD": "1"}),
]

TORCH_CHILD = r"""
import os, resource, sys, time
import numpy as np
import torch
import torch.nn.functional as F
kind, models, batch, threads, steps, losses_out, here = sys.argv[1:8]
# "bf16": the forward under CPU autocast to bf16 (its GEMMs in bf16, the
# loss in f32), as a bf16 training step is written in PyTorch.
precision = sys.argv[8] if len(sys.argv) > 8 else "f32"
batch, threads, steps = int(batch), int(threads), int(steps)
torch.set_num_threads(threads)
torch.set_num_interop_threads(1)
torch.manual_seed(0)
if kind == "gpt2":
    sys.path.insert(0, os.path.join(here, "models"))
    from export_models import load_gpt2_small
    model = load_gpt2_small(models)
    data = np.load(os.path.join(models, "gpt2_small_b%d_batches.npy" % batch))
    def batch_of(k):
        x = torch.from_numpy(data[k % len(data)])
        return x[:, :-1].contiguous(), x[:, 1:].contiguous()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, betas=(0.9, 0.999),
                            eps=1e-8, weight_decay=0.01)
else:
    import torchvision
    model = torchvision.models.resnet50(weights=None)
    model.load_state_dict(torch.load(os.path.join(models, "resnet50_state.pt")))
    images = np.load(os.path.join(models, "resnet50_b8_train_images.npy"))
    labels = np.load(os.path.join(models, "resnet50_b8_train_labels.npy"))
    def batch_of(k):
        return torch.from_numpy(images[k % len(images)]), torch.from_numpy(labels[k % len(labels)])
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
model.train()
times, cpu, losses = [], [], []
for k in range(steps):
    x, y = batch_of(k)
    t0, c0 = time.perf_counter(), time.process_time()
    if precision == "bf16":
        with torch.autocast("cpu", dtype=torch.bfloat16):
            out = model(x)
        out = out.float()
    else:
        out = model(x)
    loss = F.cross_entropy(out.reshape(-1, out.shape[-1]), y.reshape(-1))
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    times.append((time.perf_counter() - t0) * 1e3)
    cpu.append((time.process_time() - c0) * 1e3)
    losses.append(loss.item())
np.save(losses_out, np.array(losses, dtype=np.float32))
warm = sorted(times[1:] or times)
print("ms", warm[len(warm) // 2])
warm = sorted(cpu[1:] or cpu)
print("cpu_ms", warm[len(warm) // 2])
print("torch", torch.__version__)
"""


def tessel_step_ms(log, what="ms/step"):
    """The median of the steps after the first: wall ms, or with what="ms
    CPU" the process's CPU ms of a step."""
    ms = [float(x) for x in re.findall(r"([\d.]+) " + re.escape(what), log)]
    warm = ms[1:] or ms
    return statistics.median(warm) if warm else float("nan")


def data_flags(kind, models, batch):
    if kind == "gpt2":
        return ["--data-lm", os.path.join(models, "gpt2_small_b%d_batches.npy" % batch)]
    return ["--data", "images=" + os.path.join(models, "resnet50_b8_train_images.npy"),
            "--data", "labels=" + os.path.join(models, "resnet50_b8_train_labels.npy")]


def rel_diff(a, b):
    n = min(len(a), len(b))
    if n == 0:
        return float("nan")
    return float(np.max(np.abs(a[:n] - b[:n]) / np.maximum(np.abs(b[:n]), 1e-12)))


def bf16_row(args, env, tmp, model, opt, kind, batch, th, f32_row):
    """The bf16 columns of one GPT-2 row: {name: (ms, cpu ms, losses) or an
    n/a string}, with the f32 runs of `f32_row` beside them."""
    out = {}
    for name, res in (("tessel f32", f32_row.get("tessel")),
                      ("torch f32", f32_row.get("torch"))):
        out[name] = (res[0], res[3], res[2]) if isinstance(res, tuple) else res or "-"
    art = os.path.join(tmp, "bf16_" + os.path.basename(model).replace(".onnx", ".tsl"))
    rc, log, _ = run_measured([args.tesselc, model, "--train", "--loss", "cross_entropy",
                               "--precision", "bf16"] + opt + ["-o", art], env)
    for name, extra in (("tessel bf16 emulated", {"TESSEL_BF16": "emulate"}),
                        ("tessel bf16 oneDNN", {})):
        if rc != 0:
            out[name] = "n/a (%s)" % first_error(log)
            continue
        losses = os.path.join(tmp, "bf16_losses.npy")
        r, rlog, _ = run_measured(
            [args.tessel_run, art, "--steps", str(args.steps), "--threads", str(th),
             "--losses", losses] + data_flags(kind, args.models, batch), dict(env, **extra))
        out[name] = ((tessel_step_ms(rlog), tessel_step_ms(rlog, "ms CPU"), np.load(losses))
                     if r == 0 else "n/a (%s)" % first_error(rlog))
    if args.no_torch:
        out["torch autocast bf16"] = "-"
    else:
        losses = os.path.join(tmp, "torch_bf16_losses.npy")
        r, tlog, _ = run_measured(
            [sys.executable, "-c", TORCH_CHILD, kind, args.models, str(batch), str(th),
             str(args.steps), losses, HERE, "bf16"], env)
        out["torch autocast bf16"] = (
            (float(re.search(r"\bms ([\d.]+)", tlog).group(1)),
             float(re.search(r"cpu_ms ([\d.]+)", tlog).group(1)), np.load(losses))
            if r == 0 else "n/a (%s)" % first_error(tlog))
    return out


BF16_COLUMNS = ["tessel f32", "tessel bf16 emulated", "tessel bf16 oneDNN",
                "torch f32", "torch autocast bf16"]


def print_bf16(bf16_rows):
    print()
    print("Mixed precision, GPT-2: median ms per step (wall / process CPU), and each "
          "run's largest loss difference from its engine's f32 run, relative")
    print()
    print("| model | threads | " + " | ".join(BF16_COLUMNS) + " |")
    print("|---|---|" + "---|" * len(BF16_COLUMNS))
    for label, th, cols in bf16_rows:
        cells = [label, str(th)]
        for name in BF16_COLUMNS:
            v = cols.get(name, "-")
            if not isinstance(v, tuple):
                cells.append(v)
                continue
            ref = cols["torch f32" if name.startswith("torch") else "tessel f32"]
            diff = ("" if name.endswith("f32") or not isinstance(ref, tuple)
                    else ", loss %.1e" % rel_diff(v[2], ref[2]))
            cells.append("%.0f / %.0f%s" % (v[0], v[1], diff))
        print("| " + " | ".join(cells) + " |")


def main():
    ap = argparse.ArgumentParser()
    add_tool_args(ap)
    ap.add_argument("--steps", type=int, default=5,
                    help="steps per run; the first is warm-up (default 5)")
    ap.add_argument("--only", default="", help="run the rows whose label has this text")
    ap.add_argument("--no-torch", action="store_true", help="Tessel's side alone")
    ap.add_argument("--no-dp", action="store_true", help="skip the dp=2 row")
    ap.add_argument("--bf16", action="store_true",
                    help="GPT-2 rows also in bf16: Tessel's --precision bf16 "
                         "emulated (TESSEL_BF16=emulate) and on oneDNN's bf16 "
                         "GEMMs, PyTorch under CPU autocast bf16")
    args = ap.parse_args()

    env = dict(os.environ)
    # BUILD-NOTES: the preset Haswell core type halves OpenBLAS; benchmarks unset it.
    env.pop("OPENBLAS_CORETYPE", None)
    env.pop("OPENBLAS_L2_SIZE", None)
    threads = [int(t) for t in args.threads.split(",")]

    tmp = tempfile.mkdtemp(prefix="tessel-train-bench-")
    rows, dp_rows, bf16_rows = [], [], []
    torch_version = ""
    single_b4_1t = torch_b4_1t = None
    torch_runs = {}  # (kind, batch, threads) -> PyTorch's result, run once
    for label, kind, onnx_file, batch, opt, extra_env in ROWS:
        if args.only and args.only not in label:
            continue
        model = os.path.join(args.models, onnx_file)
        if not os.path.exists(model):
            rows.append((label, None, "n/a (%s missing)" % model))
            continue
        art = os.path.join(tmp, onnx_file.replace(".onnx", ".tsl"))
        rc, log, _ = run_measured([args.tesselc, model, "--train", "--loss", "cross_entropy"]
                                  + opt + ["-o", art], env)
        tessel_na = None if rc == 0 else "n/a (%s)" % first_error(log)
        for th in threads:
            row = {"threads": th}
            if tessel_na is None:
                t_losses = os.path.join(tmp, "tessel_losses.npy")
                rc, log, rss = run_measured(
                    [args.tessel_run, art, "--steps", str(args.steps), "--threads", str(th),
                     "--losses", t_losses] + data_flags(kind, args.models, batch),
                    dict(env, **extra_env))
                if rc != 0:
                    row["tessel"] = "n/a (%s)" % first_error(log)
                else:
                    row["tessel"] = (tessel_step_ms(log), rss, np.load(t_losses),
                                     tessel_step_ms(log, "ms CPU"))
                    if batch == 4 and th == 1 and not extra_env:
                        single_b4_1t = row["tessel"][:3]
            else:
                row["tessel"] = tessel_na
            if not args.no_torch and (kind, batch, th) in torch_runs:
                row["torch"] = torch_runs[(kind, batch, th)]
            elif not args.no_torch:
                o_losses = os.path.join(tmp, "torch_losses.npy")
                rc, log, rss = run_measured(
                    [sys.executable, "-c", TORCH_CHILD, kind, args.models, str(batch), str(th),
                     str(args.steps), o_losses, HERE], env)
                if rc != 0:
                    row["torch"] = "n/a (%s)" % first_error(log)
                else:
                    row["torch"] = (float(re.search(r"\bms ([\d.]+)", log).group(1)), rss,
                                    np.load(o_losses),
                                    float(re.search(r"cpu_ms ([\d.]+)", log).group(1)))
                    torch_version = re.search(r"torch (\S+)", log).group(1)
                    if batch == 4 and th == 1:
                        torch_b4_1t = row["torch"][:3]
                torch_runs[(kind, batch, th)] = row["torch"]
            rows.append((label, row, None))
            if args.bf16 and kind == "gpt2" and tessel_na is None:
                bf16_rows.append((label, th, bf16_row(args, env, tmp, model, opt, kind,
                                                      batch, th, row)))

    if not args.no_dp and (not args.only or "b4" in args.only or "dp" in args.only):
        if single_b4_1t is None:
            # The one-rank baseline, when the b4 row did not run at 1 thread.
            model = os.path.join(args.models, "gpt2_small_train_b4.onnx")
            one = os.path.join(tmp, "gpt2_b4.tsl")
            subprocess.run([args.tesselc, model, "--train", "--loss", "cross_entropy"]
                           + ADAMW + ["-o", one], check=True, env=env)
            rc, log, rss = run_measured([args.tessel_run, one, "--steps", str(args.steps),
                                         "--threads", "1"] + data_flags("gpt2", args.models, 4),
                                        env)
            single_b4_1t = (tessel_step_ms(log) if rc == 0 else float("nan"), rss, None)
        if torch_b4_1t is None and not args.no_torch:
            o_losses = os.path.join(tmp, "torch_losses.npy")
            rc, log, rss = run_measured(
                [sys.executable, "-c", TORCH_CHILD, "gpt2", args.models, "4", "1",
                 str(args.steps), o_losses, HERE], env)
            if rc == 0:
                torch_b4_1t = (float(re.search(r"\bms ([\d.]+)", log).group(1)), rss,
                               np.load(o_losses))
        dp_rows = train_dp.dp_rows(args, env, tmp, single_b4_1t, torch_b4_1t, run_measured,
                                   first_error, tessel_step_ms, rel_diff, ADAMW)

    print()
    print("Training step (forward + loss + backward + optimizer), median ms of "
          "steps 2..%d; PyTorch %s eager; load average at the end %.1f on %d cores"
          % (args.steps, torch_version or "(not run)", os.getloadavg()[0], os.cpu_count()))
    print("(wall: time per step; CPU: the process's CPU time per step, steadier "
          "than wall time on a shared machine)")
    print()
    print("| model | threads | Tessel ms/step | PyTorch ms/step | PyTorch/Tessel "
          "| Tessel CPU ms | PyTorch CPU ms | PyTorch/Tessel CPU "
          "| Tessel RSS MB | PyTorch RSS MB | loss rel diff |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for label, row, na in rows:
        if row is None:
            print("| %s | | %s | | | | | | | | |" % (label, na))
            continue
        t, o = row["tessel"], row.get("torch")
        cells = [label, str(row["threads"])]
        cells.append("%.0f" % t[0] if isinstance(t, tuple) else t)
        cells.append("%.0f" % o[0] if isinstance(o, tuple) else (o or "-"))
        both = isinstance(t, tuple) and isinstance(o, tuple)
        cells.append("%.2f" % (o[0] / t[0]) if both else "-")
        cells.append("%.0f" % t[3] if isinstance(t, tuple) else "-")
        cells.append("%.0f" % o[3] if isinstance(o, tuple) else "-")
        cells.append("%.2f" % (o[3] / t[3]) if both else "-")
        cells.append("%.0f" % (t[1] / 1024) if isinstance(t, tuple) else "-")
        cells.append("%.0f" % (o[1] / 1024) if isinstance(o, tuple) else "-")
        cells.append("%.1e" % rel_diff(t[2], o[2]) if both else "-")
        print("| " + " | ".join(cells) + " |")
    if bf16_rows:
        print_bf16(bf16_rows)
    if dp_rows:
        train_dp.print_dp(dp_rows, rel_diff)

if __name__ == "__main__":
    main()
