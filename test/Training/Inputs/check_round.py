#!/usr/bin/python3
"""Inputs and an independent check for tessel.round_float.

  check_round.py gen X.npy
      4096 f32 values: ties and near-ties of bf16 and fp16, fp16's largest
      finite value and overflow threshold (65504, 65519, 65520), its
      subnormals, f32 subnormals, zeros, infinities, NaN, and random values
      over many magnitudes.
  check_round.py check X.npy DIR
      DIR/bf16.npy must be X rounded to bfloat16 (nearest, ties to even;
      computed here from the f32 bits with integers: keep the top 16 bits)
      and DIR/fp16.npy X cast to NumPy's float16 and back (IEEE binary16,
      NumPy's conversion), bit for bit (NaN where X is NaN).
"""
import os
import sys

import numpy as np


def gen(path):
    rng = np.random.default_rng(7)
    special = [0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 65504.0,
               65519.0, 65520.0, 65536.0, -65520.0, 1e5, 6e-8, 3e-8, 2.98e-8,
               5.96e-8, 6.1e-5, 6.0e-5, 1e-40, -1e-42, 3.4e38]
    # Ties: the midpoint between consecutive bf16 values 1 + k 2^-7 and
    # between fp16 values 1 + k 2^-10.
    for k in range(8):
        special.append(1.0 + (2 * k + 1) * 2.0 ** -8)
        special.append(1.0 + (2 * k + 1) * 2.0 ** -11)
        special.append(-(1.0 + (2 * k + 1) * 2.0 ** -11) * 2.0 ** -20)
    rest = 4096 - len(special)
    mags = rng.uniform(-30, 20, rest)
    vals = rng.choice([-1.0, 1.0], rest) * rng.uniform(1, 2, rest) * 2.0 ** mags
    x = np.concatenate([np.array(special, np.float64), vals]).astype(np.float32)
    np.save(path, x)


def bf16_reference(x):
    u = x.view(np.uint32).astype(np.uint64)
    lsb = (u >> 16) & 1
    r = ((u + 0x7FFF + lsb) & 0xFFFF0000).astype(np.uint32).view(np.float32)
    return np.where(np.isfinite(x), r, x)


def check(x_path, out_dir):
    x = np.load(x_path)
    ok = True
    with np.errstate(over="ignore"):  # fp16's overflow to inf is the point
        fp16 = x.astype(np.float16).astype(np.float32)
    for name, want in (("bf16", bf16_reference(x)), ("fp16", fp16)):
        got = np.load(os.path.join(out_dir, name + ".npy"))
        same = (got.view(np.uint32) == want.view(np.uint32)) | (
            np.isnan(got) & np.isnan(want))
        bad = np.flatnonzero(~same)
        print(f"{name}: {len(x) - len(bad)}/{len(x)} equal bit for bit")
        for i in bad[:5]:
            print(f"  x[{i}] = {x[i]!r}: got {got[i]!r}, want {want[i]!r}")
        ok = ok and len(bad) == 0
    return 0 if ok else 1


if __name__ == "__main__":
    if sys.argv[1] == "gen":
        gen(sys.argv[2])
    else:
        sys.exit(check(sys.argv[2], sys.argv[3]))
