#!/usr/bin/env python3
"""Compares an output .npy with a reference .npy.

Passes when shapes and dtypes agree and max|out - ref| <= tol * max(1, max|ref|);
prints the figures either way and exits 1 on a mismatch.

    compare_npy.py OUT.npy REF.npy [--tol 1e-4]
"""
import argparse
import sys

import numpy as np


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("ref")
    ap.add_argument("--tol", type=float, default=1e-4)
    args = ap.parse_args()
    out, ref = np.load(args.out), np.load(args.ref)
    if out.shape != ref.shape:
        sys.exit("shape mismatch: output %s, reference %s" % (out.shape, ref.shape))
    if out.dtype != ref.dtype:
        sys.exit("dtype mismatch: output %s, reference %s" % (out.dtype, ref.dtype))
    err = float(np.max(np.abs(out.astype(np.float64) - ref.astype(np.float64)))) if out.size else 0.0
    bound = args.tol * max(1.0, float(np.max(np.abs(ref))) if ref.size else 0.0)
    verdict = "ok" if err <= bound else "MISMATCH"
    print("max abs error %.3e, bound %.3e: %s" % (err, bound, verdict))
    sys.exit(0 if err <= bound else 1)


if __name__ == "__main__":
    main()
