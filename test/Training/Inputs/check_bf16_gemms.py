#!/usr/bin/python3
"""Inputs and an independent check for bf16_gemms.mlir.

  check_bf16_gemms.py gen DIR
      random inputs x, w, c, p, q, r, s (DIR/NAME.npy) over a few magnitudes.
  check_bf16_gemms.py check DIR OUT_DIR
      each output of OUT_DIR against NumPy in float64 on the inputs rounded
      to bf16 (nearest, ties to even, from the f32 bits): within 1e-6 of the
      largest magnitude of the output (f32 accumulation in any order).
"""
import os
import sys

import numpy as np

SHAPES = {"x": (48, 40), "w": (24, 48), "c": (24,), "p": (2, 3, 8, 16),
          "q": (3, 16, 4), "r": (1, 8, 16), "s": (2, 16, 4)}


def bf16(a):
    u = a.astype(np.float32).view(np.uint32).astype(np.uint64)
    u = (u + 0x7FFF + ((u >> 16) & 1)) & 0xFFFF0000
    return u.astype(np.uint32).view(np.float32).astype(np.float64)


def main():
    if sys.argv[1] == "gen":
        rng = np.random.default_rng(3)
        for name, shape in SHAPES.items():
            scale = 10.0 ** rng.integers(-3, 3, size=shape)
            np.save(os.path.join(sys.argv[2], name + ".npy"),
                    (rng.standard_normal(shape) * scale).astype(np.float32))
        return
    ins, outs = sys.argv[2], sys.argv[3]
    v = {n: np.load(os.path.join(ins, n + ".npy")) for n in SHAPES}
    x, w, p, q, r, s = (bf16(v[n]) for n in "xwpqrs")
    want = {"gemm_ta": 0.5 * x.T @ w.T + 2.0 * v["c"].astype(np.float64),
            "gemm_tb": x.T @ w.T, "batched": p @ q,
            "folded": p @ w.T[:16], "src_broadcast": r @ s}
    for name, ref in want.items():
        got = np.load(os.path.join(outs, name + ".npy"))
        err = np.max(np.abs(got - ref)) / np.max(np.abs(ref))
        assert got.shape == ref.shape and err <= 1e-6, (name, got.shape, err)
    print("ok")


if __name__ == "__main__":
    main()
