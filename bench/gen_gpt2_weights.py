#!/usr/bin/env python3
"""Random, seeded weights for a module written by gen_gpt2_ir.py, as an .npz.

    gen_gpt2_weights.py model.mlir weights.npz [--seed 0] [--period P]
    gen_gpt2_weights.py model.mlir batches.npz --tokens STEPS --vocab V --batch B --seq S

Every `tessel.weight "NAME" ... : tensor<...>` of the module gets a tensor
of its shape, initialised as GPT-2's (Hugging Face's _init_weights): a
LayerNorm's weight ones, biases zeros, the causal mask (`attn.bias`, i1)
the lower triangle, every other weight normal(0, 0.02). With --tokens,
writes instead the token batches tessel-run --data-lm reads ([STEPS, B,
S + 1] int64, uniform over the vocabulary) to the .npy path given.
--period P draws P values once and fills every normal weight with them,
repeated (the same statistics; a file that compresses to almost nothing:
the GPU bundle's benchmark, scripts/gpu-bundle).
Use /usr/bin/python3 (numpy).
"""
import argparse
import re

import numpy as np

WEIGHT = re.compile(r'tessel\.weight "([^"]+)"[^:]*: tensor<([0-9x]+)x(f32|i1)>')


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("module")
    ap.add_argument("out")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--tokens", type=int, default=0)
    ap.add_argument("--vocab", type=int, default=50257)
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--period", type=int, default=0)
    a = ap.parse_args()
    rng = np.random.default_rng(a.seed)
    if a.tokens:
        ids = rng.integers(0, a.vocab, size=(a.tokens, a.batch, a.seq + 1),
                           dtype=np.int64)
        np.save(a.out, ids)
        return
    tensors = {}
    block = None  # --period: the one draw every normal weight repeats
    with open(a.module) as f:
        for line in f:
            m = WEIGHT.search(line)
            if not m:
                continue
            name, dims, dtype = m.group(1), m.group(2), m.group(3)
            shape = tuple(int(x) for x in dims.split("x"))
            if dtype == "i1":
                n = shape[-1]
                tensors[name] = np.tril(np.ones((n, n), dtype=bool)).reshape(shape)
            elif name.endswith(".bias"):
                tensors[name] = np.zeros(shape, dtype=np.float32)
            elif ".ln_" in name or name.endswith("ln_f.weight"):
                tensors[name] = np.ones(shape, dtype=np.float32)
            elif a.period:
                if block is None:
                    block = (rng.standard_normal(a.period, dtype=np.float32)
                             * np.float32(0.02))
                tensors[name] = np.resize(block, int(np.prod(shape))).reshape(shape)
            else:
                tensors[name] = (rng.standard_normal(shape, dtype=np.float32)
                                 * np.float32(0.02))
    if not tensors:
        raise SystemExit("gen_gpt2_weights.py: no tessel.weight in " + a.module)
    np.savez(a.out, **tensors)


if __name__ == "__main__":
    main()
