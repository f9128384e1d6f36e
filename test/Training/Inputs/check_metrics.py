"""Checks tessel-run --metrics against what the run also wrote and against
the learning-rate schedule computed here, independently, as PyTorch's
LambdaLR with transformers' get_cosine_schedule_with_warmup factor does
(held in f32, as the step holds it).

usage: check_metrics.py METRICS.jsonl LOSSES.npy LR WARMUP TOTAL [FIRST_STEP]
"""
import json
import math
import sys

import numpy as np


def main():
    path, losses, lr, warmup, total = sys.argv[1:6]
    first = int(sys.argv[6]) if len(sys.argv) > 6 else 1
    lr, warmup, total = float(lr), int(warmup), int(total)
    lines = open(path).read().splitlines()
    records = [json.loads(l) for l in lines]
    want = np.load(losses)
    assert len(records) == len(want), (len(records), len(want))
    for i, r in enumerate(records):
        step = first + i
        assert r["step"] == step, (r, step)
        assert set(r) == {"step", "loss", "lr", "ms", "tokens_per_s"}, r
        assert np.float32(r["loss"]) == want[i], (r["loss"], want[i])
        k = step - 1  # updates before this one
        if k < warmup:
            f = k / max(1, warmup)
        else:
            f = max(0.0, 0.5 * (1.0 + math.cos(
                math.pi * (k - warmup) / max(1, total - warmup))))
        assert np.float32(r["lr"]) == np.float32(lr * f), (step, r["lr"], lr * f)
        assert r["ms"] > 0 and r["tokens_per_s"] > 0, r
    print("metrics ok: %d steps, losses and learning rates as expected"
          % len(records))


if __name__ == "__main__":
    main()
