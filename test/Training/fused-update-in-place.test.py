"""Checks fused-update-in-place.test's run: the copies in the trace, the
bias read after its update (the initial value), the weight's update (one
Adam step from zero state with step size 0.1 and no bias correction:
w - 0.1 m / (sqrt(v) + eps) with m = (1 - b1) g, v = (1 - b2) g^2, 1 - b1
and 1 - b2 as PyTorch computes them from 0.9 and 0.999)."""
import json
import os
import sys

import numpy as np
import onnx
from onnx import numpy_helper

model, d = sys.argv[1:3]
init = {i.name: numpy_helper.to_array(i) for i in onnx.load(model).graph.initializer}
events = json.load(open(os.path.join(d, "trace.json")))
events = events["traceEvents"] if isinstance(events, dict) else events
print("copies", sum(1 for e in events if e.get("ph") == "X" and e.get("cat") == "copy"))
old = np.load(os.path.join(d, "old.npy"))
if np.array_equal(old, -init["fc3.bias"]):
    print("old bias ok")
else:
    print("old bias differs:", old, -init["fc3.bias"])
g = np.float64(0.25)
# 1 - beta as PyTorch computes it: Python floats, rounded once to f32.
omb1, omb2 = float(np.float32(1 - 0.9)), float(np.float32(1 - 0.999))
m, v = omb1 * g, omb2 * g * g
want = -(init["fc3.weight"].astype(np.float64) - 0.1 * m / (np.sqrt(v) + 1e-8))
new = np.load(os.path.join(d, "new.npy"))
err = np.max(np.abs(new - want))
print("new weight ok" if err < 1e-6 else "new weight off by %g" % err)
