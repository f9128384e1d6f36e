#!/usr/bin/python3
"""weight_names.py ART.tsl

Prints, for each weights file of an artifact, the tensors it holds, sorted:
`rank0.weights.safetensors: a b c`. Reads the safetensors header (8-byte
length, JSON) directly."""
import glob
import json
import os
import struct
import sys

for path in sorted(glob.glob(os.path.join(sys.argv[1], "*.safetensors"))):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
    names = sorted(k for k in header if k != "__metadata__")
    print("%s: %s" % (os.path.basename(path), " ".join(names)))
