#!/usr/bin/env python3
"""MaxPool, AveragePool and GlobalMaxPool over 1, 2 and 3 spatial dims,
against a direct numpy reference (every output a loop over its whole
window, as PyTorch defines pooling: a ceil_mode window must start inside
the input or its begin padding; count_include_pad counts the window up to
the end padding, without it only the values inside the input).

    pool_nd.py --tesselc T --tessel-run R --workdir W

Prints one line per case and "pool-nd: N cases ok" when every output is
within 1e-6 of the reference.
"""
import argparse, itertools, os, subprocess, sys

import numpy as np
import onnx
from onnx import TensorProto, helper


def out_size(n, k, s, pb, pe, ceil):
    span = n + pb + pe - k
    o = (-(-span // s) if ceil else span // s) + 1
    if ceil and (o - 1) * s >= n + pb:
        o -= 1
    return o


def reference(x, kind, kernel, strides, pads, ceil, include_pad):
    nd = len(kernel)
    sp = x.shape[2:]
    outs = [out_size(sp[d], kernel[d], strides[d], pads[d], pads[d + nd], ceil)
            for d in range(nd)]
    y = np.zeros(x.shape[:2] + tuple(outs), dtype=np.float64)
    for o in itertools.product(*[range(n) for n in outs]):
        lo, hi, size = [], [], 1
        for d in range(nd):
            start = o[d] * strides[d] - pads[d]
            end = min(start + kernel[d], sp[d] + pads[d + nd])
            size *= end - start
            lo.append(max(start, 0))
            hi.append(min(end, sp[d]))
        win = x[(slice(None), slice(None)) +
                tuple(slice(a, b) for a, b in zip(lo, hi))]
        win = win.reshape(x.shape[0], x.shape[1], -1).astype(np.float64)
        if kind == "MaxPool":
            y[(slice(None), slice(None)) + o] = win.max(axis=2)
        else:
            div = size if include_pad else win.shape[2]
            y[(slice(None), slice(None)) + o] = win.sum(axis=2) / div
    return y


CASES = [
    # kind, input shape, kernel, strides, pads, ceil_mode, count_include_pad
    ("MaxPool", (2, 3, 11), [3], [2], [1, 1], 0, 0),
    ("MaxPool", (1, 2, 10), [4], [3], [0, 2], 1, 0),
    ("AveragePool", (2, 3, 9), [3], [1], [1, 1], 0, 0),
    ("AveragePool", (2, 3, 9), [3], [2], [1, 1], 0, 1),
    ("AveragePool", (1, 2, 10), [4], [3], [1, 2], 1, 0),
    ("MaxPool", (1, 2, 6, 7, 5), [2, 3, 2], [2, 2, 1], [0, 1, 1, 1, 1, 0], 0, 0),
    ("MaxPool", (2, 2, 5, 6, 7), [3, 3, 3], [2, 2, 2], [1, 1, 1, 1, 1, 1], 1, 0),
    ("AveragePool", (1, 3, 6, 5, 7), [2, 2, 3], [2, 1, 2], [0, 0, 1, 1, 1, 1], 0, 0),
    ("AveragePool", (1, 3, 6, 5, 7), [3, 2, 3], [2, 2, 2], [1, 1, 1, 1, 0, 1], 0, 1),
    ("AveragePool", (2, 2, 5, 6, 7), [3, 3, 2], [2, 2, 2], [1, 0, 1, 1, 1, 0], 1, 0),
    ("AveragePool", (2, 2, 5, 6, 7), [3, 3, 2], [2, 2, 2], [1, 0, 1, 1, 1, 0], 1, 1),
    ("MaxPool", (2, 3, 7, 6), [3, 2], [2, 2], [1, 0, 1, 1], 1, 0),
]


def make(kind, shape, attrs, path, out_shape):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, list(out_shape))
    node = helper.make_node(kind, ["x"], ["y"], name="pool", **attrs)
    graph = helper.make_graph([node], "g", [x], [y])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(model, path)


def run(args, name, kind, shape, attrs, want, rng):
    d = os.path.join(args.workdir, name)
    os.makedirs(d, exist_ok=True)
    x = rng.standard_normal(shape).astype(np.float32)
    ref = want(x)
    make(kind, shape, attrs, os.path.join(d, "m.onnx"), ref.shape)
    np.save(os.path.join(d, "x.npy"), x)
    subprocess.run([args.tesselc, os.path.join(d, "m.onnx"), "-o",
                    os.path.join(d, "m.tsl")], check=True)
    subprocess.run([args.tessel_run, os.path.join(d, "m.tsl"), "--input",
                    "x=" + os.path.join(d, "x.npy"), "--output",
                    "y=" + os.path.join(d, "y.npy")], check=True)
    got = np.load(os.path.join(d, "y.npy"))
    if got.shape != ref.shape:
        print("pool-nd: %s: FAILED: shape %s, reference %s" %
              (name, got.shape, ref.shape))
        return False
    err = float(np.abs(got - ref).max())
    print("pool-nd: %s: %s %s max |diff| %.2g" %
          (name, kind, list(ref.shape), err))
    if not err <= 1e-6:
        print("pool-nd: %s: FAILED" % name)
        return False
    return True


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tesselc", required=True)
    ap.add_argument("--tessel-run", required=True)
    ap.add_argument("--workdir", required=True)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    ok = 0
    for i, (kind, shape, kernel, strides, pads, ceil, inc) in enumerate(CASES):
        attrs = dict(kernel_shape=kernel, strides=strides, pads=pads,
                     ceil_mode=ceil)
        if kind == "AveragePool":
            attrs["count_include_pad"] = inc
        want = lambda x, k=kind, a=(kernel, strides, pads, ceil, inc): \
            reference(x, k, *a)
        ok += run(args, "case%d" % i, kind, shape, attrs, want, rng)
    for i, shape in enumerate([(2, 3, 9), (2, 3, 4, 5), (1, 2, 3, 4, 5)]):
        nd = len(shape) - 2
        want = lambda x, nd=nd: x.max(axis=tuple(range(2, 2 + nd)),
                                      keepdims=True)
        ok += run(args, "global%d" % i, "GlobalMaxPool", shape, {}, want, rng)
    total = len(CASES) + 3
    print("pool-nd: %d of %d cases ok" % (ok, total))
    return 0 if ok == total else 1


if __name__ == "__main__":
    sys.exit(main())
