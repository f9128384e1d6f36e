"""Writes the tensors of affine.mlir to a .safetensors file (by hand: the
format is an 8-byte little-endian header length, a JSON header, the bytes),
and its input x. Usage: write_safetensors.py OUT.safetensors X.npy [--wrong]"""
import json
import struct
import sys

import numpy as np

out, x_path = sys.argv[1], sys.argv[2]
rng = np.random.default_rng(7)
w = rng.standard_normal((3, 4)).astype(np.float32)
b = rng.standard_normal(4).astype(np.float32)
if "--wrong" in sys.argv:
    w = w.T.copy()  # [4, 3]: not what the program wants
header, blobs, offset = {}, [], 0
for name, t in (("layer.w", w), ("layer.b", b)):
    raw = t.tobytes()
    header[name] = {"dtype": "F32", "shape": list(t.shape),
                    "data_offsets": [offset, offset + len(raw)]}
    blobs.append(raw)
    offset += len(raw)
text = json.dumps(header).encode()
with open(out, "wb") as f:
    f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))
np.save(x_path, rng.standard_normal((2, 3)).astype(np.float32))
np.save(out + ".ref.npy", np.load(x_path) @ w.reshape(3, 4) + b)
