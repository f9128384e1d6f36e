#!/usr/bin/python3
"""Inputs and an independent check for bf16_convs.mlir.

  check_bf16_convs.py gen DIR
      random inputs x, w, b, g, p, dy (DIR/NAME.npy) over a few magnitudes.
  check_bf16_convs.py check DIR OUT_DIR
      each output of OUT_DIR against NumPy in float64 on the inputs rounded
      to bf16 (nearest, ties to even, from the f32 bits), the convolutions
      written out as sums over the kernel's taps: within 1e-6 of the largest
      magnitude of the output (f32 accumulation in any order).
"""
import os
import sys

import numpy as np

from check_bf16_gemms import bf16

SHAPES = {"x": (2, 4, 9, 9), "w": (6, 4, 3, 3), "b": (6,), "g": (6, 2, 3, 3),
          "p": (5, 4, 1, 1), "dy": (2, 6, 5, 5)}


def taps(w, stride, dil, out_hw):
    """For each tap (i, j) of kernel `w`: the window slices of the padded
    input that it reads for every output position."""
    oh, ow = out_hw
    for i in range(w.shape[2]):
        for j in range(w.shape[3]):
            r0, c0 = i * dil, j * dil
            yield i, j, (slice(r0, r0 + stride * (oh - 1) + 1, stride),
                         slice(c0, c0 + stride * (ow - 1) + 1, stride))


def conv(x, w, stride=1, pad=0, dil=1, group=1):
    n, c, h, wd = x.shape
    o, cg = w.shape[0], w.shape[1]
    kh, kw = w.shape[2], w.shape[3]
    oh = (h + 2 * pad - dil * (kh - 1) - 1) // stride + 1
    ow = (wd + 2 * pad - dil * (kw - 1) - 1) // stride + 1
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    y = np.zeros((n, o, oh, ow))
    og = o // group
    for gi in range(group):
        xs = xp[:, gi * cg:(gi + 1) * cg]
        ws = w[gi * og:(gi + 1) * og]
        for i, j, (rs, cs) in taps(ws, stride, dil, (oh, ow)):
            y[:, gi * og:(gi + 1) * og] += np.einsum(
                "nchw,oc->nohw", xs[:, :, rs, cs], ws[:, :, i, j])
    return y


def conv_backward_data(dy, w, x_shape, stride, pad):
    n, c, h, wd = x_shape
    dxp = np.zeros((n, c, h + 2 * pad, wd + 2 * pad))
    for i, j, (rs, cs) in taps(w, stride, 1, dy.shape[2:]):
        dxp[:, :, rs, cs] += np.einsum("nohw,oc->nchw", dy, w[:, :, i, j])
    return dxp[:, :, pad:pad + h, pad:pad + wd]


def conv_backward_weight(x, dy, w_shape, stride, pad):
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    dw = np.zeros(w_shape)
    for i, j, (rs, cs) in taps(dw, stride, 1, dy.shape[2:]):
        dw[:, :, i, j] = np.einsum("nchw,nohw->oc", xp[:, :, rs, cs], dy)
    return dw


def main():
    if sys.argv[1] == "gen":
        rng = np.random.default_rng(5)
        for name, shape in SHAPES.items():
            scale = 10.0 ** rng.integers(-2, 2, size=shape)
            np.save(os.path.join(sys.argv[2], name + ".npy"),
                    (rng.standard_normal(shape) * scale).astype(np.float32))
        return
    ins, outs = sys.argv[2], sys.argv[3]
    v = {n: np.load(os.path.join(ins, n + ".npy")) for n in SHAPES}
    x, w, g, p, dy = (bf16(v[n]) for n in ("x", "w", "g", "p", "dy"))
    bias = v["b"].astype(np.float64)[None, :, None, None]
    want = {"strided": conv(x, w, stride=2, pad=1) + bias,
            "grouped": conv(x, g, pad=1, dil=2, group=2),
            "pointwise": conv(x, p),
            "backward_data": conv_backward_data(dy, w, x.shape, 2, 1),
            "backward_weight": conv_backward_weight(x, dy, w.shape, 2, 1)}
    for name, ref in want.items():
        got = np.load(os.path.join(outs, name + ".npy"))
        assert got.shape == ref.shape, (name, got.shape, ref.shape)
        err = np.max(np.abs(got - ref)) / np.max(np.abs(ref))
        assert err <= 1e-6, (name, err)
    print("ok")


if __name__ == "__main__":
    main()
