#!/usr/bin/python3
"""Runs ONNX's node conformance tests (libonnx-testdata) through Tessel.

Each test directory holds model.onnx and test_data_set_0/{input,output}_N.pb
(serialized TensorProto). For every test the driver converts the inputs to
.npy, compiles the model with `tesselc`, runs it with `tessel-run` and
compares every output with the expected one the way ONNX's backend tests do:
rtol 1e-3, atol 1e-7, NaN equals NaN, shapes and dtypes must agree, integers
and bools exactly.

Which tests are expected to pass lives in scope.txt next to this script:

  [pass]          in scope (we import the ops, the runtime holds the dtypes)
                  and passing: a failure here fails the run
  [xfail]         in scope but failing today, with the reason; a test here
                  that passes also fails the run (move it: --update-scope)
  [out-of-scope]  grouped under "## reason" lines (op not implemented,
                  dtype not supported, opset, dynamic shapes, training, ...)

Normal mode (what the lit test runs) executes [pass] and [xfail] and prints

  onnx node tests: N/M in scope passed, K out of scope

`--update-scope` runs every test in the data directory, classifies it and
rewrites scope.txt; a developer runs it after changing the importer or the
runtime (never CI):

  test/onnx-conformance/run_node_tests.py --tesselc build/bin/tesselc \\
      --tessel-run build/bin/tessel-run --update-scope

A test that Tessel refuses because a shape operand (pads, indices, Resize's
scales, Trilu's k, ...) is a run-time input is retried with its integer
inputs and the inputs that configure Resize, Pad and Range baked into the
model as initializers: Tessel compiles static programs, and that is how a
user gives it such operands.

Models whose ai.onnx opset is below 13 (the importer's minimum) run with the
opset raised to 13 when every op they use has the same definition in both
opsets (onnx.defs since-versions agree), so the test means the same thing;
otherwise they are out of scope.
"""
import argparse
import concurrent.futures
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
import onnx.defs
from onnx import numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_DATA = "/usr/share/libonnx-testdata/data/node"
DEFAULT_SCOPE = os.path.join(HERE, "scope.txt")
MIN_OPSET, MAX_OPSET = 13, 23
RTOL, ATOL = 1e-3, 1e-7
# What the runtime holds (runtime/README.md): f32, i64, i32, bool, bf16, f16,
# f64.
# numpy has no bf16: onnx's to_array gives a bf16 tensor as f32, which is
# what tessel-run takes for a bf16 input and writes for a bf16 output.
HELD = {onnx.TensorProto.FLOAT: "f32", onnx.TensorProto.INT64: "i64",
        onnx.TensorProto.INT32: "i32", onnx.TensorProto.BOOL: "bool",
        onnx.TensorProto.BFLOAT16: "bf16", onnx.TensorProto.FLOAT16: "f16",
        onnx.TensorProto.DOUBLE: "f64"}
TIMEOUT_S = 120


def tensor_array(t, declared):
    """A TensorProto as numpy; a bf16 one (`declared` the graph's type of
    it: the test data stores bf16 as its uint16 bits) as the f32 values it
    holds."""
    a = numpy_helper.to_array(t)
    if declared == onnx.TensorProto.BFLOAT16 and a.dtype == np.uint16:
        a = (a.astype(np.uint32) << 16).view(np.float32)
    return a


def dtype_name(t):
    return onnx.TensorProto.DataType.Name(t).lower()


class Outcome:
    """What happened to one test: status is pass, fail or out (of scope)."""

    def __init__(self, status, reason=""):
        self.status, self.reason = status, reason


def ai_onnx_opset(model):
    for o in model.opset_import:
        if o.domain in ("", "ai.onnx"):
            return o.version
    return None


def nodes_of(graph):
    """Every node, including those in subgraphs (If/Loop/Scan bodies)."""
    for n in graph.node:
        yield n
        for a in n.attribute:
            if a.type == onnx.AttributeProto.GRAPH:
                yield from nodes_of(a.g)
            for g in a.graphs:
                yield from nodes_of(g)


def raise_opset(model):
    """Raises an old ai.onnx opset to MIN_OPSET when that changes no op's
    definition; returns None (done or not needed) or the out-of-scope reason."""
    opset = ai_onnx_opset(model)
    if opset is None:
        return "no ai.onnx opset (other domains only)"
    if opset > MAX_OPSET:
        return "opset > %d" % MAX_OPSET
    if opset >= MIN_OPSET:
        return None
    changed = set()
    for n in nodes_of(model.graph):
        if n.domain not in ("", "ai.onnx"):
            continue
        try:
            old = onnx.defs.get_schema(n.op_type, opset, "").since_version
            new = onnx.defs.get_schema(n.op_type, MIN_OPSET, "").since_version
        except Exception:  # unknown op: tesselc names it
            continue
        if old != new:
            changed.add(n.op_type)
    if changed:
        return ("opset < %d and the op changed since (%s); Tessel imports ai.onnx "
                "opsets %d..%d" % (MIN_OPSET, ", ".join(sorted(changed)), MIN_OPSET,
                                   MAX_OPSET))
    for o in model.opset_import:
        if o.domain in ("", "ai.onnx"):
            o.version = MIN_OPSET
    return None


def static_scope(model):
    """Out-of-scope reason visible without compiling, or None."""
    g = model.graph
    inits = {t.name for t in g.initializer}
    bad = set()
    for vi in list(g.input) + list(g.output):
        if vi.name in inits:
            continue
        kind = vi.type.WhichOneof("value")
        if kind != "tensor_type":
            return "non-tensor graph input/output (%s)" % kind.replace("_type", "")
        et = vi.type.tensor_type.elem_type
        if et not in HELD:
            bad.add(dtype_name(et))
    if bad:
        return ("dtype not supported: %s (the runtime holds f32, i64, i32, bool, bf16, f16, f64)"
                % ", ".join(sorted(bad)))
    return None


def has_symbolic_dims(model):
    """Whether a graph input has a dim without a value (symbolic or unknown)."""
    for vi in model.graph.input:
        t = vi.type.tensor_type
        if not t.HasField("shape"):
            return True
        if any(not d.HasField("dim_value") for d in t.shape.dim):
            return True
    return False


# tesselc errors that put a test out of scope; every other failure of a test
# whose ops import and whose dtypes the runtime holds is an expected failure
# ([xfail], with its message), never out of scope.
OUT_PATTERNS = [
    (re.compile(r"unsupported ONNX operators? \(opset \d+\): (.*)"),
     lambda m: "op not implemented: " + ", ".join(
         sorted({re.sub(r" in nodes? .*", "", p) for p in m.group(1).split("; ")}))),
    (re.compile(r"\((\w+)\): is supported only on inputs known at import time"),
     lambda m: "op has no run-time kernel (imported only when its inputs are "
               "constants and it folds): " + m.group(1)),
    (re.compile(r"has element type (\w+), which Tessel does not support"),
     lambda m: "dtype not supported: %s (the runtime holds f32, i64, i32, bool, bf16, f16, f64)"
     % m.group(1).lower()),
    (re.compile(r"must be known at import time; it depends on values computed at run "
                r"time|has a dynamic dim|start, limit and delta must be known at import "
                r"time"),
     lambda m: "dynamic shapes: a shape operand (shape, axes, sizes, k, range) is a "
               "run-time input, or an input dim is symbolic"),
    (re.compile(r"training mode|training_mode"),
     lambda m: "training mode (Tessel compiles inference)"),
]


def first_error(text):
    lines = [l.strip() for l in text.splitlines() if l.strip()]
    for l in lines:
        if "error" in l.lower():
            return l
    return lines[0] if lines else "(no message)"


def clean(msg, work):
    msg = msg.replace(work + "/", "").replace(work, "")
    msg = re.sub(r"^(tesselc|tessel-run): error: ", "", msg)
    return re.sub(r"\s+", " ", msg)[:240]


def compare(name, got, want):
    """None when got matches want, else a one-line reason."""
    if got.shape != want.shape:
        return "%s: shape %s, expected %s" % (name, got.shape, want.shape)
    if got.dtype != want.dtype:
        return "%s: dtype %s, expected %s" % (name, got.dtype, want.dtype)
    if want.dtype.kind in "biu":
        if not np.array_equal(got, want):
            bad = int(np.sum(got != want))
            return "%s: %d of %d elements differ" % (name, bad, want.size)
        return None
    try:
        np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL, equal_nan=True)
    except AssertionError:
        g, w = got.astype(np.float64), want.astype(np.float64)
        with np.errstate(invalid="ignore"):
            err = np.abs(g - w)
            err[np.isnan(g) & np.isnan(w)] = 0
            err[np.isnan(err)] = np.inf
        return "%s: max abs error %.3g (rtol %g, atol %g), %d of %d elements off" % (
            name, float(np.max(err)), RTOL, ATOL,
            int(np.sum(~np.isclose(g, w, rtol=RTOL, atol=ATOL, equal_nan=True))), w.size)
    return None


# Operand slots that configure an op rather than carry data: a test that
# feeds them (or any integer operand: shapes, pads, indices, axes) as graph
# inputs is retried with those inputs' test values baked into the model as
# initializers, as a user compiles Tessel's static programs with them known.
CONFIG_SLOTS = {"Resize": (1, 2, 3), "Pad": (1, 2, 3), "Range": (0, 1, 2)}
INT_DTYPES = (onnx.TensorProto.INT64, onnx.TensorProto.INT32)


def run_test(test_dir, args, check_static=True):
    """Imports, compiles, runs and compares one node test; a test refused
    for a run-time shape operand is retried with its operands baked."""
    name = os.path.basename(test_dir)
    work = os.path.join(args.workdir, name)
    try:
        first = None
        for bake in (False, True):
            shutil.rmtree(work, ignore_errors=True)
            os.makedirs(work)
            outcome = _run_test(test_dir, work, args, check_static, bake)
            if outcome is None:  # nothing to bake
                return first
            if not (outcome.status == "out" and outcome.reason.startswith("dynamic shapes")
                    or "must be known at compile time" in outcome.reason
                    or "must be known at import time" in outcome.reason):
                return outcome
            first = first or outcome
        return outcome
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


def bake_operands(model, values):
    """Turns the graph inputs that are integers or feed CONFIG_SLOTS into
    initializers holding `values` (name -> array); returns their names."""
    config = set()
    for n in model.graph.node:
        for k in CONFIG_SLOTS.get(n.op_type, ()):
            if k < len(n.input) and n.input[k]:
                config.add(n.input[k])
    baked = []
    for vi in list(model.graph.input):
        if vi.name in values and (vi.type.tensor_type.elem_type in INT_DTYPES
                                  or vi.name in config):
            model.graph.initializer.append(numpy_helper.from_array(values[vi.name], vi.name))
            model.graph.input.remove(vi)
            baked.append(vi.name)
    return baked


def _run_test(test_dir, work, args, check_static, bake=False):
    model = onnx.load(os.path.join(test_dir, "model.onnx"))
    reason = raise_opset(model)
    if reason:
        return Outcome("out", reason)
    reason = static_scope(model)
    if reason and check_static:
        return Outcome("out", reason)

    data = os.path.join(test_dir, "test_data_set_0")
    inits = {t.name for t in model.graph.initializer}
    in_names = [i.name for i in model.graph.input if i.name not in inits]
    out_names = [o.name for o in model.graph.output]
    elem = {v.name: v.type.tensor_type.elem_type
            for v in list(model.graph.input) + list(model.graph.output)}
    values = {}
    for k, iname in enumerate(in_names):
        pb = os.path.join(data, "input_%d.pb" % k)
        if not os.path.exists(pb):
            return Outcome("fail", "input_%d.pb missing" % k)
        t = onnx.TensorProto()
        with open(pb, "rb") as f:
            t.ParseFromString(f.read())
        values[iname] = tensor_array(t, elem[iname])
    baked = bake_operands(model, values) if bake else []
    if bake and not baked:
        return None
    model_path = os.path.join(test_dir, "model.onnx")
    if baked or ai_onnx_opset(model) != ai_onnx_opset(onnx.load(model_path)):
        model_path = os.path.join(work, "model.onnx")
        onnx.save(model, model_path)
    cmd_run = [args.tessel_run, os.path.join(work, "m.tsl")]
    for k, iname in enumerate(in_names):
        if iname in baked:
            continue
        npy = os.path.join(work, "in%d.npy" % k)
        np.save(npy, values[iname])
        cmd_run += ["--input", "%s=%s" % (iname, npy)]
    expected = []
    for k, oname in enumerate(out_names):
        t = onnx.TensorProto()
        with open(os.path.join(data, "output_%d.pb" % k), "rb") as f:
            t.ParseFromString(f.read())
        expected.append(tensor_array(t, elem[oname]))
        cmd_run += ["--output", "%s=%s" % (oname, os.path.join(work, "out%d.npy" % k))]

    try:
        p = subprocess.run([args.tesselc, model_path, "-o", os.path.join(work, "m.tsl")],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           universal_newlines=True, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return Outcome("fail", "tesselc: timed out after %d s" % TIMEOUT_S)
    if p.returncode != 0:
        msg = clean(first_error(p.stdout), work)
        if p.returncode < 0:
            return Outcome("fail", "tesselc: crashed (signal %d): %s" % (-p.returncode, msg))
        if "has a dynamic dim" in msg and not has_symbolic_dims(model):
            return Outcome("fail", "tesselc: %s (a dim of 0: the importer takes 0 "
                           "for unknown; zero-size tensors are not supported)" % msg)
        for pat, why in OUT_PATTERNS:
            m = pat.search(msg)
            if m:
                return Outcome("out", why(m))
        return Outcome("fail", "tesselc: " + msg)
    if reason:  # an unheld dtype that tesselc accepted
        return Outcome("out", reason)
    try:
        p = subprocess.run(cmd_run, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           universal_newlines=True, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return Outcome("fail", "tessel-run: timed out after %d s" % TIMEOUT_S)
    if p.returncode != 0:
        what = "crashed (signal %d): " % -p.returncode if p.returncode < 0 else ""
        return Outcome("fail", "tessel-run: " + what + clean(first_error(p.stdout), work))
    for k, (oname, want) in enumerate(zip(out_names, expected)):
        got = np.load(os.path.join(work, "out%d.npy" % k))
        why = compare(oname, got, want)
        if why:
            return Outcome("fail", "wrong result: " + why)
    return Outcome("pass")


# --- scope.txt ----------------------------------------------------------------

def read_scope(path):
    """{test name: (section, reason)}"""
    scope, section, group = {}, None, ""
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("## "):
                group = line[3:].strip()
                continue
            s = line.strip()
            if not s or s.startswith("#"):
                continue
            m = re.fullmatch(r"\[(pass|xfail|out-of-scope)\]", s)
            if m:
                section, group = m.group(1), ""
                continue
            if section is None:
                sys.exit("%s: '%s' before any [section]" % (path, s))
            name, _, why = s.partition(" ")
            scope[name] = (section, why.strip() if section == "xfail" else group)
    return scope


def write_scope(path, results, data_dir):
    passed = sorted(n for n, o in results.items() if o.status == "pass")
    failed = sorted(n for n, o in results.items() if o.status == "fail")
    groups = {}
    for n, o in results.items():
        if o.status == "out":
            groups.setdefault(o.reason, []).append(n)
    lines = [
        "# ONNX node conformance tests (%s), generated by" % data_dir,
        "#   test/onnx-conformance/run_node_tests.py --update-scope",
        "# %d in scope: %d pass, %d expected to fail (reason after the name);"
        % (len(passed) + len(failed), len(passed), len(failed)),
        "# %d out of scope, grouped under their reason." % sum(map(len, groups.values())),
        "# A test refused for a shape operand given at run time is retried with",
        "# its integer and configuring inputs baked in as initializers.",
        "# The lit test (node-tests.test) fails when a [pass] test fails or an",
        "# [xfail] test passes. Fix an xfail, then regenerate this file.",
        "",
        "[pass]",
    ] + passed + ["", "[xfail]"]
    lines += ["%s %s" % (n, results[n].reason) for n in failed]
    lines += ["", "[out-of-scope]"]
    for why in sorted(groups, key=lambda r: (r.split(":")[0], r)):
        lines += ["## " + why] + sorted(groups[why])
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


# --- main ---------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tesselc", required=True)
    ap.add_argument("--tessel-run", required=True)
    ap.add_argument("--data", default=DEFAULT_DATA, help="node test directory")
    ap.add_argument("--scope", default=DEFAULT_SCOPE)
    ap.add_argument("--workdir", help="scratch directory (default: a temporary one)")
    ap.add_argument("-j", "--jobs", type=int, default=2)
    ap.add_argument("--update-scope", action="store_true",
                    help="run every test and rewrite the scope file")
    ap.add_argument("--filter", help="only tests whose name matches this regex")
    ap.add_argument("--keep", action="store_true", help="keep the scratch files")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args()
    for tool in (args.tesselc, args.tessel_run):
        if not os.access(tool, os.X_OK):
            sys.exit("run_node_tests.py: %s is not an executable" % tool)
    tmp = None
    if not args.workdir:
        tmp = args.workdir = tempfile.mkdtemp(prefix="tessel-onnx-node-")
    os.makedirs(args.workdir, exist_ok=True)

    available = sorted(d for d in os.listdir(args.data)
                       if d.startswith("test_") and
                       os.path.exists(os.path.join(args.data, d, "model.onnx")))
    if args.update_scope:
        scope = {}
        todo = available
    else:
        scope = read_scope(args.scope)
        todo = [n for n in available if scope.get(n, ("new",))[0] in ("pass", "xfail")]
        unknown = [n for n in available if n not in scope]
        missing = [n for n in scope if n not in available]
        if unknown:
            print("note: %d tests are not in %s (run --update-scope): %s"
                  % (len(unknown), os.path.basename(args.scope), " ".join(unknown[:10])))
        if missing:
            print("note: %d tests in %s are not in %s: %s"
                  % (len(missing), os.path.basename(args.scope), args.data,
                     " ".join(missing[:10])))
    if args.filter:
        todo = [n for n in todo if re.search(args.filter, n)]

    if args.update_scope and args.filter:
        sys.exit("--update-scope with --filter would drop tests; leave --filter off")
    start = time.time()
    results = {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        futs = {pool.submit(run_test, os.path.join(args.data, n), args): n for n in todo}
        for fut in concurrent.futures.as_completed(futs):
            n = futs[fut]
            try:
                results[n] = fut.result()
            except Exception as e:  # a driver bug or unreadable data: a failure
                results[n] = Outcome("fail", "driver: %s: %s" % (type(e).__name__, e))
            if args.verbose:
                o = results[n]
                print("%-6s %s %s" % (o.status.upper(), n, o.reason), flush=True)
    if tmp:
        shutil.rmtree(tmp, ignore_errors=True)
    elapsed = time.time() - start

    if args.update_scope:
        write_scope(args.scope, results, args.data)
        n_in = sum(o.status != "out" for o in results.values())
        n_pass = sum(o.status == "pass" for o in results.values())
        print("onnx node tests: %d/%d in scope passed, %d out of scope (%.0f s); "
              "wrote %s" % (n_pass, n_in, len(results) - n_in, elapsed, args.scope))
        return 0

    bad = []
    for n in sorted(results):
        o, (section, why) = results[n], scope[n]
        if section == "pass" and o.status != "pass":
            bad.append("FAIL  %s: %s%s" % (n, o.reason,
                                          " (now out of scope)" if o.status == "out" else ""))
        elif section == "xfail" and o.status == "pass":
            bad.append("XPASS %s: passes now; move it to [pass] (--update-scope)" % n)
    n_in = sum(1 for s, _ in scope.values() if s in ("pass", "xfail"))
    n_pass = sum(1 for o in results.values() if o.status == "pass")
    n_out = sum(1 for s, _ in scope.values() if s == "out-of-scope")
    for line in bad:
        print(line)
    print("onnx node tests: %d/%d in scope passed, %d out of scope "
          "(%d expected failures in %s; %.0f s)"
          % (n_pass, n_in, n_out, sum(1 for s, _ in scope.values() if s == "xfail"),
             os.path.basename(args.scope), elapsed))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
