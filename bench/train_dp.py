"""The data-parallel rows of bench/compare_train.py: GPT-2-small on 2 ranks x
1 thread against one rank x 1 thread, both ways of counting.

- strong scaling: the global batch fixed (4), each rank computes 2 rows;
- weak scaling: each rank's batch fixed (4, the one-rank run's), the global
  batch 8 — what DDP's speedup usually means, and how the issue's PyTorch
  figure (DDP over gloo, 1.32x) was measured;
and PyTorch's DistributedDataParallel over gloo on the same weak-scaling
batches, beside it in the same run (bench/torch_ddp_child.py).
"""
import os
import re
import socket
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return str(s.getsockname()[1])


def torch_ddp(models, batch, steps, losses, env):
    """PyTorch DDP on 2 ranks over gloo: (median ms, peak RSS KB of rank 0)
    or an n/a string."""
    port = free_port()
    procs = [subprocess.Popen(
        ["/usr/bin/time", "-f", "__RSS_KB__ %M", sys.executable,
         os.path.join(HERE, "torch_ddp_child.py"), str(r), "2", port, models,
         str(batch), str(steps), losses],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
        for r in range(2)]
    logs = [p.communicate()[0] for p in procs]
    if any(p.returncode for p in procs):
        return "n/a (%s)" % [l.strip().splitlines()[-1] for l in logs if l.strip()][-1]
    ms = float(re.search(r"^ms ([\d.]+)", logs[0], re.M).group(1))
    rss = max(int(m) for l in logs for m in re.findall(r"__RSS_KB__ (\d+)", l))
    return ms, rss


def dp_rows(args, env, tmp, one_rank, torch_one_rank, run_measured, first_error,
            tessel_step_ms, rel_diff, adamw):
    """[(label, per-rank batch, global batch, ms or n/a, rss KB, losses)]: the
    one-rank runs given, then Tessel's dp=2 strong and weak, PyTorch's DDP."""
    rows = [("Tessel, one rank", 4, 4) + one_rank]
    if torch_one_rank is not None:
        rows.append(("PyTorch, one rank", 4, 4) + torch_one_rank)
    for per_rank, batch in ((2, 4), (4, 8)):
        label = "Tessel dp=2 (%s)" % ("strong" if batch == 4 else "weak")
        model = os.path.join(args.models, "gpt2_small_train_b%d.onnx" % batch)
        if not os.path.exists(model):
            rows.append((label, per_rank, batch, "n/a (%s missing)" % model, 0, None))
            continue
        art = os.path.join(tmp, "gpt2_dp2_b%d.tsl" % batch)
        rc, log, _ = run_measured([args.tesselc, model, "--train", "--loss", "cross_entropy"]
                                  + adamw + ["--mesh", "dp=2", "--plan=dp", "-o", art], env)
        if rc != 0:
            rows.append((label, per_rank, batch, "n/a (%s)" % first_error(log), 0, None))
            continue
        losses = os.path.join(tmp, "dp_losses_b%d.npy" % batch)
        rc, log, rss = run_measured(
            [args.tessel_run, art, "-n", "2", "--threads", "1", "--steps", str(args.steps),
             "--losses", losses, "--data-lm",
             os.path.join(args.models, "gpt2_small_b%d_batches.npy" % batch)], env)
        rows.append((label, per_rank, batch,
                     tessel_step_ms(log) if rc == 0 else "n/a (%s)" % first_error(log),
                     rss, np.load(losses) if rc == 0 else None))
    if not args.no_torch:
        losses = os.path.join(tmp, "ddp_losses.npy")
        r = torch_ddp(args.models, 8, args.steps, losses, env)
        rows.append(("PyTorch DDP gloo (weak)", 4, 8)
                    + ((r[0], r[1], np.load(losses)) if isinstance(r, tuple) else (r, 0, None)))
    return rows


def print_dp(rows, rel_diff):
    print()
    print("Data parallel, GPT-2-small seq 128, AdamW: 2 ranks x 1 thread against one "
          "rank x 1 thread (speedup = throughput over the same engine's one rank)")
    print()
    print("| run | batch per rank | global batch | ms/step | samples/s | speedup "
          "| peak RSS MB per rank | loss rel diff |")
    print("|---|---|---|---|---|---|---|---|")
    one = {r[0].split(",")[0].split(" ")[0]: r for r in rows if "one rank" in r[0]}
    weak = {r[0].split(" ")[0]: r for r in rows if "weak" in r[0]}
    for label, per, batch, ms, rss, losses in rows:
        if not isinstance(ms, float):
            print("| %s | %d | %d | %s | | | | |" % (label, per, batch, ms))
            continue
        engine = label.split(",")[0].split(" ")[0]
        base = one.get(engine)
        speed = ("%.2fx" % ((batch / ms) / (base[2] / base[3]))
                 if base and isinstance(base[3], float) and "one rank" not in label else "")
        # Tessel's and PyTorch's weak-scaling runs see the same batches.
        other = weak.get("PyTorch" if engine == "Tessel" else "Tessel")
        diff = ("%.1e" % rel_diff(losses, other[5])
                if "weak" in label and other is not None and losses is not None
                and other[5] is not None else "")
        print("| %s | %d | %d | %.0f | %.2f | %s | %.0f | %s |"
              % (label, per, batch, ms, 1000.0 * batch / ms, speed, rss / 1024, diff))
