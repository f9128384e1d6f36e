#!/usr/bin/env python3
"""Pipelined training on the CPU: Tessel against torch.distributed.pipelining,
and the measured bubble against the schedule simulator's prediction.

1. GPT-2-small (12 layers, 6 per stage), pp=2, 4 microbatches of 1x128,
   1F1B, 2 ranks x 1 thread: the median step of `tessel-run -n 2` on
   `tesselc --mesh pp=2 --schedule 1f1b --microbatches 4`, of PyTorch's
   Schedule1F1B on the same split (gloo, CPU, 2 processes), and of each
   engine's one-rank step on the same batch of 4 (Tessel: `--microbatches
   4`; PyTorch: the plain step). Same weights and batches on both sides.
2. Bubbles, m = 4 and m = 8: each rank's measured bubble (tessel-run's
   `bubble` line: time blocked in recv/wait over step time) beside the
   simulator's (`tesselc --emit=schedule --schedule 1f1b --costs
   'F0,B0,W0;F1,B1,W1'`) for the per-stage F/B/W times measured in the same
   run (medians of the actions of tessel-run's --trace), and both pictures
   (tessel-run --timeline, tesselc --timeline) side by side in one HTML
   page. On GPT-2 when the pipeline compiler is there; always on the
   hand-built two-stage pipeline of test/Runtime/Inputs/PipelineProgram.h
   (make-pipeline-artifact), whose program the runtime executes the same
   way.

Run bench/run-pipeline-compare, which builds, sets up the PyTorch venv and
calls this:

    python3 bench/compare_pipeline.py --build BUILD --models DIR [--steps N]
        [--only gpt2|bubble] [--no-torch] [--out DIR]
"""
import argparse
import json
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile

from benchlib import first_error

HERE = os.path.dirname(os.path.abspath(__file__))

ADAMW = ["--optimizer", "adamw", "--lr", "1e-4", "--weight-decay", "0.01",
         "--betas", "0.9,0.999", "--eps", "1e-8"]
MICROBATCHES = 4
TRIALS = 5  # launches per bubble row (--trials)
LAYERS_PER_STAGE = 6

# One rank of PyTorch: world 1 runs the plain step on the whole batch of 4;
# world 2 runs Schedule1F1B over the split embeddings + h[0:6] | h[6:12] +
# ln_f + lm_head, 4 microbatches of 1x128. Prints "ms MEDIAN" (steps after
# the first) and "loss L0,L1,..." on the last rank.
TORCH_CHILD = r"""
import json, os, sys, time
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
models, steps, here, m, per_stage = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
rank, world = int(os.environ.get("RANK", "0")), int(os.environ.get("WORLD_SIZE", "1"))
torch.set_num_threads(1)
torch.set_num_interop_threads(1)
sys.path.insert(0, os.path.join(here, "models"))
from export_models import GPT2, Named
model = Named(GPT2())
model.load_state_dict(torch.load(os.path.join(models, "gpt2_small_state.pt")))
with open(os.path.join(models, "gpt2_small_train.json")) as f:
    meta = json.load(f)
if not meta["lm_head_tied"]:
    model.lm_head.weight = nn.Parameter(model.transformer.wte.weight.detach().clone())
data = np.load(os.path.join(models, "gpt2_small_b4_batches.npy"))
def batch_of(k):
    x = torch.from_numpy(data[k % len(data)])
    return x[:, :-1].contiguous(), x[:, 1:].contiguous()
def loss_fn(out, y):
    return F.cross_entropy(out.reshape(-1, out.shape[-1]), y.reshape(-1))

class First(nn.Module):
    def __init__(self, t):
        super().__init__()
        self.wte, self.wpe = t.wte, t.wpe
        self.h = nn.ModuleList(t.h[:per_stage])
    def forward(self, input_ids):
        pos = torch.arange(input_ids.shape[1], dtype=torch.long).unsqueeze(0)
        x = self.wte(input_ids) + self.wpe(pos)
        for b in self.h:
            x = b(x)
        return x

class Last(nn.Module):
    def __init__(self, named):
        super().__init__()
        t = named.transformer
        self.h = nn.ModuleList(t.h[per_stage:])
        self.ln_f, self.lm_head = t.ln_f, named.lm_head
    def forward(self, x):
        for b in self.h:
            x = b(x)
        return self.lm_head(self.ln_f(x))

times, losses = [], []
if world == 1:
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01)
    for k in range(steps):
        x, y = batch_of(k)
        t0 = time.perf_counter()
        loss = loss_fn(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        times.append((time.perf_counter() - t0) * 1e3)
        losses.append(loss.item())
else:
    import torch.distributed as dist
    from torch.distributed.pipelining import PipelineStage, Schedule1F1B
    dist.init_process_group("gloo", rank=rank, world_size=world)
    part = First(model.transformer) if rank == 0 else Last(model)
    del model
    part.train()
    stage = PipelineStage(part, rank, world, torch.device("cpu"))
    sched = Schedule1F1B(stage, n_microbatches=m, loss_fn=loss_fn)
    opt = torch.optim.AdamW(part.parameters(), lr=1e-4, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01)
    for k in range(steps):
        x, y = batch_of(k)
        dist.barrier()
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        if rank == 0:
            sched.step(x)
        else:
            mb = []
            sched.step(target=y, losses=mb)
            losses.append(float(torch.stack(mb).mean()))
        opt.step()
        times.append((time.perf_counter() - t0) * 1e3)
    dist.barrier()
    dist.destroy_process_group()
warm = sorted(times[1:] or times)
print("ms", warm[len(warm) // 2])
if losses:
    print("loss", ",".join("%.6f" % l for l in losses))
print("torch", torch.__version__)
"""


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def run(cmd, env=None, timeout=3600):
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
    return p.returncode, p.stdout + p.stderr


def median_after_first(values):
    warm = values[1:] or values
    return statistics.median(warm) if warm else float("nan")


def torch_step(python, models, steps, world, env):
    """PyTorch's median step (ms) and the last rank's losses, or an n/a."""
    port = str(free_port())
    procs = []
    for r in range(world):
        e = dict(env, RANK=str(r), WORLD_SIZE=str(world), MASTER_ADDR="127.0.0.1",
                 MASTER_PORT=port, OMP_NUM_THREADS="1")
        procs.append(subprocess.Popen(
            [python, "-c", TORCH_CHILD, models, str(steps), HERE, str(MICROBATCHES),
             str(LAYERS_PER_STAGE)], env=e, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, text=True))
    outs = [p.communicate()[0] for p in procs]
    if any(p.returncode != 0 for p in procs):
        bad = [o for p, o in zip(procs, outs) if p.returncode != 0][0]
        return "n/a (%s)" % first_error(bad), None
    ms = max(float(re.search(r"\bms ([\d.]+)", o).group(1)) for o in outs)
    version = re.search(r"torch (\S+)", outs[0]).group(1)
    return (ms, version), outs[-1]


def stage_rules(path):
    """The stage split as plan rules (docs/pipeline.md): layers 0-5 and the
    embeddings on stage 0, layers 6-11, ln_f and the LM head on stage 1."""
    with open(path, "w") as f:
        f.write("# GPT-2-small on 2 stages, 6 layers each (bench/compare_pipeline.py)\n")
        f.write("mesh: {pp: 2}\nrules:\n")
        for layer in range(2 * LAYERS_PER_STAGE):
            f.write('  - node: "/transformer/h.%d/*"\n    stage: %d\n'
                    % (layer, layer // LAYERS_PER_STAGE))
        f.write('  - node: "/transformer/ln_f/*"\n    stage: 1\n')
        f.write('  - node: "/lm_head/*"\n    stage: 1\n')
        f.write('  - node: "/transformer/*"\n    stage: 0\n')


def tessel_steps_ms(log):
    return median_after_first([float(x) for x in re.findall(r"([\d.]+) ms/step", log)])


def bubbles_of(log):
    """{rank: measured bubble fraction} from tessel-run's bubble lines."""
    return {int(r): float(b) / 100 for r, b in
            re.findall(r"rank (\d+): bubble ([\d.]+)%", log)}


def stage_costs(trace, stages):
    """Median F, B, W (ms) of each stage's actions in a tessel-run trace; a
    fused BW counts as B (W = 0). An action's cost is the sum of its
    instructions' times (tid 0, grouped by their `action` argument) less the
    time blocked in recv and wait: the span of the action's box on the
    actions track would count the wait for the neighbour's message, which
    the simulator adds itself."""
    events = json.load(open(trace))["traceEvents"]
    sums = {}
    for e in events:
        if e.get("ph") != "X" or e.get("tid") != 0 or e.get("cat") in ("recv", "wait"):
            continue
        m = re.match(r"(F|B|W|BW) (\d+)\.(\d+)$", e.get("args", {}).get("action", ""))
        if m:
            key = (e["pid"], int(m.group(2)), m.group(1), int(m.group(3)))
            sums[key] = sums.get(key, 0.0) + e["dur"] / 1000
    by = {}
    for (_, s, phase, _), ms in sums.items():
        by.setdefault((s, phase), []).append(ms)
    costs = []
    for s in range(stages):
        f = statistics.median(by.get((s, "F"), [0]))
        b = statistics.median(by.get((s, "B"), by.get((s, "BW"), [0])))
        w = statistics.median(by.get((s, "W"), [0]))
        costs.append((f, b, w))
    return costs


def last_run_bubbles(trace):
    """{rank: bubble of the traced (last) run}: the time of its recv and
    wait instructions over the span of its instructions, the same run whose
    actions gave the costs."""
    events = json.load(open(trace))["traceEvents"]
    out = {}
    for r in sorted({e["pid"] for e in events if e.get("ph") == "X"}):
        mine = [e for e in events if e.get("ph") == "X" and e["pid"] == r and e.get("tid", 0) == 0]
        span = max(e["ts"] + e["dur"] for e in mine) - min(e["ts"] for e in mine)
        idle = sum(e["dur"] for e in mine if e.get("cat") in ("recv", "wait"))
        out[r] = idle / span if span > 0 else 0.0
    return out


def predicted(tesselc, m, costs, svg):
    """The simulator's bubble per rank and step time for these costs."""
    spec = ";".join("%.4f,%.4f,%.4f" % c for c in costs)
    rc, log = run([tesselc, "--emit=schedule", "--schedule=1f1b", "--stages", str(len(costs)),
                   "--microbatches", str(m), "--costs", spec, "--no-actions",
                   "--timeline", svg])
    if rc != 0:
        return None, first_error(log)
    ranks = {int(r): float(b) for r, b in re.findall(r"rank (\d+) stats: .*?bubble=([\d.]+)", log)}
    step = float(re.search(r"step_time: ([\d.]+)", log).group(1))
    return ranks, step


def side_by_side(path, title, measured_svg, predicted_svg):
    def inline(p):
        return open(p).read() if os.path.exists(p) else "<p>missing %s</p>" % p
    with open(path, "w") as f:
        f.write("<!doctype html><meta charset=utf-8><title>%s</title>\n" % title)
        f.write("<h3>%s</h3>\n<div style='display:flex;gap:16px;align-items:flex-start'>\n" % title)
        f.write("<div><h4>measured (tessel-run --timeline)</h4>%s</div>\n" % inline(measured_svg))
        f.write("<div><h4>predicted (tesselc --emit=schedule --timeline)</h4>%s</div>\n"
                % inline(predicted_svg))
        f.write("</div>\n")


def bubble_rows(label, artifact_for, tessel_run, tesselc, out, extra_flags, env, repeat):
    """Measured against predicted bubbles for m = 4 and 8 of one model."""
    rows = []
    for m in (4, 8):
        art = artifact_for(m)
        if isinstance(art, str) and art.startswith("n/a"):
            rows.append((label, m, art))
            continue
        tag = "%s_m%d" % (re.sub(r"\W+", "_", label), m)
        trace = os.path.join(out, tag + ".json")
        measured_svg = os.path.join(out, tag + "_measured.svg")
        predicted_svg = os.path.join(out, tag + "_predicted.svg")
        # Several launches: each gives its traced run's bubbles and per-stage
        # costs, and the simulator's prediction for those costs; the medians
        # over the launches are reported (the pictures are the last's).
        trials, failed = [], None
        for _ in range(TRIALS):
            rc, log = run([tessel_run, art, "-n", "2", "--threads", "1", "--trace", trace,
                           "--timeline", measured_svg] + extra_flags(repeat, m), env)
            if rc != 0:
                failed = "n/a (%s)" % first_error(log)
                break
            costs = stage_costs(trace, 2)
            pred, step = predicted(tesselc, m, costs, predicted_svg)
            if pred is None:
                failed = "n/a (simulator: %s)" % step
                break
            trials.append((bubbles_of(log), last_run_bubbles(trace), pred, costs, step))
        if failed:
            rows.append((label, m, failed))
            continue

        def med(pick):
            return {r: statistics.median(pick(t)[r] for t in trials) for r in trials[0][2]}
        measured = (med(lambda t: t[0]), med(lambda t: t[1]))
        pred = med(lambda t: t[2])
        costs = [tuple(statistics.median(t[3][s][k] for t in trials) for k in range(3))
                 for s in range(2)]
        step = statistics.median(t[4] for t in trials)
        side_by_side(os.path.join(out, tag + ".html"), "%s, 1F1B, p=2, m=%d" % (label, m),
                     measured_svg, predicted_svg)
        rows.append((label, m, (measured, pred, costs, step)))
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True, help="the build dir (bin/tesselc, bin/tessel-run, "
                    "bin/make-pipeline-artifact)")
    ap.add_argument("--models", required=True, help="bench/models/export_models.py's output")
    ap.add_argument("--steps", type=int, default=5, help="steps per run; the first is warm-up")
    ap.add_argument("--repeat", type=int, default=5,
                    help="timed runs of the hand-built pipeline (default 5)")
    ap.add_argument("--only", default="", help="gpt2 or bubble")
    ap.add_argument("--trials", type=int, default=5,
                    help="launches per bubble row, medians reported (default 5)")
    ap.add_argument("--no-torch", action="store_true")
    ap.add_argument("--out", default="", help="where the pictures go (default: a temp dir)")
    args = ap.parse_args()
    global TRIALS
    TRIALS = max(1, args.trials)
    tesselc = os.path.join(args.build, "bin", "tesselc")
    tessel_run = os.path.join(args.build, "bin", "tessel-run")
    make_pipeline = os.path.join(args.build, "bin", "make-pipeline-artifact")
    env = dict(os.environ)
    env.pop("OPENBLAS_CORETYPE", None)
    env.pop("OPENBLAS_L2_SIZE", None)
    tmp = tempfile.mkdtemp(prefix="tessel-pipeline-bench-")
    out = args.out or tmp
    os.makedirs(out, exist_ok=True)
    # One sequence per microbatch: the batch-4 export for m = 4, the batch-8
    # one for the m = 8 bubble row.
    def model_of(m):
        return os.path.join(args.models, "gpt2_small_train_b%d.onnx" % m)

    def lm_of(m):
        return ["--data-lm", os.path.join(args.models, "gpt2_small_b%d_batches.npy" % m)]
    model, lm = model_of(MICROBATCHES), lm_of(MICROBATCHES)
    plan = os.path.join(tmp, "gpt2_pp2.yaml")
    stage_rules(plan)

    def compile_pp(m, path):
        if not os.path.exists(model_of(m)):
            return "n/a (no %s: rerun bench/models/export_models.py --train)" % model_of(m)
        rc, log = run([tesselc, model_of(m), "--train", "--loss", "cross_entropy"] + ADAMW
                      + ["--mesh", "pp=2", "--schedule", "1f1b", "--microbatches", str(m),
                         "--plan", plan, "-o", path], env)
        return None if rc == 0 else "n/a (%s)" % first_error(log)

    if not args.only or args.only == "gpt2":
        print("GPT-2-small seq128, pp=2 (6 + 6 layers), %d microbatches of 1x128, 1F1B, "
              "2 ranks x 1 thread; ms per step (median of %d after the first)"
              % (MICROBATCHES, args.steps - 1))
        pp = os.path.join(tmp, "gpt2_pp2.tsl")
        na = compile_pp(MICROBATCHES, pp)
        if na:
            tessel_pp = na + " [needs the pipeline compiler: tesselc --mesh pp=2 --schedule 1f1b]"
        else:
            rc, log = run([tessel_run, pp, "-n", "2", "--threads", "1", "--steps",
                           str(args.steps)] + lm, env)
            tessel_pp = tessel_steps_ms(log) if rc == 0 else "n/a (%s)" % first_error(log)
        one = os.path.join(tmp, "gpt2_mb4.tsl")
        rc, log = run([tesselc, model, "--train", "--loss", "cross_entropy"] + ADAMW
                      + ["--microbatches", str(MICROBATCHES), "-o", one], env)
        if rc == 0:
            rc, log = run([tessel_run, one, "--threads", "1", "--steps", str(args.steps)] + lm, env)
        tessel_one = tessel_steps_ms(log) if rc == 0 else "n/a (%s)" % first_error(log)
        torch_pp = torch_one = "not run (--no-torch)"
        if not args.no_torch:
            torch_pp, _ = torch_step(sys.executable, args.models, args.steps, 2, env)
            torch_one, _ = torch_step(sys.executable, args.models, args.steps, 1, env)

        def show(v):
            return "%.1f" % v if isinstance(v, float) else (
                "%.1f (torch %s)" % v if isinstance(v, tuple) else v)
        print("  tessel pp=2 1F1B:                %s" % show(tessel_pp))
        print("  tessel 1 rank, --microbatches 4: %s" % show(tessel_one))
        print("  torch  pp=2 Schedule1F1B (gloo): %s" % show(torch_pp))
        print("  torch  1 rank:                   %s" % show(torch_one))
        if isinstance(tessel_pp, float) and isinstance(torch_pp, tuple):
            print("  torch / tessel (pp=2): %.2f" % (torch_pp[0] / tessel_pp))
        if isinstance(tessel_pp, float) and isinstance(tessel_one, float):
            print("  tessel 1 rank / pp=2: %.2f" % (tessel_one / tessel_pp))
        if isinstance(torch_pp, tuple) and isinstance(torch_one, tuple):
            print("  torch 1 rank / pp=2: %.2f" % (torch_one[0] / torch_pp[0]))
        print()

    if not args.only or args.only == "bubble":
        rows = []

        def gpt2_art(m):
            path = os.path.join(tmp, "gpt2_pp2_m%d.tsl" % m)
            return compile_pp(m, path) or path
        rows += bubble_rows("gpt2-small", gpt2_art, tessel_run, tesselc, out,
                            lambda r, m: ["--steps", str(args.steps)] + lm_of(m), env,
                            args.repeat)

        def hand_art(m):
            path = os.path.join(tmp, "hand_m%d.tsl" % m)
            rc, log = run([make_pipeline, "--stages", "2", "--microbatches", str(m),
                           "--rows", "256", "--width", "1024", path])
            return path if rc == 0 else "n/a (%s)" % first_error(log)
        rows += bubble_rows("hand-built 2x[256x1024]", hand_art, tessel_run, tesselc, out,
                            lambda r, m: ["--repeat", str(r)], env, args.repeat)
        print("Bubble, 1F1B, p=2, 2 ranks x 1 thread: measured (time blocked in recv/wait "
              "over step time, in a launch's traced last run; tessel-run's mean over the "
              "launch's runs beside it) vs the simulator's prediction for that run's "
              "per-stage F/B/W medians (ms); medians over %d launches" % TRIALS)
        for label, m, r in rows:
            if isinstance(r, str):
                print("  %-24s m=%d  %s" % (label, m, r))
                continue
            measured, pred, costs, step = r
            cost_text = "; ".join("stage %d F=%.2f B=%.2f W=%.2f" % ((s,) + c)
                                  for s, c in enumerate(costs))
            mean, last = measured
            for rank in sorted(pred):
                mb = last.get(rank, float("nan"))
                print("  %-24s m=%d rank %d: measured %5.1f%% (mean of the runs %5.1f%%)  "
                      "predicted %5.1f%%  (%+.1f points)"
                      % (label, m, rank, 100 * mb, 100 * mean.get(rank, float("nan")),
                         100 * pred[rank], 100 * (mb - pred[rank])))
            print("  %-24s m=%d costs: %s; predicted step %.1f ms" % (label, m, cost_text, step))
        print("pictures: %s/*.html (measured and predicted side by side)" % out)
    if not args.out:
        print("(temporary files in %s)" % tmp)


if __name__ == "__main__":
    main()
