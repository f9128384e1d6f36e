"""Checks embedding-padding-idx.test's gradients: IDS.npy ONE_RANK TP2."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "Inputs"))
from safetensors_np import read_safetensors  # noqa: E402

NAME = "model.bert.embeddings.word_embeddings.weight"
ids = np.load(sys.argv[1])
grads = [np.asarray(read_safetensors(p)[NAME], np.float64) for p in sys.argv[2:]]
g = grads[0]
assert (ids == 0).any(), "the input must look up the padding row"
assert not g[0].any(), "row 0 (padding_idx) has gradient %s" % g[0][:4]
used = sorted(set(ids.ravel().tolist()) - {0})
dead = [r for r in used if not g[r].any()]
assert not dead, "looked-up rows with no gradient: %s" % dead
unused = [r for r in range(g.shape[0]) if r not in used and g[r].any()]
assert not unused, "rows never looked up have gradient: %s" % unused
for other in grads[1:]:
    err = float(np.abs(other - g).max())
    assert err <= 1e-6 * max(1.0, float(np.abs(g).max())), "sharded gradient differs by %g" % err
print("padding row 0: zero gradient; %d other looked-up rows nonzero; 1 rank and tp=2 agree" % len(used))
