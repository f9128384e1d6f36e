#!/usr/bin/env python3
"""Runs the ONNX ops that the importer composes from existing tessel ops
(lib/Import/ComposedImporters.cpp, negative Slice steps) through tesselc and
tessel-run and compares them with numpy: np.pad for Pad's modes, numpy
indexing for Slice, ScatterND and ScatterElements, np.argmax / np.argmin
(a NaN is the extreme, the first one) for ArgMax / ArgMin, the naive
log(sum(exp(x))) for ReduceLogSumExp (rows of -inf and +inf), and the
per-channel normalisation for InstanceNormalization.

ONNX's node tests cover the same ops where their indices, pads and steps are
constants (test/onnx-conformance); these are the cases they do not have:
pads and steps known at import in every mode, negative pads, the axes input,
a run-time fill, negative and reversed indices, NaNs and infinities.

    check_composed.py --tesselc tesselc --tessel-run tessel-run --workdir DIR

Prints "composed: NAME: ok" per case (or the worst difference) and exits 1
when one fails. With --sequences: the sequence ops (SplitToSequence,
SequenceAt, SequenceLength, SequenceConstruct, ConcatFromSequence; chunk,
split and unbind as numpy slices and stacks) instead, after tesselc's
message and exit status on each model it must refuse.
"""
import argparse
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

rng = np.random.default_rng(7)
F32 = TensorProto.FLOAT
I64 = TensorProto.INT64


def const(name, values, dtype=np.int64):
    return helper.make_node("Constant", [], [name],
                            value=numpy_helper.from_array(np.array(values, dtype=dtype), name))


def model(nodes, inputs, outputs, opset):
    """inputs / outputs: (name, onnx dtype, shape)."""
    g = helper.make_graph(nodes, "g",
                          [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs],
                          [helper.make_tensor_value_info(n, t, s) for n, t, s in outputs])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def cases():
    """(name, model, {input: array}, expected output)."""
    x = rng.standard_normal((2, 5, 6)).astype(np.float32)

    # Pad: a negative pad crops; constant with a fill given as a constant.
    m = model([const("p", [0, 1, -1, 1, 2, 0]), const("v", 1.5, np.float32),
               helper.make_node("Pad", ["x", "p", "v"], ["y"])],
              [("x", F32, [2, 5, 6])], [("y", F32, [3, 8, 5])], 13)
    yield "pad_constant_crop", m, {"x": x}, np.pad(x[:, :, 1:], [(0, 1), (1, 2), (0, 0)], constant_values=1.5)

    # The axes input (opset 18), a negative axis; reflect past the dim.
    for mode in ("reflect", "edge", "wrap"):
        opset = 19 if mode == "wrap" else 18
        m = model([const("p", [2, 7, 1, 3]), const("a", [1, -1]),
                   helper.make_node("Pad", ["x", "p", "", "a"], ["y"], mode=mode)],
                  [("x", F32, [2, 5, 6])], [("y", F32, [2, 8, 16])], opset)
        if mode == "wrap":
            # Periodic indices; numpy < 2 pads past the dim otherwise.
            ref = np.take(np.take(x, np.arange(-2, 6) % 5, axis=1), np.arange(-7, 9) % 6, axis=2)
        else:
            ref = np.pad(x, [(0, 0), (2, 1), (7, 3)], mode=mode)
        yield "pad_" + mode, m, {"x": x}, ref

    # A fill computed at run time.
    m = model([const("p", [1, 0, 0, 0, 0, 2]),
               helper.make_node("Pad", ["x", "p", "v"], ["y"])],
              [("x", F32, [2, 5, 6]), ("v", F32, [])], [("y", F32, [3, 5, 8])], 13)
    yield "pad_runtime_fill", m, {"x": x, "v": np.array(-3.0, np.float32)}, \
        np.pad(x, [(1, 0), (0, 0), (0, 2)], constant_values=-3.0)

    # Slice backwards (torch.flip, x[..., ::-2]), with clamped starts.
    m = model([const("s", [2**62, -2]), const("e", [-2**62, 0]), const("a", [0, 2]),
               const("st", [-1, -2]),
               helper.make_node("Slice", ["x", "s", "e", "a", "st"], ["y"])],
              [("x", F32, [2, 5, 6])], [("y", F32, [2, 5, 2])], 13)
    yield "slice_reverse", m, {"x": x}, x[::-1, :, 4:0:-2]

    # ScatterND: rows of a [4, 3] table (BART's shift_tokens_right writes
    # columns of int64 ids this way); negative index.
    d = rng.standard_normal((4, 3)).astype(np.float32)
    u = rng.standard_normal((2, 3)).astype(np.float32)
    m = model([const("i", [[-1], [1]]),
               helper.make_node("ScatterND", ["d", "i", "u"], ["y"])],
              [("d", F32, [4, 3]), ("u", F32, [2, 3])], [("y", F32, [4, 3])], 13)
    ref = d.copy()
    ref[3], ref[1] = u[0], u[1]
    yield "scatternd_rows", m, {"d": d, "u": u}, ref

    ids = rng.integers(0, 100, (2, 5)).astype(np.int64)
    col = np.array([[7], [9]], np.int64)
    m = model([const("i", [[[0, 0]], [[1, 0]]]),
               helper.make_node("ScatterND", ["d", "i", "u"], ["y"])],
              [("d", I64, [2, 5]), ("u", I64, [2, 1])], [("y", I64, [2, 5])], 13)
    ref = ids.copy()
    ref[:, 0] = col[:, 0]
    yield "scatternd_int_elements", m, {"d": ids, "u": col}, ref

    # ScatterElements along axis 1, negative indices.
    d = rng.standard_normal((3, 4)).astype(np.float32)
    u = rng.standard_normal((3, 2)).astype(np.float32)
    idx = np.array([[1, -1], [0, 2], [-4, 1]], np.int64)
    m = model([const("i", idx),
               helper.make_node("ScatterElements", ["d", "i", "u"], ["y"], axis=1)],
              [("d", F32, [3, 4]), ("u", F32, [3, 2])], [("y", F32, [3, 4])], 13)
    ref = d.copy()
    for r in range(3):
        for k in range(2):
            ref[r, idx[r, k] % 4] = u[r, k]
    yield "scatter_elements_axis1", m, {"d": d, "u": u}, ref

    # ArgMax / ArgMin: NaNs win (the first one), ties take the first (or
    # the last with select_last_index).
    a = rng.standard_normal((4, 6)).astype(np.float32)
    a[1, 2] = a[1, 4] = np.nan
    a[2, :] = 0.5
    a[3, 5] = np.nan
    m = model([helper.make_node("ArgMax", ["a"], ["y"], axis=1, keepdims=0)],
              [("a", F32, [4, 6])], [("y", I64, [4])], 13)
    yield "argmax_nan", m, {"a": a}, np.argmax(a, axis=1)
    m = model([helper.make_node("ArgMin", ["a"], ["y"], axis=-1)],
              [("a", F32, [4, 6])], [("y", I64, [4, 1])], 13)
    yield "argmin_nan", m, {"a": a}, np.argmin(a, axis=1)[:, None]
    b = rng.integers(-3, 3, (3, 5)).astype(np.int64)
    m = model([helper.make_node("ArgMin", ["b"], ["y"], axis=0, keepdims=0, select_last_index=1)],
              [("b", I64, [3, 5])], [("y", I64, [5])], 13)
    yield "argmin_int_last", m, {"b": b}, 2 - np.argmin(b[::-1], axis=0)

    # ReduceL1 and ReduceMin of integers (abs and neg are float ops).
    q = rng.integers(-50, 50, (3, 4)).astype(np.int64)
    m = model([const("ax", [1]), helper.make_node("ReduceL1", ["q", "ax"], ["y"], keepdims=0)],
              [("q", I64, [3, 4])], [("y", I64, [3])], 18)
    yield "reduce_l1_int", m, {"q": q}, np.abs(q).sum(axis=1)
    m = model([helper.make_node("ReduceMin", ["q"], ["y"], axes=[0], keepdims=1)],
              [("q", I64, [3, 4])], [("y", I64, [1, 4])], 13)
    yield "reduce_min_int", m, {"q": q}, q.min(axis=0, keepdims=True)

    # ReduceLogSumExp on rows of -inf, with +inf, and large values.
    s = rng.standard_normal((4, 5)).astype(np.float32)
    s[0] = -np.inf
    s[1, 3] = np.inf
    s[2] += 100.0
    m = model([const("ax", [1]),
               helper.make_node("ReduceLogSumExp", ["s", "ax"], ["y"], keepdims=0)],
              [("s", F32, [4, 5])], [("y", F32, [4])], 18)
    with np.errstate(divide="ignore", over="ignore"):
        ref = np.log(np.sum(np.exp(s.astype(np.float64)), axis=1))
    ref[2] = 100.0 + np.log(np.sum(np.exp(s[2].astype(np.float64) - 100.0)))
    yield "reduce_log_sum_exp_inf", m, {"s": s}, ref.astype(np.float32)

    # Einsum: batched and attention-shaped products, transposes, sums,
    # implicit outputs, broadcast ellipses, three operands, diagonals.
    for k, (eq, shapes) in enumerate([
            ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
            ("bhqd,bhkd->bhqk", [(2, 3, 4, 8), (2, 3, 6, 8)]),
            ("ij->ji", [(3, 4)]),
            ("ij->", [(3, 4)]),
            ("i,i", [(5,), (5,)]),
            ("i,j->ij", [(3,), (4,)]),
            ("...ij,...jk->...ik", [(2, 1, 3, 4), (5, 4, 2)]),
            ("bn,anm,bm->ba", [(2, 3), (4, 3, 5), (2, 5)]),
            ("abc,cd", [(2, 3, 4), (4, 5)]),
            ("b i d, b j d -> b j i", [(2, 3, 4), (2, 5, 4)]),
            # Diagonals: a label repeated in one operand.
            ("ii->i", [(4, 4)]),
            ("ii", [(4, 4)]),
            ("bii->bi", [(2, 3, 3)]),
            ("iji->j", [(3, 5, 3)]),
            ("iii->i", [(3, 3, 3)]),
            ("ij,jj->i", [(2, 4), (4, 4)])]):
        xs = [rng.standard_normal(sh).astype(np.float32) for sh in shapes]
        names = ["e%d" % i for i in range(len(xs))]
        ref = np.einsum(eq.replace(" ", ""), *[x.astype(np.float64) for x in xs]).astype(np.float32)
        m = model([helper.make_node("Einsum", names, ["y"], equation=eq)],
                  [(nm, F32, list(x.shape)) for nm, x in zip(names, xs)],
                  [("y", F32, list(ref.shape))], 13)
        yield "einsum_%d" % k, m, dict(zip(names, xs)), ref

    # InstanceNormalization over [N, C, L] with a scale and a bias.
    v = rng.standard_normal((2, 3, 7)).astype(np.float32)
    sc = rng.standard_normal(3).astype(np.float32)
    bi = rng.standard_normal(3).astype(np.float32)
    m = model([helper.make_node("InstanceNormalization", ["v", "sc", "bi"], ["y"], epsilon=1e-3)],
              [("v", F32, [2, 3, 7]), ("sc", F32, [3]), ("bi", F32, [3])], [("y", F32, [2, 3, 7])], 13)
    v64 = v.astype(np.float64)
    mean = v64.mean(axis=2, keepdims=True)
    var = v64.var(axis=2, keepdims=True)
    ref = (v64 - mean) / np.sqrt(var + 1e-3) * sc[None, :, None] + bi[None, :, None]
    yield "instance_norm", m, {"v": v, "sc": sc, "bi": bi}, ref.astype(np.float32)

    # Tile (torch's repeat) with constant repeats: rows and columns, an
    # integer tensor, a constant input (folded at import), all ones.
    t = rng.standard_normal((2, 3, 4)).astype(np.float32)
    m = model([const("r", [3, 1, 2]), helper.make_node("Tile", ["t", "r"], ["y"])],
              [("t", F32, [2, 3, 4])], [("y", F32, [6, 3, 8])], 13)
    yield "tile_3d", m, {"t": t}, np.tile(t, (3, 1, 2))
    n = np.array([5, -1, 7], np.int64)
    m = model([const("r", [4]), helper.make_node("Tile", ["n", "r"], ["y"])],
              [("n", I64, [3])], [("y", I64, [12])], 13)
    yield "tile_int", m, {"n": n}, np.tile(n, 4)
    k = np.arange(6, dtype=np.float32).reshape(2, 3)
    m = model([const("k", k, np.float32), const("r", [2, 2]),
               helper.make_node("Tile", ["k", "r"], ["kt"]),
               helper.make_node("Add", ["kt", "w"], ["y"])],
              [("w", F32, [4, 6])], [("y", F32, [4, 6])], 13)
    w = rng.standard_normal((4, 6)).astype(np.float32)
    yield "tile_const", m, {"w": w}, np.tile(k, (2, 2)) + w
    m = model([const("r", [1, 1, 1]), helper.make_node("Tile", ["t", "r"], ["y"])],
              [("t", F32, [2, 3, 4])], [("y", F32, [2, 3, 4])], 13)
    yield "tile_ones", m, {"t": t}, t

    # TopK with k known at import: largest and smallest, along the last
    # axis and axis 0, ties (the lower index first), NaN (the largest, as in
    # PyTorch: first with largest=1, last with largest=0), -inf, integers;
    # the values and the indices, each a case.
    def topk_ref(a, k, axis, largest):
        a = np.moveaxis(a, axis, -1)
        vals, idxs = np.empty(a.shape[:-1] + (k,), a.dtype), np.empty(a.shape[:-1] + (k,), np.int64)
        for pos in np.ndindex(a.shape[:-1]):
            row = a[pos]
            def key(i):
                v = row[i]
                nan = bool(np.isnan(v)) if row.dtype.kind == "f" else False
                if largest:
                    return (0 if nan else 1, 0 if nan else -v, i)
                return (1 if nan else 0, 0 if nan else v, i)
            order = sorted(range(len(row)), key=key)[:k]
            idxs[pos] = order
            vals[pos] = row[order]
        return np.moveaxis(vals, -1, axis), np.moveaxis(idxs, -1, axis)
    tk = rng.standard_normal((3, 7)).astype(np.float32)
    tk[0, 2] = tk[0, 5] = 9.0          # a tie: index 2 first
    tk[1, 4] = np.nan                  # the largest
    tk[2, :] = [-np.inf, 1, -np.inf, 1, 0, -np.inf, 2]
    ti = np.array([[4, -2, 4, 7, 0], [1, 1, 1, -5, 3]], np.int64)
    for name, a, k, axis, largest in [("last", tk, 3, -1, 1), ("smallest", tk, 6, 1, 0),
                                      ("axis0", tk, 2, 0, 1), ("k1", tk, 1, -1, 1),
                                      ("all", tk, 7, -1, 1), ("smallest_all", tk, 7, 1, 0),
                                      ("int", ti, 4, 1, 1)]:
        vals, idxs = topk_ref(a, k, axis, largest)
        dt = I64 if a.dtype == np.int64 else F32
        for out, ref in (("V", vals), ("I", idxs)):
            outs = ["y", "other"] if out == "V" else ["other", "y"]
            m = model([const("k", [k]),
                       helper.make_node("TopK", ["a", "k"], outs, axis=axis, largest=largest)],
                      [("a", dt, list(a.shape))], [("y", I64 if out == "I" else dt, list(ref.shape))], 13)
            yield "topk_%s_%s" % (name, out.lower()), m, {"a": a}, ref


def sequence_cases():
    """ONNX's sequence ops (lib/Import/SequenceImporters.cpp), as
    torch.onnx.export(dynamo=True, optimize=False) writes chunk and split."""
    x = rng.standard_normal((2, 6, 9)).astype(np.float32)
    # chunk(3, dim=-1): a scalar split; the last piece read at position -1.
    m = model([const("n", 3), const("i0", 0), const("i1", 1), const("i2", -1),
               helper.make_node("SplitToSequence", ["x", "n"], ["s"], axis=-1),
               helper.make_node("SequenceAt", ["s", "i0"], ["a"]),
               helper.make_node("SequenceAt", ["s", "i1"], ["b"]),
               helper.make_node("SequenceAt", ["s", "i2"], ["c"]),
               helper.make_node("Mul", ["a", "b"], ["ab"]),
               helper.make_node("Add", ["ab", "c"], ["y"])],
              [("x", F32, [2, 6, 9])], [("y", F32, [2, 6, 3])], 18)
    yield "seq_chunk", m, {"x": x}, x[..., 0:3] * x[..., 3:6] + x[..., 6:9]
    # A scalar split that leaves a smaller last piece, and split sizes.
    m = model([const("n", 4), const("sz", [2, 4]), const("i0", 0), const("i1", 1), const("i2", 2),
               helper.make_node("SplitToSequence", ["x", "n"], ["s"], axis=2),
               helper.make_node("SequenceAt", ["s", "i2"], ["last"]),
               helper.make_node("SplitToSequence", ["x", "sz"], ["t"], axis=1),
               helper.make_node("SequenceAt", ["t", "i0"], ["p"]),
               helper.make_node("SequenceAt", ["t", "i1"], ["q"]),
               helper.make_node("Concat", ["q", "p"], ["y0"], axis=1),
               helper.make_node("Mul", ["y0", "last"], ["y"])],
              [("x", F32, [2, 6, 9])], [("y", F32, [2, 6, 9])], 18)
    yield "seq_split_sizes", m, {"x": x}, np.concatenate([x[:, 2:], x[:, :2]], axis=1) * x[..., 8:9]
    # unbind: no split, keepdims=0; stacked again on a new axis, and the
    # count.
    m = model([helper.make_node("SplitToSequence", ["x"], ["s"], axis=0, keepdims=0),
               helper.make_node("ConcatFromSequence", ["s"], ["st"], axis=-1, new_axis=1),
               helper.make_node("SequenceLength", ["s"], ["n"]),
               helper.make_node("Cast", ["n"], ["nf"], to=F32),
               helper.make_node("Mul", ["st", "nf"], ["y"])],
              [("x", F32, [2, 6, 9])], [("y", F32, [6, 9, 2])], 18)
    yield "seq_unbind_stack", m, {"x": x}, np.stack(list(x), axis=-1) * 2
    # SequenceConstruct, then a concat along an existing axis.
    m = model([helper.make_node("Neg", ["x"], ["nx"]),
               helper.make_node("SequenceConstruct", ["x", "nx"], ["s"]),
               helper.make_node("ConcatFromSequence", ["s"], ["y"], axis=1)],
              [("x", F32, [2, 6, 9])], [("y", F32, [2, 12, 9])], 18)
    yield "seq_construct_concat", m, {"x": x}, np.concatenate([x, -x], axis=1)


def sequence_errors():
    """Models the importer refuses, naming the node or output."""
    x = [("x", F32, [2, 6])]
    yield "seq_to_tensor_op", model(
        [helper.make_node("SplitToSequence", ["x"], ["s"], axis=1),
         helper.make_node("Identity", ["s"], ["y"], name="ident")], x, [("y", F32, None)], 18)
    yield "seq_output", model(
        [helper.make_node("SplitToSequence", ["x"], ["y"], axis=1)], x, [("y", F32, None)], 18)
    yield "seq_position", model(
        [const("k", 6), helper.make_node("SplitToSequence", ["x"], ["s"], axis=1),
         helper.make_node("SequenceAt", ["s", "k"], ["y"], name="at")], x, [("y", F32, None)], 18)
    yield "seq_too_many", model(
        [helper.make_node("SplitToSequence", ["x"], ["s"], axis=0, name="split"),
         helper.make_node("SequenceLength", ["s"], ["y"])],
        [("x", F32, [1 << 40, 2])], [("y", I64, None)], 18)
    yield "seq_not_a_sequence", model(
        [const("k", 0), helper.make_node("SequenceAt", ["x", "k"], ["y"], name="at")], x,
        [("y", F32, None)], 18)


def same(got, ref):
    if got.shape != ref.shape or got.dtype != ref.dtype:
        return False, "shape/dtype %s %s, expected %s %s" % (got.shape, got.dtype, ref.shape, ref.dtype)
    if ref.dtype.kind in "iub":
        bad = int(np.sum(got != ref))
        return bad == 0, "%d elements differ" % bad
    g, r = got.astype(np.float64), ref.astype(np.float64)
    infs = lambda v: np.where(np.isinf(v), np.sign(v), 0)  # noqa: E731 (0 at NaN)
    if not np.array_equal(np.isnan(g), np.isnan(r)) or not np.array_equal(infs(g), infs(r)):
        return False, "NaN or inf in other places: %s vs %s" % (g, r)
    fin = np.isfinite(r)
    err = float(np.max(np.abs(g[fin] - r[fin]))) if fin.any() else 0.0
    return err <= 1e-5 * max(1.0, float(np.max(np.abs(r[fin]))) if fin.any() else 0.0), "max abs error %.2e" % err


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tesselc", required=True)
    ap.add_argument("--tessel-run", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--sequences", action="store_true",
                    help="the sequence ops' cases, and their errors")
    a = ap.parse_args()
    os.makedirs(a.workdir, exist_ok=True)
    failed = 0
    if a.sequences:
        for name, m in sequence_errors():
            path = os.path.join(a.workdir, name + ".onnx")
            onnx.save(m, path)
            r = subprocess.run([a.tesselc, path, "-o", os.path.join(a.workdir, name + ".tsl")],
                               capture_output=True, text=True)
            print("composed: %s: exit %d: %s" % (name, r.returncode, r.stderr.strip()))
    for name, m, feeds, ref in (sequence_cases() if a.sequences else cases()):
        d = os.path.join(a.workdir, name)
        os.makedirs(d, exist_ok=True)
        onnx.save(m, os.path.join(d, "model.onnx"))
        args = []
        for k, v in feeds.items():
            np.save(os.path.join(d, k + ".npy"), v)
            args += ["--input", "%s=%s" % (k, os.path.join(d, k + ".npy"))]
        out = os.path.join(d, "y.npy")
        for cmd in ([a.tesselc, os.path.join(d, "model.onnx"), "-o", os.path.join(d, "m.tsl")],
                    [a.tessel_run, os.path.join(d, "m.tsl")] + args + ["--output", "y=" + out]):
            r = subprocess.run(cmd, capture_output=True, text=True)
            if r.returncode:
                print("composed: %s: FAILED: %s" % (name, r.stderr.strip()))
                failed += 1
                break
        else:
            ok, what = same(np.load(out), ref)
            print("composed: %s: %s (%s)" % (name, "ok" if ok else "FAILED", what))
            failed += not ok
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
