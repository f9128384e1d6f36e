#!/usr/bin/python3
"""Writes the data files of test/Training/non-finite.test.

  nan_data.py OUT_DIR
writes, for test/models/mlp (x [8, 64] -> 10 classes), 4 steps of
  x.npy        [4, 8, 64] f32, standard normal (seed 0)
  x_nan.npy    x with x[2, 5, 0] = NaN: step 3's row 5
  labels.npy   [4, 8] i64 in [0, 10)
and, for nan_grad.mlir,
  sqrt_w.npz   {"w": [4] f32 = [1, 0, 4, 9]}: sqrt(w)'s gradient at w = 0
               is infinite
  ones.npy     [2, 4] f32 ones (the input, every step)
"""
import os
import sys

import numpy as np

out = sys.argv[1]
rng = np.random.default_rng(0)
x = rng.standard_normal((4, 8, 64)).astype(np.float32)
np.save(os.path.join(out, "x.npy"), x)
x_nan = x.copy()
x_nan[2, 5, 0] = np.nan
np.save(os.path.join(out, "x_nan.npy"), x_nan)
np.save(os.path.join(out, "labels.npy"),
        rng.integers(0, 10, size=(4, 8)).astype(np.int64))
np.savez(os.path.join(out, "sqrt_w.npz"),
         w=np.array([1, 0, 4, 9], dtype=np.float32))
np.save(os.path.join(out, "ones.npy"), np.ones((2, 4), dtype=np.float32))
