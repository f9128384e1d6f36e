"""Writes a token file and, independently of tessel-run, the batches its
--data-tokens windows must give: for data position r and row b, the offset
splitmix64(seed ^ splitmix64(r * batch + b)) mod (tokens - seq); input_ids
= tokens[o : o + seq], labels = tokens[o + 1 : o + seq + 1], as nanoGPT's
get_batch cuts them.

usage: token_windows.py OUT_DIR TOKENS VOCAB STEPS BATCH SEQ SEED
writes OUT_DIR/train.bin (uint16), train32.bin (uint32) and batches.npy
(i64 [steps, batch, seq + 1], for --data-lm).
"""
import sys

import numpy as np

MASK = (1 << 64) - 1


def splitmix64(x):
    x = (x + 0x9E3779B97F4A7C15) & MASK
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & MASK
    return x ^ (x >> 31)


def main():
    out, n, vocab, steps, batch, seq, seed = sys.argv[1:8]
    n, vocab, steps, batch, seq, seed = map(int, (n, vocab, steps, batch, seq, seed))
    tokens = np.random.default_rng(7).integers(0, vocab, size=n)
    tokens.astype(np.uint16).tofile(out + "/train.bin")
    tokens.astype(np.uint32).tofile(out + "/train32.bin")
    rows = np.zeros((steps, batch, seq + 1), dtype=np.int64)
    for r in range(steps):
        for b in range(batch):
            o = splitmix64(seed ^ splitmix64(r * batch + b)) % (n - seq)
            rows[r, b] = tokens[o:o + seq + 1]
    np.save(out + "/batches.npy", rows)


if __name__ == "__main__":
    main()
