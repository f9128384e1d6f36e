#!/usr/bin/python3
"""Runs a zoo model (test/models/zoo/ARCH/EXPORT) through tesselc and
tessel-run and checks it against PyTorch's references (make_zoo.py).

  zoo.py forward ZOO ARCH EXPORT TMP
      one device: the output within 1e-5 of PyTorch's.
  zoo.py sharded ZOO ARCH EXPORT TMP MESH PLAN
      the output on MESH (e.g. tp=2) with PLAN (megatron, dp) equals the
      one-device output (within 1e-6 relative; dp: bit for bit).
  zoo.py train ZOO ARCH EXPORT TMP [tesselc flags...]
      a causal LM trained with AdamW as make_zoo.py trained it: the
      trainable set is PyTorch's parameters (each parameter trains as one
      tensor: itself, or the exporter's folded copy of it), the first step's
      gradients within 1e-4 x max|grad| of PyTorch's, the losses within 1e-4
      relative. Extra flags go to tesselc (a plugin, a mesh); then the run
      uses as many ranks as the mesh has.
  zoo.py weights ZOO ARCH EXPORT TMP [tesselc flags...]
      the trained model out of Tessel, against PyTorch's own training
      (train/trained.npz): five AdamW steps, then --save-weights holds
      exactly the names of PyTorch's state_dict (tied ones too; a parameter
      the export holds only in part as its rows, with tessel-run's note),
      each within 2e-4 of PyTorch's (five steps of lr 1e-3 move a weight by
      up to 5e-3: an untrained, stale or transposed copy is far outside);
      and four steps, then --export-onnx (compiled and run for its logits)
      gives PyTorch's fifth loss (computed after four updates) within 1e-5.
  zoo.py microbatches ZOO ARCH EXPORT TMP K
      the first step's loss with --microbatches K within 1e-6 of the whole
      batch's.
"""
import json
import os
import re
import subprocess
import sys

import numpy as np
from safetensors_np import read_safetensors

# The tools of the build under test (test/Zoo/lit.local.cfg), else PATH's.
BIN = os.environ.get("TESSEL_BIN", "")
TESSELC = os.path.join(BIN, "tesselc") if BIN else "tesselc"
TESSEL_RUN = os.path.join(BIN, "tessel-run") if BIN else "tessel-run"


def run(args, with_stderr=False):
    p = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, timeout=600)
    if p.returncode != 0:
        sys.exit("command failed (%d): %s\n%s%s" % (p.returncode, " ".join(args),
                                                   p.stdout, p.stderr))
    return p.stdout + p.stderr if with_stderr else p.stdout


def model_dir(zoo, arch, export):
    return os.path.join(zoo, arch, export)


def meta(zoo, arch):
    return json.load(open(os.path.join(zoo, arch, "meta.json")))


def compile_and_run(zoo, arch, export, tmp, tag, flags=(), ranks=1):
    m = meta(zoo, arch)
    art = os.path.join(tmp, tag + ".tsl")
    run([TESSELC, os.path.join(model_dir(zoo, arch, export), "model.onnx"),
         "-o", art] + list(flags))
    out = os.path.join(tmp, tag + ".npy")
    args = [TESSEL_RUN, art, "--input", "%s=%s" % (
        m["input"], os.path.join(zoo, arch, "input_%s.npy" % m["input"])),
        "--output", "%s=%s" % (m["output"], out)]
    if ranks > 1:
        args += ["-n", str(ranks)]
    run(args)
    return np.load(out)


def forward(zoo, arch, export, tmp):
    got = compile_and_run(zoo, arch, export, tmp, "one")
    want = np.load(os.path.join(zoo, arch, "output.npy"))
    assert got.shape == want.shape, (got.shape, want.shape)
    err = np.max(np.abs(got.astype(np.float64) - want))
    scale = max(1.0, float(np.max(np.abs(want))))
    print("%s/%s: max |tessel - torch| = %.3g (scale %.3g)" % (arch, export, err, scale))
    assert err <= 1e-5 * scale, "%s/%s differs from PyTorch by %g" % (arch, export, err)


def sharded(zoo, arch, export, tmp, mesh, plan):
    one = compile_and_run(zoo, arch, export, tmp, "one")
    ranks = int(np.prod([int(a.split("=")[1]) for a in mesh.split(",")]))
    got = compile_and_run(zoo, arch, export, tmp, "sharded",
                          ["--mesh", mesh, "--plan=" + plan], ranks)
    # (dp: a rank's batch of 1 may take other kernels than the batch of 2,
    # so equal within f32 rounding, not bit for bit.)
    err = np.max(np.abs(got.astype(np.float64) - one)) / max(1.0, np.max(np.abs(one)))
    print("%s/%s %s: max relative difference to one device %.3g" % (arch, export, mesh, err))
    assert err <= 1e-6, err


def heads(zoo, arch, export, tmp):
    """Megatron's tp=2: the heads stay split through attention (no reshape
    gathers a split dim: tesselc warns where one does), equal to one device."""
    m = meta(zoo, arch)
    model = os.path.join(model_dir(zoo, arch, export), "model.onnx")
    text = run([TESSELC, model, "--mesh", "tp=2", "--plan=megatron",
                "--emit=partitioned", "-o", os.path.join(tmp, "p.mlir")],
               with_stderr=True)
    lost = [l for l in text.splitlines() if "gathers dim" in l]
    assert not lost, "%s/%s: %s" % (arch, export, lost[0])
    sharded(zoo, arch, export, tmp, "tp=2", "megatron")
    print("%s/%s tp=2: heads split through attention" % (arch, export))


def parse_report(text):
    """--report's parameter classes: {name: (trainable, reason)}."""
    classes, current = {}, None
    for line in text.splitlines():
        m = re.match(r"^(trainable|frozen) tensors: ", line)
        if m:
            current = m.group(1) == "trainable"
            continue
        m = re.match(r"^  (\S+)  (\d+)  (.*)$", line)
        if m and current is not None:
            classes[m.group(1)] = (current, m.group(3))
        elif not line.startswith("  "):
            current = None
    return classes


def match_grad(tessel, torch_grad):
    """Tessel's gradient of a tensor that holds torch's parameter as is,
    transposed, or as its first rows (an embedding the exporter sliced)."""
    t = tessel.astype(np.float64)
    p = torch_grad.astype(np.float64)
    if t.shape == p.shape and t.ndim == 2 and t.shape[0] == t.shape[1]:
        # Square: the exporter's transposed copy has the parameter's shape.
        return min((t, p), (t.T, p), key=lambda tp: np.max(np.abs(tp[0] - tp[1])))
    if t.shape == p.shape:
        return t, p
    if t.ndim == 2 and t.shape == p.shape[::-1]:
        return t.T, p
    if t.size % p.shape[-1] == 0 and t.size <= p.size:
        rows = t.size // p.shape[-1]
        return t.reshape(rows, p.shape[-1]), p.reshape(-1, p.shape[-1])[:rows]
    raise AssertionError("gradient shapes %s and %s do not match" % (t.shape, p.shape))


def training_setup(zoo, arch, export):
    """make_zoo.py's reference training of ARCH: (meta.json, its train/
    directory, train.json, the model's path, tesselc's flags for its
    AdamW)."""
    ref = os.path.join(zoo, arch, "train")
    cfg = json.load(open(os.path.join(ref, "train.json")))
    adamw = cfg["optimizer"]["adamw"]
    flags = ["--train", "--optimizer", "adamw", "--lr", str(adamw["lr"]),
             "--betas", "%s,%s" % tuple(adamw["betas"]), "--eps", str(adamw["eps"]),
             "--weight-decay", str(adamw["weight_decay"])]
    return (meta(zoo, arch), ref, cfg,
            os.path.join(model_dir(zoo, arch, export), "model.onnx"), flags)


def ranks_of(extra):
    """The ranks of tesselc flags `extra`: its --mesh, or its hybrid plugin's
    dp x tp x pp; 1 without either."""
    ranks = 1
    if "--mesh" in extra:
        mesh = extra[extra.index("--mesh") + 1]
        ranks = int(np.prod([int(a.split("=")[1]) for a in mesh.split(",")]))
    if "--plugin" in extra and extra[extra.index("--plugin") + 1].startswith("hybrid:"):
        opts = dict(o.split("=") for o in extra[extra.index("--plugin") + 1][7:].split(","))
        ranks = int(np.prod([int(opts.get(a, 1)) for a in ("dp", "tp", "pp")]))
    return ranks


def covered_parameters(m, report):
    """--report's trainable tensors as the PyTorch parameters (meta.json's)
    each one is: {tensor: parameter}; fails on one that is none."""
    trainable = {n: r for n, (t, r) in parse_report(report).items() if t}
    params = {p["name"] for p in m["parameters"] if p["tied_to"] is None and p["requires_grad"]}
    # A tied parameter under any of its names (torch.export may keep the
    # LM head's name for GPT-2's embedding).
    canonical = {p["name"]: p["tied_to"] or p["name"] for p in m["parameters"]}
    covers = {}
    for name, reason in trainable.items():
        if canonical.get(name) in params:
            covers[name] = canonical[name]
            continue
        src = re.search(r"folded by the exporter from ([^\s)]+)", reason)
        assert src and canonical.get(src.group(1)) in params, \
            "Tessel trains '%s' (%s), which is no PyTorch parameter" % (name, reason)
        covers[name] = canonical[src.group(1)]
    trained = sorted(covers.values())
    assert len(trained) == len(set(trained)), "a parameter trains twice: %s" % trained
    return covers


def parameters(zoo, arch, export, tmp):
    """The trainable set of `tesselc --train` equals the model's PyTorch
    parameters (meta.json): none merged, dropped or folded away."""
    m = meta(zoo, arch)
    onnx_path = os.path.join(model_dir(zoo, arch, export), "model.onnx")
    report = run([TESSELC, onnx_path, "--train", "--loss", "mse", "--report",
                  "-o", os.path.join(tmp, "train.tsl")])
    trained = sorted(covered_parameters(m, report).values())
    want = sorted(p["name"] for p in m["parameters"] if p["tied_to"] is None and p["requires_grad"])
    assert trained == want, "trainable set differs from PyTorch's:\n only Tessel: %s\n only PyTorch: %s" % (
        sorted(set(trained) - set(want)), sorted(set(want) - set(trained)))
    print("%s/%s: %d trainable tensors = PyTorch's parameters" % (arch, export, len(trained)))


def train(zoo, arch, export, tmp, extra):
    m, ref, cfg, onnx_path, flags = training_setup(zoo, arch, export)
    flags += extra
    ranks = ranks_of(extra)
    art = os.path.join(tmp, "train.tsl")
    report = run([TESSELC, onnx_path, "--report", "-o", art] + flags)

    # Which PyTorch parameter each trainable tensor is.
    grads = dict(np.load(os.path.join(ref, "grads.npz")))
    covers = covered_parameters(m, report)
    trained = sorted(covers.values())
    want = sorted(grads)  # the parameters the loss depends on
    assert trained == want, "trainable set differs from PyTorch's:\n only Tessel: %s\n only PyTorch: %s" % (
        sorted(set(trained) - set(want)), sorted(set(want) - set(trained)))
    print("%s/%s: %d trainable tensors = PyTorch's parameters" % (arch, export, len(trained)))

    # The first step's gradients (one rank: the grads program).
    if ranks == 1:
        gart = os.path.join(tmp, "grads.tsl")
        run([TESSELC, onnx_path, "--grads-program", "-o", gart] + flags)
        gfile = os.path.join(tmp, "grads.safetensors")
        run([TESSEL_RUN, gart, "--steps", "1", "--data-lm", os.path.join(ref, "batches.npy"),
             "--grads", gfile])
        got = read_safetensors(gfile)
        worst = 0.0
        for name, param in covers.items():
            t, p = match_grad(got[name], grads[param])
            err = np.max(np.abs(t - p)) / max(np.max(np.abs(p)), 1e-30)
            worst = max(worst, err)
            assert err <= 1e-4, "gradient of %s (%s): %g of max|grad|" % (name, param, err)
        print("%s/%s: gradients within %.3g of max|grad|" % (arch, export, worst))

    losses = os.path.join(tmp, "losses.npy")
    args = [TESSEL_RUN, art, "--steps", str(len(cfg["trajectory_full"])),
            "--data-lm", os.path.join(ref, "batches.npy"), "--losses", losses]
    if ranks > 1:
        args += ["-n", str(ranks)]
    run(args)
    got = np.load(losses).astype(np.float64)
    want = np.array(cfg["trajectory_full"])
    rel = np.max(np.abs(got - want) / np.abs(want))
    print("%s/%s: %d losses within %.3g relative of PyTorch's" % (arch, export, len(got), rel))
    assert rel <= 1e-4, (got, want)
    np.save(os.path.join(tmp, "losses-checked.npy"), got)


def onnx_loss(path, batch, tmp):
    """Mean token cross-entropy of the ONNX model at `path` on one batch
    [batch, seq+1]: its logits from tesselc and tessel-run (whose forward
    the zoo's forward tests check against PyTorch), the loss in NumPy."""
    art = os.path.join(tmp, "exported.tsl")
    ids = os.path.join(tmp, "exported-ids.npy")
    logits = os.path.join(tmp, "exported-logits.npy")
    np.save(ids, np.ascontiguousarray(batch[:, :-1]))
    run([TESSELC, path, "-o", art])
    run([TESSEL_RUN, art, "--input", ids, "--output", logits])
    z = np.load(logits).astype(np.float64)
    z = z - z.max(-1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(-1, keepdims=True))
    return float(-np.take_along_axis(logp, batch[:, 1:, None], -1).mean())


def weights(zoo, arch, export, tmp, extra):
    m, ref, cfg, onnx_path, flags = training_setup(zoo, arch, export)
    batches = os.path.join(ref, "batches.npy")
    art = os.path.join(tmp, "train.tsl")
    run([TESSELC, onnx_path, "-o", art] + flags + extra)
    ranks = ["-n", str(ranks_of(extra))] if ranks_of(extra) > 1 else []
    steps = len(cfg["trajectory_full"])
    out = os.path.join(tmp, "weights.safetensors")
    log = run([TESSEL_RUN, art, "--steps", str(steps), "--data-lm", batches,
               "--save-weights", out] + ranks, with_stderr=True)
    got = read_safetensors(out)
    want = dict(np.load(os.path.join(ref, "trained.npz")))
    names = sorted(p["name"] for p in m["parameters"])
    assert sorted(want) == names, "trained.npz is not the model's parameters"
    assert sorted(got) == names, "saved names differ from PyTorch's:\n only Tessel: %s\n only PyTorch: %s" % (
        sorted(set(got) - set(names)), sorted(set(names) - set(got)))
    worst, partial = 0.0, []
    for name in names:
        g, w = got[name], want[name]
        if g.shape != w.shape:
            # The rows the model reads (a position embedding the default
            # exporter folded at arange(seq)), which tessel-run names.
            assert g.ndim == w.ndim and g.shape[1:] == w.shape[1:] and g.shape[0] < w.shape[0], \
                "%s: saved %s, PyTorch's %s" % (name, g.shape, w.shape)
            assert "'%s' is the exporter's folded" % name in log, log
            partial.append(name)
            w = w[:g.shape[0]]
        err = float(np.max(np.abs(g.astype(np.float64) - w)))
        assert err <= 2e-4, "%s: %g from PyTorch's trained value" % (name, err)
        worst = max(worst, err)
    print("%s/%s: --save-weights: PyTorch's %d names, within %.3g of its trained weights%s" % (
        arch, export, len(names), worst,
        "; only the rows read of " + ", ".join(partial) if partial else ""))

    trained = os.path.join(tmp, "trained.onnx")
    run([TESSEL_RUN, art, "--steps", str(steps - 1), "--data-lm", batches,
         "--export-onnx", trained] + ranks)
    loss = onnx_loss(trained, np.load(batches)[steps - 1], tmp)
    rel = abs(loss - cfg["trajectory_full"][-1]) / cfg["trajectory_full"][-1]
    print("%s/%s: --export-onnx after %d steps: loss %.7f, PyTorch's %.7f (%.2g relative)" % (
        arch, export, steps - 1, loss, cfg["trajectory_full"][-1], rel))
    assert rel <= 1e-5, rel


def microbatches(zoo, arch, export, tmp, k):
    ref = os.path.join(zoo, arch, "train")
    onnx_path = os.path.join(model_dir(zoo, arch, export), "model.onnx")
    out = []
    for mb in (1, k):
        art = os.path.join(tmp, "mb%d.tsl" % mb)
        run([TESSELC, onnx_path, "--train", "--optimizer", "sgd", "--lr", "0",
             "--microbatches", str(mb), "-o", art])
        losses = os.path.join(tmp, "mb%d.npy" % mb)
        run([TESSEL_RUN, art, "--steps", "1", "--data-lm",
             os.path.join(ref, "batches.npy"), "--losses", losses])
        out.append(float(np.load(losses)[0]))
    rel = abs(out[1] - out[0]) / abs(out[0])
    print("%s/%s: --microbatches %d loss %.9g vs %.9g (%.3g relative)" % (arch, export, k, out[1], out[0], rel))
    assert rel <= 1e-6, rel


def main():
    cmd, zoo, arch, export, tmp = sys.argv[1:6]
    os.makedirs(tmp, exist_ok=True)
    rest = sys.argv[6:]
    if cmd == "forward":
        forward(zoo, arch, export, tmp)
    elif cmd == "sharded":
        sharded(zoo, arch, export, tmp, rest[0], rest[1])
    elif cmd == "heads":
        heads(zoo, arch, export, tmp)
    elif cmd == "train":
        train(zoo, arch, export, tmp, rest)
    elif cmd == "parameters":
        parameters(zoo, arch, export, tmp)
    elif cmd == "weights":
        weights(zoo, arch, export, tmp, rest)
    elif cmd == "microbatches":
        microbatches(zoo, arch, export, tmp, int(rest[0]))
    else:
        sys.exit("unknown command " + cmd)


if __name__ == "__main__":
    main()
