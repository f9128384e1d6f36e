#!/usr/bin/env python3
"""tesselc --predict against tessel-run, side by side: for each model and
parallel configuration (dp, tp, pp, zero2, fsdp, hybrid) on 2 and 4 CPU ranks,
the predicted step time and the measured one (tessel-run's median over the
steps), and the error. The cluster file comes from bench/calibrate_cpu.py,
run first unless --cluster names one.

Then --plan=auto's choice beside the best configuration measured: at least
as fast, the best configuration's own plan, or slower; where slower, the two
are launched alternately --duel times more and compared again (this VM's
slow and fast spells move one artifact's launches by up to 60 %).

A launch counts where the machine ran it in its fast state, as the
calibration's figures are: a probe (the reference GPT-NeoX's dp=2 step,
Probe) on either side of it within --probe-tol of its fastest.

usage: plan_accuracy.py --tesselc BIN --tessel-run BIN --models DIR
                        [--cluster FILE] [--ranks 2,4] [--steps 60]
                        [--seconds 0.5] [--duel 4] [--csv]
                        [--probe ONNX] [--probe-tol 15] [--probe-tries 4]
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

import benchlib
from calibrate_cpu import REFERENCE, reference_ids

HERE = os.path.dirname(os.path.abspath(__file__))


def configs(n):
    """The configurations of n ranks: dp, tp and pp alone, ZeRO-2 and FSDP
    over dp, and a hybrid (pp x dp on 2 ranks, dp x tp beyond)."""
    hybrid = ("hybrid:pp=2,microbatches={mb}" if n == 2 else
              "hybrid:dp=%d,tp=2" % (n // 2))
    return [("dp", ["--mesh", "dp=%d" % n, "--plan=dp"]),
            ("tp", ["--mesh", "tp=%d" % n, "--plan=megatron"]),
            ("pp", ["--mesh", "pp=%d" % n, "--stages", "auto",
                    "--microbatches", "{mb}"]),
            ("zero2", ["--plugin", "zero2", "--mesh", "dp=%d" % n]),
            ("fsdp", ["--plugin", "fsdp", "--mesh", "dp=%d" % n]),
            ("hybrid", ["--plugin", hybrid])]


MODELS = ["gpt2_tiny", "gpt2_deep", "llama_tiny", "llama_hf"]


def run(cmd, timeout=600):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


def predicted_ms(text):
    m = re.search(r"predicted step: ([0-9.]+) ms", text)
    return float(m.group(1)) if m else None


def measured_ms(text):
    m = re.search(r"([0-9.]+) ms per step \(median", text)
    return float(m.group(1)) if m else None


def lm_batches(model_dir, steps, path):
    """Random token ids [steps, batch, seq + 1] below the model's vocab;
    returns the batch."""
    with open(os.path.join(model_dir, "meta.json")) as f:
        meta = json.load(f)
    batch, seq = meta["inputs"]["input_ids"]
    vocab = meta["output"][-1]
    rng = np.random.default_rng(0)
    np.save(path, rng.integers(0, vocab, (steps, batch, seq + 1)).astype(np.int64))
    return batch


def steps_for(args, pred_ms):
    """Steps per launch: --steps, or more where the predicted step is short,
    so that every launch times about --seconds (a 0.6 ms step's 60 steps are
    36 ms, one time slice's worth of the machine's moods)."""
    if not pred_ms:
        return args.steps
    return max(args.steps, min(5000, int(args.seconds * 1000.0 / pred_ms)))


def launch(args, art, ranks, data):
    """One launch: tessel-run's median ms per step, or (None, why)."""
    r = run([args.tessel_run, art, "-n", str(ranks), "--steps",
             str(args.steps_of.get(art, args.steps)), "--data-lm", data])
    meas = measured_ms(r.stdout)
    if r.returncode or meas is None:
        return None, benchlib.first_error(r.stdout + r.stderr)
    return meas, ""


class Probe:
    """The machine's state, by a fixed program launched between the
    measured launches: the calibration's reference model (a GPT-NeoX of
    test/models/zoo, which this bench does not otherwise measure), its
    data-parallel step on 2 ranks. This VM's speed moves between levels
    every few seconds: that probe ran 0.62, 0.77-0.82, 0.44-0.47 and 0.60
    ms in twenty launches back to back (a Llama's tp=4 step 1.25 ms in one
    spell, 0.73 in another). The calibration keeps the machine's fastest
    figures; a launch counts as in the machine's fast state when the probes
    on either side of it run within --probe-tol of the probe's fastest
    launch so far. Each configuration is launched until --repeat launches
    count, at most --probe-tries times as many launches in all."""

    RANKS = 2

    def __init__(self, args, tmp):
        self.args = args
        self.best = None
        self.launches = self.fast = 0
        self.art = os.path.join(tmp, "probe.tsl")
        self.data = reference_ids(tmp)
        c = run([args.tesselc, args.probe, "--train", "--mesh",
                 "dp=%d" % self.RANKS, "--plan=dp", "--predict", "--cluster",
                 args.cluster_file, "-o", self.art])
        pred = predicted_ms(c.stdout)
        if c.returncode or pred is None:
            sys.exit("plan_accuracy.py: the probe (%s, dp=%d) does not "
                     "compile: %s" % (args.probe, self.RANKS,
                                      benchlib.first_error(c.stdout + c.stderr)))
        # About a quarter of a measured launch.
        args.steps_of[self.art] = steps_for(args, 4.0 * pred)
        for _ in range(3):
            self.last = self.check()

    def check(self):
        """Launches the probe: whether it ran within --probe-tol of its
        fastest."""
        meas, why = launch(self.args, self.art, self.RANKS, self.data)
        if meas is None:
            sys.exit("plan_accuracy.py: the probe (%s, dp=%d) does not run: "
                     "%s" % (self.args.probe, self.RANKS, why))
        self.best = meas if self.best is None else min(self.best, meas)
        return meas <= self.best * (1.0 + self.args.probe_tol / 100.0)

    def bracket(self, launch_once):
        """Runs launch_once() between two probes: (its result, whether the
        machine was in its fast state on both sides)."""
        before = self.last
        out = launch_once()
        self.last = self.check()
        fast = before and self.last
        self.launches += 1
        self.fast += fast
        return out, fast


def measure_all(args, arts, ranks, data, probe):
    """Each artifact's lowest launch median over --repeat rounds, and the
    launches' spread ((highest - lowest) / lowest, in %: what this machine
    alone moves the same artifact by); or (None, None, why). The rounds go
    over every artifact in turn, so that each one's launches meet the
    machine's slow and fast spells alike; with a Probe, each round launches
    an artifact until a launch falls in the machine's fast state (up to
    --probe-tries), and the lowest counts over those launches (over all,
    where none did)."""
    medians = {art: [] for art in arts}
    fast = {art: [] for art in arts}
    failed = {}
    for _ in range(args.repeat):
        for art in arts:
            for _ in range(args.probe_tries if probe else 1):
                if art in failed:
                    break
                if probe:
                    (meas, why), ok = probe.bracket(
                        lambda: launch(args, art, ranks, data))
                else:
                    (meas, why), ok = launch(args, art, ranks, data), True
                if meas is None:
                    failed[art] = why
                    break
                medians[art].append(meas)
                if ok:
                    fast[art].append(meas)
                    break
    out = {}
    for art in arts:
        if art in failed:
            out[art] = (None, None, failed[art])
        else:
            lowest = min(medians[art])
            out[art] = (min(fast[art] or medians[art]),
                        100.0 * (max(medians[art]) - lowest) / lowest, "")
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    benchlib.add_tool_args(ap, threads=False)
    ap.add_argument("--cluster")
    ap.add_argument("--ranks", default="2,4")
    ap.add_argument("--steps", type=int, default=60,
                    help="the fewest steps per launch")
    ap.add_argument("--seconds", type=float, default=0.5,
                    help="time each launch runs for about this long, by its "
                         "predicted step (up to 5000 steps)")
    ap.add_argument("--duel", type=int, default=4,
                    help="where --plan=auto measured slower than the best "
                         "configuration, launch the two alternately this "
                         "many times more each (0: don't)")
    ap.add_argument("--only", default="")
    ap.add_argument("--csv", action="store_true")
    ap.add_argument("--repeat", type=int, default=5,
                    help="launches per configuration, in rounds over a "
                         "model's configurations; the lowest median counts "
                         "(other work on the machine only adds time)")
    ap.add_argument("--probe", default=REFERENCE,
                    help="the model whose data-parallel step tells the "
                         "machine's state on either side of each launch "
                         "(\"\": none)")
    ap.add_argument("--probe-tol", type=float, default=15.0,
                    help="a launch is in the machine's fast state when the "
                         "probes on either side of it run within this many "
                         "%% of the probe's fastest")
    ap.add_argument("--probe-tries", type=int, default=4,
                    help="launches per round of a configuration, at most, "
                         "until one is in the fast state")
    args = ap.parse_args()
    if args.probe_tries < 1:
        sys.exit("plan_accuracy.py: --probe-tries %d: at least 1" %
                 args.probe_tries)
    if args.probe and not os.path.isfile(args.probe):
        sys.exit("plan_accuracy.py: --probe %s: no such file" % args.probe)
    args.steps_of = {}
    benchlib.run_ahead_of_background_work()
    tmp = tempfile.mkdtemp(prefix="plan-accuracy-")
    cluster = args.cluster
    if not cluster:
        cluster = os.path.join(tmp, "cpu.yaml")
        p = run([sys.executable, os.path.join(HERE, "calibrate_cpu.py"),
                 "--tesselc", args.tesselc, "--tessel-run", args.tessel_run,
                 "-o", cluster])
        if p.returncode:
            sys.exit(p.stdout + p.stderr)
        print(p.stdout.strip().splitlines()[-1], file=sys.stderr)
    args.cluster_file = cluster
    rows, duels = [], []
    probe = Probe(args, tmp) if args.probe else None
    for ranks in [int(r) for r in args.ranks.split(",")]:
        for model in MODELS:
            mdir = os.path.join(args.models, model)
            if not os.path.isfile(os.path.join(mdir, "model.onnx")):
                continue
            data = os.path.join(tmp, model + ".npy")
            # Microbatches: 4, or the whole batch one sample each.
            mb = str(min(4, lm_batches(mdir, args.steps, data)))
            # Compiled first: (name, artifact, predicted ms, note).
            compiled = []
            for name, flags in configs(ranks):
                if args.only and args.only not in "%s %s x%d" % (
                        model, name, ranks):
                    continue
                art = os.path.join(tmp, "%s-%s-%d.tsl" % (model, name, ranks))
                c = run([args.tesselc, os.path.join(mdir, "model.onnx"),
                         "--train", "--predict", "--cluster", cluster,
                         *[f.replace("{mb}", mb) for f in flags],
                         "-o", art])
                pred = predicted_ms(c.stdout)
                if c.returncode or pred is None:
                    why = benchlib.first_error(c.stdout + c.stderr)
                    rows.append((model, name, ranks, None, None, None,
                                 "no compile: " + why))
                    continue
                compiled.append((name, art, pred, ""))
                args.steps_of[art] = steps_for(args, pred)
            if not args.only or args.only in "%s auto x%d" % (model, ranks):
                # --plan=auto's choice, measured as the others.
                art = os.path.join(tmp, "%s-auto-%d.tsl" % (model, ranks))
                c = run([args.tesselc, os.path.join(mdir, "model.onnx"),
                         "--train", "--plan=auto", "--devices", str(ranks),
                         "--predict", "--cluster", cluster, "-o", art])
                chosen = re.search(r"^chosen: (.*?) \(", c.stdout, re.M)
                if c.returncode or not chosen:
                    why = benchlib.first_error(c.stdout + c.stderr)
                    rows.append((model, "auto", ranks, None, None, None,
                                 "no compile: " + why))
                else:
                    compiled.append(("auto", art, predicted_ms(c.stdout),
                                     "chose " + chosen.group(1)))
                    args.steps_of[art] = steps_for(args,
                                                   predicted_ms(c.stdout))
            measured = measure_all(args, [a for _, a, _, _ in compiled],
                                   ranks, data, probe)
            for name, art, pred, note in compiled:
                meas, spread, why = measured[art]
                rows.append((model, name, ranks, pred, meas, spread,
                             note if meas is not None else "no run: " + why))
            duel = auto_duel(args, model, ranks, compiled, measured, data)
            if duel:
                duels.append(duel)
    report(rows, args.csv)
    for line in duels:
        print(line)
    if probe and not args.csv:
        print("probe (%s, dp=%d): fastest %.3f ms; %d of %d launches in the "
              "machine's fast state (the probes on either side within %.0f%% "
              "of its fastest)" % (
                  os.path.relpath(args.probe), probe.RANKS, probe.best,
                  probe.fast, probe.launches, args.probe_tol))


def same_plan(chosen, ranks):
    """The configuration of configs() that --plan=auto's choice is, if it is
    one of the two plain ones."""
    if chosen == "dp=1 tp=%d pp=1" % ranks:
        return "tp"
    if chosen == "dp=%d tp=1 pp=1 ddp" % ranks:
        return "dp"
    return None


def auto_duel(args, model, ranks, compiled, measured, data):
    """Where --plan=auto's choice measured slower than the best configuration,
    the two again, launched alternately --duel times each: the same machine
    spell for both, so that what remains is the plans' difference. Returns
    the verdict's line, or None."""
    auto = [(art, note) for name, art, _, note in compiled if name == "auto"]
    if not auto or not args.duel:
        return None
    auto_art, note = auto[0]
    if measured[auto_art][0] is None:
        return None
    others = [(measured[a][0], n, a) for n, a, _, _ in compiled
              if n != "auto" and measured[a][0] is not None]
    if not others:
        return None
    best, which, best_art = min(others)
    chosen = note[len("chose "):]
    if measured[auto_art][0] <= best or same_plan(chosen, ranks) == which:
        return None
    a_ms, b_ms = [], []
    for _ in range(args.duel):
        for art, out in ((auto_art, a_ms), (best_art, b_ms)):
            meas, why = launch(args, art, ranks, data)
            if meas is None:
                return "%s x%d: duel of auto and %s: no run: %s" % (
                    model, ranks, which, why)
            out.append(meas)
    ratios = sorted(a / b for a, b in zip(a_ms, b_ms))
    lo_a, lo_b = min(a_ms), min(b_ms)
    same = same_plan(chosen, ranks)
    return ("%s x%d, launched alternately %d times each: --plan=auto (%s%s) "
            "%.3f ms, %s %.3f ms: %s; auto/best per pair %.2f-%.2f, "
            "median %.2f" % (
                model, ranks, args.duel, chosen,
                ", the same plan as " + same if same else "", lo_a, which,
                lo_b, "at least as fast" if lo_a <= lo_b else
                "%.1f%% slower" % (100.0 * (lo_a - lo_b) / lo_b),
                ratios[0], ratios[-1], ratios[len(ratios) // 2]))


def report(rows, csv):
    """The table (or CSV), the summary, and --plan=auto beside the best."""
    if csv:
        print("model,config,ranks,predicted_ms,measured_ms,error_pct,"
              "spread_pct")
    else:
        print("%-12s %-7s %5s %12s %12s %8s %7s" % (
            "model", "config", "ranks", "predicted", "measured", "error",
            "spread"))
    errors, noisy = [], 0
    for model, name, ranks, pred, meas, spread, note in rows:
        err = 100.0 * (pred - meas) / meas if pred and meas else None
        if err is not None:
            errors.append(abs(err))
            noisy += abs(err) > 15 and spread > 15
        if csv:
            print("%s,%s,%d,%s,%s,%s,%s" % (
                model, name, ranks, "" if pred is None else "%.3f" % pred,
                "" if meas is None else "%.3f" % meas,
                "" if err is None else "%.1f" % err,
                "" if spread is None else "%.1f" % spread))
        else:
            print("%-12s %-7s %5d %12s %12s %8s %7s %s" % (
                model, name, ranks,
                "-" if pred is None else "%.3f ms" % pred,
                "-" if meas is None else "%.3f ms" % meas,
                "-" if err is None else "%+.1f%%" % err,
                "-" if spread is None else "%.0f%%" % spread, note))
    if errors and not csv:
        print("%d configurations: mean |error| %.1f%%, max %.1f%%, within "
              "15%%: %d; of the others, %d whose launches alone spread over "
              "15%% (spread: the same artifact's highest launch median over "
              "its lowest)" % (len(errors), sum(errors) / len(errors),
                               max(errors), sum(e <= 15 for e in errors),
                               noisy))
    # auto against the best configuration measured, per model and ranks.
    for model, name, ranks, pred, meas, spread, note in rows:
        if name != "auto" or meas is None:
            continue
        others = [(m, n) for mo, n, r, p, m, _, _ in rows
                  if mo == model and r == ranks and n != "auto" and m]
        if others:
            best, which = min(others)
            chosen = note[len("chose "):]
            if meas <= best:
                verdict = "at least as fast"
            elif same_plan(chosen, ranks) == which:
                # Two compilations of one plan: what they measure apart is
                # this machine's alone.
                verdict = ("the best configuration's own plan (its two "
                           "compilations measured %.1f%% apart)" % (
                               100.0 * (meas - best) / best))
            else:
                verdict = "%.1f%% slower" % (100.0 * (meas - best) / best)
            print("%s x%d: --plan=auto (%s) measured %.3f ms, the best "
                  "configuration (%s) %.3f ms: %s" % (
                      model, ranks, chosen, meas, which, best, verdict))

if __name__ == "__main__":
    main()
