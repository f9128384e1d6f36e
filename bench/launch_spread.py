#!/usr/bin/env python3
"""How far this machine alone moves one artifact's measured step: the
noise floor under bench/run-plan-accuracy's 15 % bar.

Compiles one configuration of bench/plan_accuracy.py (a model of --models
and dp, tp, pp, zero2, fsdp or hybrid on --ranks) once, launches it
--launches times back to back (each launch times about --seconds of steps,
as the accuracy bench does), and prints the launches' medians: their
lowest, quartiles and highest; then the statistic the bench reports (the
lowest of --group launches) over consecutive groups, and whether any one
prediction could lie within --tol of every group's figure: that needs
highest / lowest <= (1 + tol) / (1 - tol), 1.353 for 15 %.

usage: launch_spread.py --tesselc BIN --tessel-run BIN --models DIR
                        --model gpt2_deep --config tp [--ranks 2]
                        [--launches 30] [--group 5] [--tol 15]
                        [--cluster FILE]
"""
import argparse
import os
import statistics
import sys
import tempfile

import benchlib
from plan_accuracy import (configs, launch, lm_batches, predicted_ms, run,
                           steps_for)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    benchlib.add_tool_args(ap, threads=False)
    ap.add_argument("--model", required=True)
    ap.add_argument("--config", required=True,
                    help="dp, tp, pp, zero2, fsdp or hybrid")
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--launches", type=int, default=30)
    ap.add_argument("--group", type=int, default=5)
    ap.add_argument("--tol", type=float, default=15.0)
    ap.add_argument("--cluster", default="cpu",
                    help="the cluster whose predicted step sizes the "
                         "launches (bench/calibrate_cpu.py's file, or the "
                         "built-in cpu)")
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--seconds", type=float, default=0.5)
    args = ap.parse_args()
    flags = dict(configs(args.ranks)).get(args.config)
    if flags is None:
        sys.exit("launch_spread.py: --config %s: one of %s" % (
            args.config, ", ".join(n for n, _ in configs(args.ranks))))
    if not 1 <= args.group <= args.launches:
        sys.exit("launch_spread.py: --group %d: between 1 and --launches "
                 "(%d)" % (args.group, args.launches))
    if not 0 < args.tol < 100:
        sys.exit("launch_spread.py: --tol %g: a percentage in (0, 100)" %
                 args.tol)
    mdir = os.path.join(args.models, args.model)
    onnx = os.path.join(mdir, "model.onnx")
    if not os.path.isfile(onnx):
        sys.exit("launch_spread.py: --model %s: no %s" % (args.model, onnx))
    benchlib.run_ahead_of_background_work()
    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.join(tmp, "ids.npy")
        mb = str(min(4, lm_batches(mdir, args.steps, data)))
        art = os.path.join(tmp, "a.tsl")
        c = run([args.tesselc, onnx, "--train", "--predict", "--cluster",
                 args.cluster, *[f.replace("{mb}", mb) for f in flags],
                 "-o", art])
        if c.returncode:
            sys.exit("launch_spread.py: %s %s x%d does not compile: %s" % (
                args.model, args.config, args.ranks,
                benchlib.first_error(c.stdout + c.stderr)))
        # Steps per launch as the accuracy bench sizes them, by the
        # prediction on --cluster (which sets nothing else here).
        args.steps_of = {art: steps_for(args, predicted_ms(c.stdout))}
        ms = []
        for _ in range(args.launches):
            meas, why = launch(args, art, args.ranks, data)
            if meas is None:
                sys.exit("launch_spread.py: %s %s x%d does not run: %s" % (
                    args.model, args.config, args.ranks, why))
            ms.append(meas)
    lo, hi = min(ms), max(ms)
    q = statistics.quantiles(ms, n=4) if len(ms) > 1 else [lo] * 3
    print("%s %s x%d: %d launches of %d steps: lowest %.3f ms, quartiles "
          "%.3f %.3f %.3f, highest %.3f (highest / lowest %.2f)" % (
              args.model, args.config, args.ranks, len(ms),
              args.steps_of[art], lo, q[0], q[1], q[2], hi, hi / lo))
    print("launches (ms per step, in order): %s" % " ".join(
        "%.3f" % m for m in ms))
    groups = [min(ms[i:i + args.group])
              for i in range(0, len(ms) - args.group + 1, args.group)]
    g_lo, g_hi = min(groups), max(groups)
    bound = (1 + args.tol / 100.0) / (1 - args.tol / 100.0)
    print("the lowest of %d launches, %d groups in turn: %s ms (highest / "
          "lowest %.2f)" % (args.group, len(groups),
                            " ".join("%.3f" % g for g in groups),
                            g_hi / g_lo))
    # Within tol of both g_lo and g_hi: p <= g_lo x (1 + tol) and
    # p >= g_hi x (1 - tol).
    lower, upper = g_hi * (1 - args.tol / 100.0), g_lo * (1 + args.tol / 100.0)
    if g_hi / g_lo <= bound:
        print("a prediction within %g%% of every group's figure: any in "
              "[%.3f, %.3f] ms" % (args.tol, lower, upper))
    else:
        print("no prediction is within %g%% of every group's figure: it "
              "would have to be >= %.3f and <= %.3f ms (%.2f > %.3f)" % (
                  args.tol, lower, upper, g_hi / g_lo, bound))


if __name__ == "__main__":
    main()
