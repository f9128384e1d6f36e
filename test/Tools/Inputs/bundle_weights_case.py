"""Makes a repository and a bundle for bundle-weights.test: a test model
whose bytes hold two tensors, an input file equal to one of the
repository's, and a .safetensors of those tensors plus a small one and a
transformed one (kept inline)."""
import json
import os
import random
import struct
import sys

root = sys.argv[1]
rng = random.Random(3)
def rand(n):
    return bytes(rng.getrandbits(8) for _ in range(n))

t1, t2 = rand(80000), rand(12000)
model = rand(1000) + t1 + rand(500) + t2 + rand(300)
os.makedirs(os.path.join(root, "repo", "test", "models", "m"))
with open(os.path.join(root, "repo", "test", "models", "m", "model.onnx"), "wb") as f:
    f.write(model)
inputs = rand(70000)
with open(os.path.join(root, "repo", "test", "models", "m", "input.npy"), "wb") as f:
    f.write(inputs)

art = os.path.join(root, "bundle", "artifacts", "a")
os.makedirs(art)
with open(os.path.join(art, "input.npy"), "wb") as f:
    f.write(inputs)
small, transformed = rand(100), bytes(reversed(t2))
tensors = [("w1", t1), ("small", small), ("w2", t2), ("w2t", transformed)]
header, off = {}, 0
for name, data in tensors:
    header[name] = {"dtype": "U8", "shape": [len(data)], "data_offsets": [off, off + len(data)]}
    off += len(data)
h = json.dumps(header).encode()
with open(os.path.join(art, "rank0.weights.safetensors"), "wb") as f:
    f.write(struct.pack("<Q", len(h)) + h + b"".join(d for _, d in tensors))
