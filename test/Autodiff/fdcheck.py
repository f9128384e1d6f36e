#!/usr/bin/env python3
"""Checks -tessel-autodiff's gradients against central finite differences.

Each FILE.mlir holds `func.func @main(%a: tensor<...>, ...) -> tensor<f32>`:
a scalar loss of its arguments. For each file, this script

  1. draws the arguments (see the directives below) and writes them as .npy;
  2. runs `tessel-opt --tessel-autodiff=wrt=args` on the file, compiles the
     gradient module with tesselc and runs it with tessel-run: the loss and
     the analytic gradient of every float argument;
  3. builds one forward module that evaluates the loss at every perturbed
     point at once (the function body repeated, once per point, its values
     renamed), compiles and runs it: so each file costs two compilations and
     two runs however many points it checks;
  4. compares, for each float argument, the gradient with central
     differences (f(x + eps v) - f(x - eps v)) / (2 eps): along every unit
     vector when the argument has at most --max-elements elements, else along
     --directions random directions v (max |v| = 1). A difference passes when
     |fd - analytic| <= rtol * max(|fd|, |analytic|) + atol * (1 + s), s the
     sum of |g_i v_i| (the size of the terms, so that cancellation does not
     shrink the tolerance to nothing).

The forward runs in float32, so eps (default 1e-2) trades truncation error
(eps^2) against rounding (1e-7 / eps); rtol 2e-3 and atol 2e-4 sit well above
both for the small, well-scaled functions here and well below any error of a
rule (a wrong sign, factor, transpose or a missed broadcast sum).

Directives, in `//` comments of the file:
  // FD-INPUT: %name DIST     how to draw argument %name; DIST is one of
       uniform LO HI          (the default for floats: uniform -1 1)
       away LO HI GAP [K...]  uniform in [LO, HI], at least GAP from each kink K
                              (default: 0)
       gapfrom %other LO HI   %other +/- uniform(LO, HI): never within LO of it
       distinct LO HI         a permutation of evenly spaced values (no ties)
       int LO HI              integers in [LO, HI) (indices)
       bool                   random booleans
  // FD-EPS: 1e-2
  // FD-TOL: RTOL ATOL
  // FD-PASSES: --pass ...    tessel-opt passes to run before -tessel-autodiff
                              (e.g. --tessel-batch-norm-train=...)

Prints one line per file ("fdcheck: NAME: ok (...)") and, where a check
fails, the worst entries; exits 1 when any file fails.
"""

import argparse
import os
import re
import shutil
import subprocess
import sys

import numpy as np
from no_weights import no_weights_model

DTYPES = {"f32": np.float32, "i64": np.int64, "i32": np.int32, "i1": np.bool_}


def parse_type(t):
    m = re.fullmatch(r"tensor<(?:([0-9x]*?)x)?(f32|i64|i32|i1)>", t.strip())
    if not m:
        raise ValueError(f"unsupported argument type {t}")
    dims = [int(d) for d in m.group(1).split("x")] if m.group(1) else []
    return tuple(dims), m.group(2)


class Case:
    """One .mlir file: its arguments, body and directives."""

    def __init__(self, path):
        self.path = path
        self.name = os.path.splitext(os.path.basename(path))[0]
        text = open(path).read()
        self.inputs = {}
        self.passes = []
        self.eps = 1e-2
        self.rtol, self.atol = 2e-3, 2e-4
        for line in text.splitlines():
            line = line.strip()
            if line.startswith("// FD-INPUT:"):
                words = line.split(":", 1)[1].split()
                self.inputs[words[0]] = words[1:]
            elif line.startswith("// FD-PASSES:"):
                self.passes = line.split(":", 1)[1].split()
            elif line.startswith("// FD-EPS:"):
                self.eps = float(line.split(":", 1)[1])
            elif line.startswith("// FD-TOL:"):
                self.rtol, self.atol = map(float, line.split(":", 1)[1].split())
        code = "\n".join(l for l in text.splitlines() if not l.strip().startswith("//"))
        m = re.search(r"func\.func @main\((.*?)\)\s*->\s*tensor<f32>\s*(?:attributes\s*\{[^}]*\}\s*)?\{",
                      code, re.S)
        if not m:
            raise ValueError(f"{path}: no `func.func @main(...) -> tensor<f32>`")
        self.prefix = code[:m.start()]  # module-level ops (a tessel.mesh)
        self.args = []  # (name, shape, dtype)
        for a in re.finditer(r"(%[\w$.-]+)\s*:\s*(tensor<[^>]*>)", m.group(1)):
            shape, dtype = parse_type(a.group(2))
            self.args.append((a.group(1), shape, dtype))
        body = code[m.end():]
        body = body[:body.rindex("}")]
        ret = re.search(r"^\s*return\s+(%[\w$.#-]+)\s*:", body, re.M)
        if not ret:
            raise ValueError(f"{path}: no `return %loss : tensor<f32>`")
        self.loss = ret.group(1)
        self.body = body[:ret.start()].rstrip("\n").splitlines()

    def draw(self, rng):
        values = {}
        for name, shape, dtype in self.args:
            spec = self.inputs.get(name, ["uniform", "-1", "1"] if dtype == "f32"
                                   else ["int", "0", "2"])
            kind, params = spec[0], spec[1:]
            n = int(np.prod(shape)) if shape else 1
            if kind == "uniform":
                v = rng.uniform(float(params[0]), float(params[1]), shape)
            elif kind == "away":
                lo, hi, gap = map(float, params[:3])
                v = rng.uniform(lo, hi, shape)
                for kink in [float(k) for k in params[3:]] or [0.0]:
                    d = v - kink
                    v = np.where(np.abs(d) < gap, kink + np.where(d < 0, -gap, gap), v)
            elif kind == "gapfrom":
                other = values[params[0]]
                lo, hi = float(params[1]), float(params[2])
                v = other + rng.choice([-1.0, 1.0], other.shape) * rng.uniform(lo, hi, other.shape)
            elif kind == "distinct":
                lo, hi = float(params[0]), float(params[1])
                v = rng.permutation(np.linspace(lo, hi, n)).reshape(shape)
            elif kind == "int":
                v = rng.integers(int(params[0]), int(params[1]), shape)
            elif kind == "bool":
                v = rng.integers(0, 2, shape).astype(bool)
            else:
                raise ValueError(f"{self.path}: unknown distribution {kind}")
            values[name] = np.asarray(v).astype(DTYPES[dtype])
        return values

    def batched_forward(self, copies):
        """The loss at `copies` points at once: args %k<i>_<name>, results in order."""
        rename = lambda k: (lambda m: f"%k{k}_{m.group(1)}")
        ident = re.compile(r"%([\w$.-]+)")
        args, lines, results = [], [], []
        for k in range(copies):
            for name, shape, dtype in self.args:
                t = "tensor<" + "".join(f"{d}x" for d in shape) + dtype + ">"
                args.append(f"%k{k}_{name[1:]}: {t}")
            lines += [ident.sub(rename(k), l) for l in self.body]
            results.append(ident.sub(rename(k), self.loss))
        return (self.prefix + "func.func @main(" + ", ".join(args) + ") -> (" +
                ", ".join(["tensor<f32>"] * copies) + ") {\n" + "\n".join(lines) +
                "\n  return " + ", ".join(results) + " : " +
                ", ".join(["tensor<f32>"] * copies) + "\n}\n")


def run(cmd):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{p.stdout}")
    return p.stdout


def execute(tools, workdir, mlir, tag, inputs, outputs):
    """Compiles `mlir` and runs it on `inputs` (arrays); returns `outputs` arrays."""
    art = os.path.join(workdir, tag + ".tsl")
    run([tools.compile, mlir, "--weights", tools.weights, "-o", art])
    cmd = [tools.run, art]
    for i, a in enumerate(inputs):
        f = os.path.join(workdir, f"{tag}.in{i}.npy")
        np.save(f, a)
        cmd += ["--input", f"input{i}={f}"]
    files = []
    for i in range(outputs):
        f = os.path.join(workdir, f"{tag}.out{i}.npy")
        files.append(f)
        cmd += ["--output", f"output{i}={f}"]
    run(cmd)
    return [np.load(f).astype(np.float64) for f in files]


def check(case, tools, workdir, args):
    rng = np.random.default_rng(args.seed)
    x = case.draw(rng)
    names = [a[0] for a in case.args]

    # The analytic gradients.
    grad_mlir = os.path.join(workdir, "grad.mlir")
    run([tools.opt, case.path, *case.passes, "--tessel-autodiff=wrt=args",
         "-o", grad_mlir])
    grads_attr = re.search(r"tessel\.gradients = \[([^\]]*)\]", open(grad_mlir).read())
    grad_names = re.findall(r'"arg(\d+)"', grads_attr.group(1)) if grads_attr else []
    outs = execute(tools, workdir, grad_mlir, "grad", [x[n] for n in names],
                   1 + len(grad_names))
    loss, grads = outs[0], {names[int(i)]: g for i, g in zip(grad_names, outs[1:])}
    floats = [a for a in case.args if a[2] == "f32"]
    if sorted(grads) != sorted(a[0] for a in floats):
        return [f"gradients for {sorted(grads)}, float arguments {[a[0] for a in floats]}"], 0, 0.0

    # The perturbed points: point 0 is x itself, then pairs +/-.
    points, checks = [dict(x)], []
    for name, shape, _ in floats:
        n = int(np.prod(shape)) if shape else 1
        if n <= args.max_elements:
            dirs = [np.eye(n)[i].reshape(shape) for i in range(n)]
        else:
            dirs = []
            for _ in range(args.directions):
                v = rng.standard_normal(shape)
                dirs.append(v / np.abs(v).max())
        for v in dirs:
            for sign in (1, -1):
                p = dict(x)
                p[name] = (x[name].astype(np.float64) + sign * case.eps * v).astype(np.float32)
                points.append(p)
            checks.append((name, v, len(points) - 2))
    fwd_mlir = os.path.join(workdir, "forward.mlir")
    with open(fwd_mlir, "w") as f:
        f.write(case.batched_forward(len(points)))
    losses = execute(tools, workdir, fwd_mlir, "forward",
                     [p[n] for p in points for n in names], len(points))

    failures = []
    if abs(losses[0] - loss) > 1e-5 * (1 + abs(loss)):
        failures.append(f"the gradient module's loss {float(loss)} is not the forward's {float(losses[0])}")
    worst = 0.0
    for name, v, i in checks:
        # The step actually taken, after rounding x +/- eps v to float32.
        step = (points[i][name].astype(np.float64) - points[i + 1][name].astype(np.float64))
        fd = float(losses[i] - losses[i + 1]) / (2 * case.eps)
        an = float(np.sum(grads[name] * step)) / (2 * case.eps)
        scale = float(np.sum(np.abs(grads[name] * step))) / (2 * case.eps)
        bound = case.rtol * max(abs(fd), abs(an)) + case.atol * (1 + scale)
        err = abs(fd - an)
        worst = max(worst, err / bound)
        if err > bound:
            where = (f"element {np.unravel_index(int(np.argmax(np.abs(v))), v.shape)}"
                     if np.count_nonzero(v) == 1 else "a random direction")
            failures.append(f"{name} along {where}: analytic {an:.6g}, finite differences "
                            f"{fd:.6g} (error {err:.3g} > {bound:.3g})")
    return failures, len(checks), worst


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("files", nargs="+")
    ap.add_argument("--opt", default="tessel-opt")
    ap.add_argument("--compile", default="tesselc")
    ap.add_argument("--run", default="tessel-run")
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--max-elements", type=int, default=40,
                    help="check every element of arguments this small")
    ap.add_argument("--directions", type=int, default=6,
                    help="random directions for larger arguments")
    args = ap.parse_args()
    tools = argparse.Namespace(opt=shutil.which(args.opt) or args.opt,
                               compile=shutil.which(args.compile) or args.compile,
                               run=shutil.which(args.run) or args.run)
    os.makedirs(args.workdir, exist_ok=True)
    tools.weights = no_weights_model(args.workdir)
    bad = 0
    for path in args.files:
        case = Case(path)
        workdir = os.path.join(args.workdir, case.name)
        os.makedirs(workdir, exist_ok=True)
        try:
            result = check(case, tools, workdir, args)
        except RuntimeError as e:
            print(f"fdcheck: {case.name}: FAILED: {e}")
            bad += 1
            continue
        failures, n, worst = result
        if failures:
            bad += 1
            print(f"fdcheck: {case.name}: FAILED")
            for f in failures[:8]:
                print(f"  {f}")
        else:
            print(f"fdcheck: {case.name}: ok ({n} differences, worst error {worst:.2f} of the tolerance)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
