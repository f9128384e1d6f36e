"""Writes the tensors of affine.mlir to an .npz (np.savez; --compressed:
np.savez_compressed), its input x and numpy's x @ w + b.
Usage: write_npz.py OUT.npz X.npy [--compressed]"""
import sys

import numpy as np

out, x_path = sys.argv[1], sys.argv[2]
rng = np.random.default_rng(5)
w = rng.standard_normal((3, 4)).astype(np.float32)
b = rng.standard_normal(4).astype(np.float32)
save = np.savez_compressed if "--compressed" in sys.argv else np.savez
with open(out, "wb") as f:
    save(f, **{"layer.w": w, "layer.b": b})
x = rng.standard_normal((2, 3)).astype(np.float32)
np.save(x_path, x)
np.save(out + ".ref.npy", x @ w + b)
