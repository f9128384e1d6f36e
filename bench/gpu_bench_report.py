#!/usr/bin/env python3
"""The benchmark's page of scripts/gpu-check's report: Tessel's and PyTorch's
GPT-2-medium steps side by side, per precision.

    gpu_bench_report.py REP CONFIG.json OUT.md [PREDICTED.json]

REP holds, for P in f32 and bf16, tessel-bench-P.txt (tessel-run's log, its
"tessel-run: step K/N loss L T ms/step" lines) and torch-bench-P.json
(bench/gpu_gpt2_torch.py's). Writes OUT.md: per run the median ms of steps
2..N, model TFLOP/s (the FLOPs gpu_gpt2_torch.py counts, for both sides)
and MFU against the precision's peak (where the device reports one), the
first loss; then the losses side by side, and tesselc --predict's step for
this GPU (PREDICTED.json, made at bundle time) with its error. Prints a
one-line summary; exits 1 when a run failed or step 1's losses differ by
more than 1e-3 (f32) or 1e-2 (bf16, docs/training.md's bound).
"""
import json, re, statistics, sys, os
if len(sys.argv) not in (4, 5):
    sys.exit(__doc__)
rep, config, out = sys.argv[1:4]
predicted_path = sys.argv[4] if len(sys.argv) == 5 else ""
c = json.load(open(config))
# tesselc --predict's step on the built-in cluster of this GPU, made at
# bundle time (older bundles have none).
predicted = json.load(open(predicted_path)) if os.path.exists(predicted_path) else {}
# The losses must agree: f32 to 1e-3 at step 1, bf16 to docs/training.md's
# bound for bf16 training, 1e-2.
bounds = {"f32": 1e-3, "bf16": 1e-2}
rows, notes, ok, summary = [], [], True, []
torch0 = None
for p in ("f32", "bf16"):
    log = os.path.join(rep, f"tessel-bench-{p}.txt")
    steps = [(int(m.group(1)), float(m.group(2)), float(m.group(3))) for m in
             re.finditer(r"^tessel-run: step (\d+)/\d+ loss (\S+) +(\S+) ms/step",
                         open(log).read() if os.path.exists(log) else "", re.M)]
    tj = os.path.join(rep, f"torch-bench-{p}.json")
    torch = json.load(open(tj)) if os.path.exists(tj) else None
    torch0 = torch0 or torch
    flops = torch["flops_per_step"] if torch else None
    peak = torch.get(f"{p}_peak_flops") if torch else None
    def row(name, ms, loss):
        if flops and ms:
            tf = flops / (ms * 1e-3) / 1e12
            mfu = f"{100 * tf * 1e12 / peak:.1f} %" if peak else "-"
            summary.append(f"{name} {ms:.1f} {tf:.1f} {mfu}")
            return f"| {name} | {p} | {ms:.1f} | {tf:.1f} | {mfu} | {loss:.4f} |"
        summary.append(f"{name} {ms:.1f}")
        return f"| {name} | {p} | {ms:.1f} | - | - | {loss:.4f} |"
    if steps:
        timed = [s[2] for s in steps if s[0] > 1] or [steps[0][2]]
        rows.append(row("Tessel", statistics.median(timed), steps[0][1]))
        name = (torch or {}).get("device", "")
        cluster = "h200" if "H200" in name else "h100" if "H100" in name else None
        want = predicted.get(f"{cluster}_{p}") if cluster else None
        if want:
            got = statistics.median(timed)
            notes.append(f"{p}: tesselc --predict --cluster {cluster} gave {want:.1f} ms, "
                         f"{100 * (want - got) / got:+.1f} % from the {got:.1f} measured.")
    else:
        ok = False
        summary.append(f"Tessel {p} failed")
        rows.append(f"| Tessel | {p} | failed | - | - | - |")
    if torch:
        rows.append(row(f"PyTorch {torch['torch']} eager" + (" (autocast)" if p == "bf16" else ""),
                        torch["ms_per_step"], torch["losses"][0]))
    else:
        ok = False
        summary.append(f"PyTorch {p} failed")
        rows.append(f"| PyTorch eager | {p} | failed | - | - | - |")
    if steps and torch:
        mine = [s[1] for s in steps]
        theirs = torch["losses"][:len(mine)]
        rel = [abs(x - y) / abs(y) for x, y in zip(mine, theirs)]
        ok = ok and rel[0] <= bounds[p]
        notes.append(f"{p}: Tessel {', '.join('%.6f' % x for x in mine)}; PyTorch "
                     f"{', '.join('%.6f' % y for y in theirs)}; largest relative difference "
                     f"{max(rel):.2g} (step 1: {rel[0]:.2g}, bound {bounds[p]:g}).")
with open(out, "w") as f:
    f.write(f"GPT-2 shape: {c['layers']} layers, d {c['d']}, {c['heads']} heads, vocab {c['vocab']}, "
            f"seq {c['seq']}, batch {c['batch']}; AdamW; f32 without TF32 on both sides, and bf16 GEMMs "
            f"(tesselc --precision bf16; torch.autocast) with f32 master weights; median of steps 2..{c['steps']}.\n")
    if torch0 and "sms" in torch0:
        t = torch0
        f.write(f"Device {t['device']} ({t['sms']} SMs, SM clock {t['sm_clock_mhz']:.0f} MHz"
                f"{'' if t['clock_from_nvidia_smi'] else ', assumed'}): peak {t['f32_peak_flops'] / 1e12:.1f} "
                f"TFLOP/s f32, {t['bf16_peak_flops'] / 1e12:.0f} dense bf16; model FLOPs per step "
                f"{t['flops_per_step'] / 1e12:.2f} T (3 x the forward's GEMMs); PyTorch f32 peak memory "
                f"{t['max_memory_gib']:.1f} GiB.\n\n")
    f.write("| run | precision | ms/step | TFLOP/s | MFU (the precision's peak) | loss at step 1 |\n"
            "|---|---|---|---|---|---|\n")
    f.write("\n".join(rows) + "\n")
    if notes:
        f.write("\nLosses, same weights and batches; the cost model's prediction: " + " ".join(notes) + "\n")
print("; ".join(summary) + " (name, ms/step, TFLOP/s, MFU)")
sys.exit(0 if ok else 1)
