#!/usr/bin/env python3
"""Writes the input and the numpy reference of a reshape case.

    reshape_case.py OUTDIR NAME IN_SHAPE OUT_SHAPE     (shapes as 34x96)

OUTDIR/NAME.x.npy is a random float32 input of IN_SHAPE, OUTDIR/NAME.ref.npy
is exp(x) in numpy's row-major reshape to OUT_SHAPE. OUTDIR/no-weights.onnx
is a weightless model for tesselc --weights.
"""
import os
import sys

import numpy as np
from no_weights import no_weights_model


def shape(s):
    return tuple(int(d) for d in s.split("x"))


def main():
    out, name, ins, outs = sys.argv[1:5]
    os.makedirs(out, exist_ok=True)
    x = np.random.default_rng(7).standard_normal(shape(ins)).astype(np.float32)
    np.save(os.path.join(out, name + ".x.npy"), x)
    np.save(os.path.join(out, name + ".ref.npy"),
            np.exp(x.astype(np.float64)).reshape(shape(outs)).astype(np.float32))
    no_weights_model(out)


if __name__ == "__main__":
    main()
