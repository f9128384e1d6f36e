#!/usr/bin/env python3
"""Measures this machine's CPU figures for the cost model and writes them as a
cluster file (docs/auto-plan.md): what tesselc --predict --cluster FILE reads.

Each figure comes from tessel-run running small programs that tesselc
compiled, timed per instruction (--trace), and fitted by least squares:
  - matmuls of several sizes, three forms: time = op_overhead + FLOPs /
    (rate x d / (d + D0)), d the GEMM's smallest dimension; rate and D0
    fitted
  - add over several sizes:       time = op_overhead + bytes / memory bandwidth
  - the link's bandwidth: all_reduce, all_gather and reduce_scatter of four
    sizes back to back, fitted as the shm communicator runs them (sync
    points x latency + bytes / bandwidth: shm_terms); its latency: the
    collectives inside a reference model's training steps (a GPT-NeoX of
    test/models/zoo, tensor parallel and ZeRO-2, traced), each sync point
    beyond its bytes (without the reference: the back-to-back fit's)
  - async_overhead (the communication thread shares the rank's core): the
    sends of the reference model's pipeline (pp over the ranks), each one's
    time beyond its copy, their median; without the reference, a chain of
    all_reduce, matmul, add run synchronously and as gradient buckets, the
    asynchronous path's extra time per collective (0 where the runtime
    runs them in place: shared memory, a core per rank)
  - op_rates: the non-GEMM kernels of the same reference steps (gelu,
    softmax, transpose, the optimizer, ...), each kind's elements (of its
    largest tensor) over its traced seconds, where the roofline's bytes over
    memory bandwidth misses their arithmetic or access pattern
  - devices_per_node: the cores this process may run on.
  - intra_node.shared_latency (with --shared-ranks S, by default twice the
    cores up to 8): the reference model's tensor-parallel step on S ranks
    sharing the cores (its lowest launch, launched in every round) against
    its prediction; the seconds per sync point that make the two agree (a
    rank's switch to the other rank of its core and back, the caches
    refilled).

usage: calibrate_cpu.py --tesselc BIN --tessel-run BIN -o cpu.yaml [--ranks N]
                        [--rounds R] [--quick]

--quick runs every measurement above once, on fewer copies and steps: a
complete cluster file in seconds, its figures rough (test/Tools/
calibrate-cpu.test checks that tesselc reads what it writes).
"""
import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile

import numpy as np

import benchlib

MATMULS = [(16, 64, 64), (32, 64, 128), (64, 128, 128), (64, 256, 256),
           (128, 256, 512), (256, 256, 512),
           # shallow contractions (a microbatch's weight gradients)
           (128, 8, 512), (128, 16, 512), (128, 32, 512)]
ELEMENTWISE = [256, 4096, 65536, 262144]
COLLECTIVE_SIZES = [1024, 16384, 131072, 524288]  # f32 elements
COPIES = 5  # of each op, for a median
CHAIN = 20  # rounds of the asynchronous-overhead programs
TINY = 400  # ops of the per-op overhead program
LAUNCHES = 3  # of each micro-program; each figure its lowest
REFERENCE_STEPS = 30  # traced steps of each reference configuration


def use_quick_sizes():
    """--quick: every measurement once, on fewer copies and steps (a test's
    calibration: the file complete in seconds, its figures rough)."""
    global COPIES, CHAIN, TINY, LAUNCHES, REFERENCE_STEPS
    global SHARED_LAUNCHES, SHARED_STEPS
    COPIES, CHAIN, TINY, LAUNCHES, REFERENCE_STEPS = 3, 5, 100, 2, 10
    SHARED_LAUNCHES, SHARED_STEPS = 1, 30


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if p.returncode:
        sys.exit("calibrate: %s failed:\n%s%s" % (cmd[0], p.stdout, p.stderr))
    return p.stdout


def inverse(x):
    """1 / x; infinity (which check_figures refuses) for a fitted slope
    that is not positive."""
    return 1.0 / x if x > 0 else math.inf


def fit(xs, ys):
    """Least squares y = a + b x; returns (a, b), a clamped at 0."""
    b, a = np.polyfit(np.asarray(xs, float), np.asarray(ys, float), 1)
    return max(a, 0.0), b


def durations(trace_path):
    """Per event name: the durations (seconds) over the ranks."""
    with open(trace_path) as f:
        events = json.load(f)["traceEvents"]
    out = {}
    for e in events:
        if e.get("ph") == "X":
            out.setdefault(e["name"], []).append(e["dur"] * 1e-6)
    return out


def compute_program():
    """One rank: COPIES of each matmul (as a forward's a @ b and as its two
    backward gemms, aT @ g and g @ bT) and of each elementwise op, each on
    its own inputs."""
    args, ops, rets, inputs = [], [], [], {}

    def arg(name, shape):
        args.append("%%%s: tensor<%sxf32>" % (name, "x".join(map(str, shape))))
        inputs[name] = np.full(shape, 0.5, np.float32)

    def ty(shape):
        return "tensor<%sxf32>" % "x".join(map(str, shape))
    for i, (m, k, n) in enumerate(MATMULS):
        arg("a%d" % i, (m, k))
        arg("b%d" % i, (k, n))
        arg("g%d" % i, (m, n))
        # (lhs, rhs, attrs, lhs shape, rhs shape, result shape)
        forms = [("a", "b", "", (m, k), (k, n), (m, n)),
                 ("a", "g", " {trans_a}", (m, k), (m, n), (k, n)),
                 ("g", "b", " {trans_b}", (m, n), (k, n), (m, k))]
        for c in range(COPIES):
            for f, (l, r, attrs, ls, rs, os_) in enumerate(forms):
                op = "tessel.matmul" if not attrs else "tessel.gemm"
                v = "%%m%d_%d_%d" % (i, c, f)
                ops.append('%s = %s %%%s%d, %%%s%d%s : (%s, %s) -> %s loc("mm_%d_%d_%d_%d_%d")'
                           % (v, op, l, i, r, i, attrs, ty(ls), ty(rs), ty(os_),
                              m, k, n, f, c))
                rets.append((v, ty(os_)))
    for i, n in enumerate(ELEMENTWISE):
        t = ty((n,))
        arg("e%d" % i, (n,))
        arg("f%d" % i, (n,))
        for c in range(COPIES):
            for kind, text, nbytes in [
                    ("add", "tessel.add %%e%d, %%f%d : (%s, %s) -> %s", 12),
                    ("mul", "tessel.mul %%e%d, %%f%d : (%s, %s) -> %s", 12),
                    ("exp", "tessel.exp %%e%d : %s", 8),
                    ("sqrt", "tessel.sqrt %%e%d : %s", 8)]:
                fill = (i, i, t, t, t) if "%%f" in text else (i, t)
                v = "%%%s%d_%d" % (kind, i, c)
                ops.append(("%s = " + text + ' loc("ew_%d_%d_%s_%d")')
                           % ((v,) + fill + (n, nbytes, kind, c)))
                rets.append((v, t))
    names = [a.split(":")[0][1:] for a in args]
    text = ("module {\n  func.func @main(%s) -> (%s) attributes "
            "{tessel.input_names = [%s]} {\n    %s\n    return %s : %s\n  }\n}\n"
            % (", ".join(args), ", ".join(t for _, t in rets),
               ", ".join('"%s"' % n for n in names), "\n    ".join(ops),
               ", ".join(v for v, _ in rets), ", ".join(t for _, t in rets)))
    return text, inputs


def shm_terms(kind, whole, n):
    """The shm communicator's collective ("ar", "ag" or "rs") of `whole`
    bytes (an all_reduce's or reduce_scatter's operand, an all_gather's
    result) on n ranks, as the cost model has it
    (getSharedBufferCollectiveTime): (sync points, bytes at the link's
    bandwidth); its time is sync points x latency + bytes / bandwidth. On 2
    ranks, a ring's."""
    if kind == "ar":
        return 2.0, whole
    if kind == "ag":
        return 1.0, (whole + whole / n) / 3.0
    return 1.0, (2.0 * whole + whole / n) / 5.0


def collective_program(ranks):
    """COPIES of each collective training programs run, over a dp axis of
    `ranks`, at each size (the whole tensor's elements): all_reduce of a
    vector, all_gather and reduce_scatter along dim 1 of a [64, n/64]
    matrix (tensor parallelism's and ZeRO's layouts)."""
    args, ops, rets, inputs = [], [], [], {}
    for i, n in enumerate(COLLECTIVE_SIZES):
        cols = max(n // 64, ranks)
        cols -= cols % ranks
        whole, part = "tensor<64x%dxf32>" % cols, "tensor<64x%dxf32>" % (cols // ranks)
        t = "tensor<%dxf32>" % n
        args += ["%%x%d: %s" % (i, t), "%%m%d: %s" % (i, whole),
                 "%%p%d: %s" % (i, part)]
        inputs["x%d" % i] = np.ones((n,), np.float32)
        inputs["m%d" % i] = np.ones((64, cols), np.float32)
        inputs["p%d" % i] = np.ones((64, cols // ranks), np.float32)
        for c in range(COPIES):
            ops.append('%%r%d_%d = tessel.all_reduce sum %%x%d on @mesh axes = ["dp"] : %s loc("ar_%d_%d")'
                       % (i, c, i, t, n, c))
            rets.append(("%%r%d_%d" % (i, c), t))
            ops.append('%%g%d_%d = tessel.all_gather %%p%d on @mesh axes = ["dp"] dim = 1 : (%s) -> %s loc("ag_%d_%d")'
                       % (i, c, i, part, whole, 64 * cols, c))
            rets.append(("%%g%d_%d" % (i, c), whole))
            ops.append('%%s%d_%d = tessel.reduce_scatter sum %%m%d on @mesh axes = ["dp"] dim = 1 : (%s) -> %s loc("rs_%d_%d")'
                       % (i, c, i, whole, part, 64 * cols, c))
            rets.append(("%%s%d_%d" % (i, c), part))
    names = [a.split(":")[0][1:] for a in args]
    text = ('module {\n  tessel.mesh @mesh ["dp"=%d]\n  func.func @main(%s) -> (%s) '
            'attributes {tessel.input_names = [%s]} {\n    %s\n'
            '    return %s : %s\n  }\n}\n'
            % (ranks, ", ".join(args), ", ".join(t for _, t in rets),
               ", ".join('"%s"' % n for n in names), "\n    ".join(ops),
               ", ".join(v for v, _ in rets), ", ".join(t for _, t in rets)))
    return text, inputs


def chain_program(ranks, bucket):
    """CHAIN rounds of: an all_reduce of a [64, 512] matrix, a [128, 128]
    matmul that does not read it, an add that does: synchronous, or as a
    gradient bucket (tessel.bucket: the communication thread runs it and
    the add waits for it), as training steps issue them."""
    attr = " {tessel.bucket = %d : i64}" if bucket else ""
    ops, rets = [], []
    prev = "%a"
    for c in range(CHAIN):
        ops.append('%%g%d = tessel.all_reduce sum %%p on @mesh axes = ["dp"]%s : tensor<64x512xf32>'
                   % (c, attr % c if bucket else ""))
        ops.append("%%h%d = tessel.matmul %s, %%b : (tensor<128x128xf32>, "
                   "tensor<128x128xf32>) -> tensor<128x128xf32>" % (c, prev))
        prev = "%%h%d" % c
        ops.append("%%u%d = tessel.add %%g%d, %%g%d : (tensor<64x512xf32>, "
                   "tensor<64x512xf32>) -> tensor<64x512xf32>" % (c, c, c))
        rets.append(("%%u%d" % c, "tensor<64x512xf32>"))
    rets.append((prev, "tensor<128x128xf32>"))
    text = ('module {\n  tessel.mesh @mesh ["dp"=%d]\n  func.func @main(%%a: '
            'tensor<128x128xf32>, %%b: tensor<128x128xf32>, %%p: '
            'tensor<64x512xf32>) -> (%s) attributes {tessel.input_names = '
            '["a", "b", "p"]} {\n    %s\n    return %s : %s\n  }\n}\n'
            % (ranks, ", ".join(t for _, t in rets), "\n    ".join(ops),
               ", ".join(v for v, _ in rets), ", ".join(t for _, t in rets)))
    inputs = {"a": np.full((128, 128), 0.01, np.float32),
              "b": np.full((128, 128), 0.01, np.float32),
              "p": np.ones((64, 512), np.float32)}
    return text, inputs


def lowest_seconds(cmd, launches, per):
    """The lowest of `launches` runs of tessel-run `cmd`: its median "ms per
    <per>" ("run", "step"), in seconds."""
    best = None
    for _ in range(launches):
        out = run(cmd)
        t = float(out.split(" ms per " + per)[0].rsplit(" ", 1)[1]) * 1e-3
        best = t if best is None else min(best, t)
    return best


def run_time(args, tmp, name, text, inputs, ranks, launches=None):
    """tessel-run's median ms per run of the program, the lowest of
    `launches`."""
    src = os.path.join(tmp, name + ".mlir")
    with open(src, "w") as f:
        f.write(text)
    art = os.path.join(tmp, name + ".tsl")
    run([args.tesselc, src, "-o", art])
    cmd = [args.tessel_run, art, "--repeat", "10", "-n", str(ranks)]
    for k, v in inputs.items():
        p = os.path.join(tmp, name + "-" + k + ".npy")
        np.save(p, v)
        cmd += ["--input", "%s=%s" % (k, p)]
    return lowest_seconds(cmd, launches or LAUNCHES, "run")


def tiny_chain_program():
    """TINY dependent adds of 16 elements: each costs what running any op
    costs (dispatch, kernel entry), its bytes nothing."""
    ops = []
    prev = "%x"
    for c in range(TINY):
        ops.append("%%t%d = tessel.add %s, %%x : (tensor<16xf32>, "
                   "tensor<16xf32>) -> tensor<16xf32>" % (c, prev))
        prev = "%%t%d" % c
    text = ("module {\n  func.func @main(%%x: tensor<16xf32>) -> "
            "tensor<16xf32> attributes {tessel.input_names = [\"x\"]} {\n"
            "    %s\n    return %s : tensor<16xf32>\n  }\n}\n"
            % ("\n    ".join(ops), prev))
    return text, {"x": np.full((16,), 0.5, np.float32)}


def compile_and_trace(args, tmp, name, text, inputs, ranks=1):
    src = os.path.join(tmp, name + ".mlir")
    with open(src, "w") as f:
        f.write(text)
    art = os.path.join(tmp, name + ".tsl")
    run([args.tesselc, src, "-o", art])
    cmd = [args.tessel_run, art, "--repeat", "5", "--trace",
           os.path.join(tmp, name + ".json")]
    if ranks > 1:
        cmd += ["-n", str(ranks)]
    for k, v in inputs.items():
        p = os.path.join(tmp, k + ".npy")
        np.save(p, v)
        cmd += ["--input", "%s=%s" % (k, p)]
    # Each event's lowest time over LAUNCHES launches: other work on the
    # machine only adds time.
    best = {}
    for _ in range(LAUNCHES):
        run(cmd)
        for event, ts in durations(os.path.join(tmp, name + ".json")).items():
            m = statistics.median(ts)
            best[event] = [min(best.get(event, [m])[0], m)]
    return best


REFERENCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                         "test", "models", "zoo", "gpt_neox", "leg",
                         "model.onnx")


# The kernels op_rates times: those whose work follows their largest tensor
# (not gather's, whose table is large and whose work is its rows).
RATED_KINDS = {
    "add", "sub", "mul", "div", "neg", "exp", "log", "tanh", "sqrt", "rsqrt",
    "pow", "gelu", "gelu_grad", "sigmoid", "silu", "relu", "relu_grad",
    "softmax", "softmax_grad", "log_softmax", "log_softmax_grad",
    "layer_norm", "reduce_sum", "reduce_mean", "reduce_max", "transpose",
    "where", "expand", "concat", "split", "cast", "adam_update",
    "sgd_update"}
MIN_SAMPLES = 8
# Samples smaller than this measure the per-op overhead, not the kernel.
MIN_ELEMENTS = 2048


def op_rates(events, overhead):
    """Per kernel kind of RATED_KINDS traced at least MIN_SAMPLES times on
    tensors of MIN_ELEMENTS or more: its elements (its largest tensor's f32
    elements, from the trace's arena reads and writes) over its seconds
    beyond the per-op overhead, summed over the samples."""
    elems, secs, count = {}, {}, {}
    for e in events:
        kind = e.get("cat")
        if e.get("ph") != "X" or kind not in RATED_KINDS or e.get("tid"):
            continue
        a = e.get("args", {})
        sizes = [w[1] for w in (a.get("arena_reads") or []) +
                 (a.get("arena_writes") or []) if w]
        if not sizes or max(sizes) / 4.0 < MIN_ELEMENTS or e["dur"] <= 0:
            continue
        elems[kind] = elems.get(kind, 0.0) + max(sizes) / 4.0
        dur = e["dur"] * 1e-6
        secs[kind] = secs.get(kind, 0.0) + max(dur - overhead, 0.5 * dur)
        count[kind] = count.get(kind, 0) + 1
    return {k: elems[k] / secs[k] for k in elems
            if count[k] >= MIN_SAMPLES and secs[k] > 0}


def reference_ids(tmp):
    """REFERENCE_STEPS steps of the reference model's token ids (batch 2,
    16 + 1)."""
    data = os.path.join(tmp, "reference-ids.npy")
    rng = np.random.default_rng(0)
    np.save(data, rng.integers(0, 128, (REFERENCE_STEPS, 2, 17)).astype(np.int64))
    return data


def reference_collectives(args, tmp, ranks):
    """The collectives of a reference model's training steps (a GPT-NeoX of
    the zoo, which the accuracy bench does not measure): tensor parallel and
    ZeRO-2, --trace of REFERENCE_STEPS steps; per collective (kind, whole bytes,
    seconds), as they run inside a step rather than back to back; the
    steps' trace events (for op_rates); and its pipeline's (pp over the
    ranks, 2 microbatches) sends: (bytes, seconds) each."""
    out, traced, sends = [], [], []
    data = reference_ids(tmp)
    for name, flags in [("tp", ["--mesh", "tp=%d" % ranks, "--plan=megatron"]),
                        ("zero2", ["--plugin", "zero2", "--mesh",
                                   "dp=%d" % ranks]),
                        ("pp", ["--mesh", "pp=%d" % ranks, "--stages", "auto",
                                "--microbatches", "2"])]:
        art = os.path.join(tmp, "reference-%s.tsl" % name)
        run([args.tesselc, args.reference, "--train", *flags, "-o", art])
        trace = os.path.join(tmp, "reference-%s.json" % name)
        run([args.tessel_run, art, "-n", str(ranks), "--steps",
             str(REFERENCE_STEPS), "--data-lm", data, "--trace", trace])
        with open(trace) as f:
            events = json.load(f)["traceEvents"]
        if name == "pp":
            # On the rank's thread (tid 0; the others are the schedule's
            # actions): the copy, and the hand-over to the communication
            # thread.
            sends += [(sum(r[1] for r in e["args"]["arena_reads"] if r),
                       e["dur"] * 1e-6) for e in events
                      if e.get("ph") == "X" and e.get("cat") == "send"
                      and not e.get("tid")]
            continue
        traced += events
        for e in events:
            kind = e.get("cat")
            if e.get("ph") != "X" or kind not in ("all_reduce", "all_gather",
                                                   "reduce_scatter"):
                continue
            written = sum(w[1] for w in (e.get("args", {}).get("arena_writes")
                                         or []) if w)
            if written <= 0:
                continue
            # The whole buffer: an all_reduce's result, an all_gather's,
            # n reduce_scatter results.
            short = {"all_reduce": "ar", "all_gather": "ag",
                     "reduce_scatter": "rs"}[kind]
            whole = written * ranks if short == "rs" else written
            out.append((short, whole, e["dur"] * 1e-6))
    return out, traced, sends


def measure(args, tmp):
    """One round of every measurement: a dict of the figures."""
    # The per-op overhead: a run of tiny ops over their count (what
    # running an op costs between and around the traced kernels too).
    overhead = run_time(args, tmp, "tiny", *tiny_chain_program(), 1) / TINY
    text, inputs = compute_program()
    d = compile_and_trace(args, tmp, "compute", text, inputs)
    med = {k: statistics.median(v) for k, v in d.items()}

    def per(prefix, key):
        out = {}
        for name, t in med.items():
            if name.startswith(prefix):
                out.setdefault(key(name), []).append(t)
        return {k: statistics.median(v) for k, v in out.items()}
    # Every form and op at its own point: one line through them all.
    mm = per("mm_", lambda n: tuple(int(x) for x in n.split("_")[1:5]))
    ew = per("ew_", lambda n: tuple(n.split("_")[1:4]))
    # The saturation curve: a GEMM whose smallest dimension is d runs at
    # R x d / (d + D0), so 1 / rate = 1 / R + (D0 / R) / d, a line in 1 / d.
    # a @ b is [m, k] x [k, n], aT @ g [k, m] x [m, n], g @ bT [m, n] x
    # [n, k]: the same three dimensions in every form.
    inv_rate = [max(t - overhead, 1e-9) / (2.0 * m * k * n)
                for (m, k, n, _), t in mm.items()]
    sec_per_flop, slope = fit([1.0 / min(m, k, n) for m, k, n, _ in mm],
                              inv_rate)
    if sec_per_flop <= 0:
        # No rate above the curve (the large GEMMs measured as slow as the
        # shallow ones: a noisy round): the fastest GEMM's, no saturation.
        sec_per_flop, slope = min(inv_rate), 0.0
    if os.environ.get("CALIBRATE_VERBOSE"):
        for key, r in sorted(zip(mm, inv_rate)):
            print("matmul m k n form %s: %.1f GFLOP/s" % (key, 1e-9 / r))
    f = {"rate": 1.0 / sec_per_flop,
         "saturation_dim": (max(0.0, slope / sec_per_flop)
                            if sec_per_flop > 0 else 0.0),
         "overhead": overhead, "rates": {},
         "lat": 5e-6, "link_bw": 5e9, "ar_bw": 5e9, "async_overhead": 0.0}
    _, f["sec_per_byte"] = fit(
        [float(n) * float(b) for n, b, _ in ew], list(ew.values()))
    n = args.ranks
    if n <= 1:
        return f
    text, inputs = collective_program(n)
    d = compile_and_trace(args, tmp, "collectives", text, inputs, ranks=n)
    coll = {}
    for name, ts in d.items():
        kind, elems = name.split("_")[:2]
        if kind in ("ar", "ag", "rs"):
            coll.setdefault((kind, int(elems)), []).extend(ts)
    coll = {k: statistics.median(v) for k, v in coll.items()}
    if os.environ.get("CALIBRATE_VERBOSE"):
        print("collective points ((kind, elements): seconds):",
              sorted(coll.items()))
    have_reference = bool(args.reference) and os.path.isfile(args.reference)
    if not have_reference:
        # Five pairs of launches, the median difference: the asynchronous
        # chain's time is bimodal on a shared core (the communication thread
        # sometimes waits a whole time slice).
        diffs = []
        for _ in range(5):
            sync = run_time(args, tmp, "chain-sync",
                            *chain_program(n, False), n, launches=1)
            asyn = run_time(args, tmp, "chain-async",
                            *chain_program(n, True), n, launches=1)
            diffs.append((asyn - sync) / CHAIN)
        f["async_overhead"] = max(0.0, statistics.median(diffs))
    # The bandwidth: collectives of four sizes back to back, each of
    # latency x its sync points + its bytes / bandwidth (shm_terms); the
    # all_gathers and reduce_scatters give it, the all_reduces their own
    # (all_reduce_bandwidth: they move their bytes faster than shm_terms'
    # scaling to the ring says, 1.3-1.6x an all_gather's time of the same
    # bytes on the 2-core VM where the scaling says 2x).
    terms = {k: shm_terms(k[0], 4.0 * k[1], n) for k in coll}
    gs = [k for k in coll if k[0] != "ar"]
    lat, spb = fit([terms[k][1] / terms[k][0] for k in gs],
                   [coll[k] / terms[k][0] for k in gs])
    f["link_bw"] = inverse(spb)
    f["lat"] = lat
    ars = [k for k in coll if k[0] == "ar"]
    f["ar_bw"] = f["link_bw"]
    if len(ars) >= 2:
        _, spb_ar = fit([terms[k][1] / terms[k][0] for k in ars],
                        [coll[k] / terms[k][0] for k in ars])
        if spb_ar > 0:
            f["ar_bw"] = 1.0 / spb_ar
    if have_reference:
        ref, traced, sends = reference_collectives(args, tmp, n)
        f["rates"] = op_rates(traced, overhead)
        # The hand-over: a send's time beyond its op overhead and its copy
        # (the median). On shared memory the collectives run in place
        # (ExecutorOptions::overlap), so only sends pay it.
        if sends:
            f["async_overhead"] = max(0.0, statistics.median(
                t - overhead - b * f["sec_per_byte"] for b, t in sends))
        # The latency: inside a step each collective also waits for and
        # wakes its peers; the reference's collectives, each sync point's
        # time beyond its bytes at that bandwidth (their median).
        if ref:
            f["lat"] = max(0.0, statistics.median(
                (t - shm_terms(kind, whole, n)[1] /
                 (f["ar_bw"] if kind == "ar" else f["link_bw"])) /
                shm_terms(kind, whole, n)[0] for kind, whole, t in ref))
    return f


# Figures that are times (lower: the machine at its fastest) and rates
# (higher); the others, their median: the saturation curve's D0 (a shape),
# and async_overhead, a send's hand-over beyond its copy, which is bimodal
# (0.1-9 us over rounds: a wake-up of a receiver that slept, or none).
LOWER = {"sec_per_byte", "overhead", "lat"}
HIGHER = {"rate", "link_bw", "ar_bw"}


def best_figures(rounds):
    """Each speed figure (LOWER, HIGHER) at its fastest over the rounds, an
    op's rate over the rounds that measured it; the others' median. This VM
    has slow and fast spells minutes long (a round in a slow one: op
    overhead 0.25 us against 0.15, elementwise 24 GB/s against 28-30, every
    prediction 10-20 % high), and the accuracy bench measures each
    configuration's fastest launch: both sides at the machine's fastest."""
    out = {}
    for k in rounds[0]:
        if k == "rates":
            continue
        values = [r[k] for r in rounds]
        out[k] = (min(values) if k in LOWER else
                  max(values) if k in HIGHER else statistics.median(values))
    kinds = set().union(*(r["rates"] for r in rounds))
    out["rates"] = {k: max(r["rates"][k] for r in rounds if k in r["rates"])
                    for k in kinds}
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    benchlib.add_tool_args(ap, models=False, threads=False)
    ap.add_argument("-o", "--output", required=True)
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--shared-ranks", type=int, default=None,
                    help="ranks for intra_node.shared_latency, on fewer "
                         "cores (default: twice the cores, up to 8; 0: not "
                         "measured)")
    ap.add_argument("--rounds", type=int, default=None,
                    help="measurement rounds (default 5; 1 with --quick); "
                         "each speed figure is their fastest, the others "
                         "their median (one round's link bandwidth moved 2x "
                         "between runs of this VM)")
    ap.add_argument("--quick", action="store_true",
                    help="every measurement once, on fewer copies and "
                         "steps: a complete file in seconds, its figures "
                         "rough (for tests, not for predictions)")
    ap.add_argument("--reference", default=REFERENCE,
                    help="the model whose training steps' collectives give "
                         "the link's latency (\"\": from back-to-back "
                         "micro-programs instead)")
    args = ap.parse_args()
    if args.quick:
        use_quick_sizes()
    if args.rounds is None:
        args.rounds = 1 if args.quick else 5
    if args.rounds < 1:
        sys.exit("calibrate_cpu.py: --rounds %d: at least 1" % args.rounds)
    benchlib.run_ahead_of_background_work()
    cores = len(os.sched_getaffinity(0))
    s = args.shared_ranks
    if s is None:
        s = 2 * cores if 2 * cores <= 8 else 0
    shared = bool(s > cores and args.reference and
                  os.path.isfile(args.reference))
    with tempfile.TemporaryDirectory() as tmp:
        rounds, shared_steps = [], []
        if shared:
            shared_cmd = shared_step_command(args, tmp, s)
        for _ in range(args.rounds):
            rounds.append(measure(args, tmp))
            # The oversubscribed step in every round, as the speed figures
            # are: its launches meet the machine's spells as theirs do.
            if shared:
                shared_steps.append(
                    lowest_seconds(shared_cmd, SHARED_LAUNCHES, "step"))
        shared_best = min(shared_steps) if shared else None
        if shared and os.environ.get("CALIBRATE_VERBOSE"):
            print("oversubscribed step (%d ranks), lowest per round: %s ms"
                  % (s, " ".join("%.3f" % (t * 1e3) for t in shared_steps)))
    if os.environ.get("CALIBRATE_VERBOSE"):
        for r in rounds:
            print("round: matmul %.1f GFLOP/s, latency %.2f us, %.2f GB/s, "
                  "asynchronous overhead %.1f us" % (
                      r["rate"] / 1e9, r["lat"] * 1e6, r["link_bw"] / 1e9,
                      r["async_overhead"] * 1e6))
    f = best_figures(rounds)
    rate, saturation_dim, sec_per_byte = (f["rate"], f["saturation_dim"],
                                          f["sec_per_byte"])
    overhead, lat, link_bw = f["overhead"], f["lat"], f["link_bw"]
    async_overhead, rates = f["async_overhead"], f["rates"]
    n = args.ranks
    cfg = {
        "name": "cpu-calibrated",
        "device": {
            "name": "this machine's core",
            "peak_flops_f32": rate,
            "peak_flops_bf16": 0.0,
            "matmul_efficiency": 1.0,
            "convolution_efficiency": 1.0,
            "memory_bytes": float(os.sysconf("SC_PAGE_SIZE") *
                                  os.sysconf("SC_PHYS_PAGES")) / max(cores, 1),
            "memory_bandwidth": inverse(sec_per_byte),
            "op_overhead": overhead,
            "matmul_saturation_dim": saturation_dim,
        },
        "devices_per_node": cores,
        "nodes": 1,
        "intra_node": {"kind": "shm", "latency": lat, "bandwidth": link_bw,
                       "async_overhead": async_overhead,
                       "all_reduce_bandwidth": f["ar_bw"]},
        "inter_node": {"kind": "tcp", "latency": 5e-5, "bandwidth": 1.25e9},
    }
    shared_note = ""
    if shared:
        with tempfile.TemporaryDirectory() as tmp:
            cfg["intra_node"]["shared_latency"] = shared_latency(
                args, tmp, cfg, rates, cores, s, shared_best)
        shared_note = ", %.2f us per sync on shared cores (%d ranks)" % (
            cfg["intra_node"]["shared_latency"] * 1e6, s)
    write_cluster(args.output, cfg, rates, cores)
    print("calibrate: matmul %.1f GFLOP/s (D0 %.1f), elementwise %.2f GB/s, op overhead "
          "%.2f us, collectives' latency %.2f us and %.2f GB/s (all_reduce "
          "%.2f), asynchronous overhead %.1f us (%d ranks)%s, %d kernels' "
          "rates, %d cores -> %s"
          % (rate / 1e9, saturation_dim, 1e-9 / sec_per_byte, overhead * 1e6,
             lat * 1e6, link_bw / 1e9, f["ar_bw"] / 1e9, async_overhead * 1e6,
             n, shared_note, len(rates), cores, args.output))


def check_figures(cfg, rates):
    """Exits naming the first figure a fit left that tesselc would refuse
    (not finite, or a rate, bandwidth or size not positive; lib/Cost/
    ClusterFile.cpp has the ranges): a measurement gone wrong is said here
    rather than by the tesselc run that next reads the file."""
    figures = [("device." + k, v) for k, v in cfg["device"].items()
               if not isinstance(v, str)]
    figures += [("device.op_rates." + k, v) for k, v in rates.items()]
    for link in ("intra_node", "inter_node"):
        figures += [("%s.%s" % (link, k), v) for k, v in cfg[link].items()
                    if not isinstance(v, str)]
    may_be_zero = ("peak_flops_bf16", "op_overhead", "matmul_saturation_dim",
                   "latency", "async_overhead", "shared_latency")
    for name, v in figures:
        if not math.isfinite(v) or v < 0 or (
                v == 0 and not name.endswith(may_be_zero)):
            sys.exit("calibrate_cpu.py: the measured %s is %r; the "
                     "measurements went wrong (rerun, or see "
                     "CALIBRATE_VERBOSE=1)" % (name, v))


def write_cluster(path, cfg, rates, cores):
    check_figures(cfg, rates)
    lines = ["# tessel cluster file: measured by bench/calibrate_cpu.py",
             "name: %s" % cfg["name"], "device:"]
    for k, v in cfg["device"].items():
        lines.append("  %s: %s" % (k, v if isinstance(v, str) else "%.6g" % v))
    if rates:
        lines.append("  op_rates:  # elements per second, in situ")
        lines += ["    %s: %.6g" % kv for kv in sorted(rates.items())]
    lines += ["devices_per_node: %d" % cores, "nodes: 1"]
    for link in ("intra_node", "inter_node"):
        lines.append("%s:" % link)
        for k, v in cfg[link].items():
            lines.append("  %s: %s" % (k, v if isinstance(v, str) else "%.6g" % v))
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


SHARED_FLAGS = ["--train", "--plan=megatron"]
SHARED_LAUNCHES = 3  # of the oversubscribed step, per round
SHARED_STEPS = 300


def shared_step_command(args, tmp, ranks):
    """tessel-run's command for the reference model's tensor-parallel step
    on `ranks` ranks: what shared_latency fits. SHARED_STEPS steps a launch,
    about half a second, as long as the accuracy bench's launches run, so
    that the lowest launch medians on both sides are of the same kind (a
    30-step launch, 40 ms, can fall wholly in one of the cores' fast
    moments)."""
    art = os.path.join(tmp, "shared-tp-run.tsl")
    run([args.tesselc, args.reference, *SHARED_FLAGS, "--mesh",
         "tp=%d" % ranks, "-o", art])
    return [args.tessel_run, art, "-n", str(ranks), "--steps",
            str(SHARED_STEPS), "--data-lm", reference_ids(tmp)]


def shared_latency(args, tmp, cfg, rates, cores, ranks, best):
    """intra_node.shared_latency: the seconds per sync point when `ranks`
    ranks share the cores. The reference model's tensor-parallel step on
    that many ranks (`best`: its lowest launch median, SHARED_LAUNCHES
    launches in each of the calibration's rounds: one round's five launches
    back to back had put it at 16 us in one run, 7.4 in the run before),
    against its prediction, which is linear in the figure (each sync point
    of a synchronous collective adds it once): the figure that predicts the
    measured step. What it holds beyond the latency: the switch to the
    other rank of the core and the caches it refills, which a step of many
    small collectives pays at each."""
    art = os.path.join(tmp, "shared-tp.tsl")
    flags = [*SHARED_FLAGS, "--mesh", "tp=%d" % ranks]
    points = []
    for figure in (1e-7, 1e-4):
        cfg["intra_node"]["shared_latency"] = figure
        path = os.path.join(tmp, "shared.yaml")
        write_cluster(path, cfg, rates, cores)
        out = run([args.tesselc, args.reference, *flags, "--predict",
                   "--cluster", path, "-o", art])
        points.append((figure, float(out.split("predicted step: ")[1]
                                     .split(" ms")[0]) * 1e-3))
    (x0, y0), (x1, y1) = points
    if y1 <= y0:
        return 0.0
    return min(3600.0, max(0.0, x0 + (best - y0) * (x1 - x0) / (y1 - y0)))


if __name__ == "__main__":
    main()
