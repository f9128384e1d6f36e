#!/usr/bin/python3
"""same_blocks.py REF_CKPT CKPT [--rtol X]

Every block of every state in checkpoint CKPT (any mesh: each rank's piece
of a state, placed by the index's "layout") equals, bit for bit, the same
region of that state in REF_CKPT (put together from its own blocks, whose
copies of one region must agree bit for bit too), and CKPT covers every
state of REF_CKPT whole. Prints the count, then `copies: NAME xK` for each
state whose blocks CKPT holds on K ranks each (K > 1), sorted by name: a
weight shared by pipeline stages is held, bitwise equal, by every stage
that reads it (docs/pipeline.md). With --rtol, each block is within X of
the reference (relative to the state's largest magnitude) instead, and the
copies of a block in CKPT are still bitwise equal to each other."""
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..",
                                "Training", "Inputs"))
import check_training  # noqa: E402


def blocks(ckpt):
    """[(name, rank, offset, array)] of a checkpoint."""
    index = json.load(open(os.path.join(ckpt, "model.safetensors.index.json")))
    files = {}
    out = []
    for key, layout in index["layout"].items():
        rank, name = key.split("/", 1) if "/" in key else ("rank0", key)
        fname = index["weight_map"][key]
        if fname not in files:
            files[fname] = check_training.read_safetensors(os.path.join(ckpt, fname))
        out.append((name, rank, tuple(layout["offset"]), tuple(layout["global_shape"]),
                    files[fname][name]))
    return out


def region(offset, shape):
    return tuple(slice(o, o + n) for o, n in zip(offset, shape))


def assemble(ckpt):
    """{name: whole array}; every element covered, copies bitwise equal."""
    whole, seen = {}, {}
    for name, _, offset, gshape, a in blocks(ckpt):
        if name not in whole:
            whole[name] = np.zeros(gshape, dtype=a.dtype)
            seen[name] = np.zeros(gshape, dtype=bool)
        r = region(offset, a.shape)
        if seen[name][r].any():
            assert whole[name][r].tobytes() == np.ascontiguousarray(a).tobytes(), \
                "%s: two copies of a block at %s differ" % (name, offset)
        whole[name][r] = a
        seen[name][r] = True
    for name, s in seen.items():
        assert s.all(), "%s: not every element is held" % name
    return whole


def main():
    rtol = float(sys.argv[4]) if sys.argv[3:4] == ["--rtol"] else None
    ref = assemble(sys.argv[1])
    holders = {}
    worst = 0.0
    got = blocks(sys.argv[2])
    for name, rank, offset, gshape, a in got:
        assert name in ref, "%s: a state the reference does not have" % name
        want = ref[name]
        assert want.shape == gshape and want.dtype == a.dtype, name
        w = want[region(offset, a.shape)]
        if rtol is not None and a.size:
            err = float(np.max(np.abs(a.astype(np.float64) - w))) / max(
                float(np.max(np.abs(want))), 1e-30)
            worst = max(worst, err)
            assert err <= rtol, "%s (%s at %s): %g relative" % (name, rank, offset, err)
        elif rtol is None:
            assert w.tobytes() == np.ascontiguousarray(a).tobytes(), \
                "%s (%s at %s) differs (max %g)" % (name, rank, offset,
                                                     np.max(np.abs(a - w)))
        holders.setdefault(name, {}).setdefault(offset, set()).add(rank)
    missing = set(ref) - set(holders)
    assert not missing, "states the checkpoint lacks: %s" % sorted(missing)
    assemble(sys.argv[2])  # covers every element; copies bitwise equal
    if rtol is None:
        print("%d states bitwise equal to the reference" % len(ref))
    else:
        print("%d states within %g of the reference" % (len(ref), rtol))
    for name in sorted(holders):
        counts = {len(r) for r in holders[name].values()}
        assert len(counts) == 1, "%s: blocks held by %s ranks" % (name, counts)
        k = counts.pop()
        if k > 1:
            print("copies: %s x%d" % (name, k))


if __name__ == "__main__":
    main()
