"""A safetensors file's tensors as numpy arrays, for the tests' Python
checks and the benches (no safetensors package needed). lit puts this
directory on PYTHONPATH."""
import json
import struct

import numpy as np

# BF16 entries come back as their raw 16-bit patterns.
DTYPES = {"F32": np.float32, "F16": np.float16, "BF16": np.uint16,
          "F64": np.float64, "I64": np.int64, "I32": np.int32,
          "BOOL": np.bool_}


def read_safetensors(path, only=None):
    """{name: array} of the safetensors file `path`; with `only` (a dtype
    name such as "F32"), an entry of another dtype is an error naming it."""
    with open(path, "rb") as f:
        raw = f.read()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    body = raw[8 + n:]
    out = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        if (only and e["dtype"] != only) or e["dtype"] not in DTYPES:
            raise SystemExit("%s: %s is %s, expected %s" % (
                path, name, e["dtype"], only or " or ".join(DTYPES)))
        b, end = e["data_offsets"]
        out[name] = np.frombuffer(body[b:end], DTYPES[e["dtype"]]).reshape(
            e["shape"])
    return out
