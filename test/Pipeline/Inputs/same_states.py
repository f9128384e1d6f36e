#!/usr/bin/python3
"""same_states.py ONE_RANK_CKPT PIPELINE_CKPT

Every state of the one-rank checkpoint (rank0.safetensors) equals, bit for
bit, the state of that name in exactly one rank file of the pipelined run's
checkpoint (each stage keeps its own parameters, optimizer state and
BatchNorm statistics)."""
import glob
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..",
                                "Training", "Inputs"))
import check_training  # noqa: E402


def main():
    one = check_training.read_safetensors(
        os.path.join(sys.argv[1], "rank0.safetensors"))
    where = {}
    for path in sorted(glob.glob(os.path.join(sys.argv[2], "rank*.safetensors"))):
        for name, value in check_training.read_safetensors(path).items():
            where.setdefault(name, []).append((path, value))
    for name, value in one.items():
        held = where.get(name, [])
        assert len(held) == 1, "%s is held by %d ranks" % (name, len(held))
        got = held[0][1]
        assert got.dtype == value.dtype and got.shape == value.shape, name
        assert got.tobytes() == value.tobytes(), "%s differs (max %g)" % (
            name, np.max(np.abs(got - value)))
    extra = set(where) - set(one)
    assert not extra, "states only the pipeline has: %s" % sorted(extra)
    print("%d states bitwise equal, each on one rank" % len(one))


if __name__ == "__main__":
    main()
