#!/usr/bin/python3
"""Checks of tessel-run's checkpoints (test/Training/gpt2-checkpoint.test).

  check_resume.py resumed FULL.npy FIRST.npy REST.npy
      FIRST then REST (a run saved after len(FIRST) steps, then resumed) are
      FULL (the straight run) bit for bit.
  check_resume.py close FULL.npy FIRST.npy REST.npy RTOL
      the same within RTOL relative (a run resumed on another mesh).
  check_resume.py labels OUT.npy N CLASSES
      writes int64 labels [N] (i mod CLASSES).
"""
import sys

import numpy as np


def resumed(full, first, rest):
    f, a, b = np.load(full), np.load(first), np.load(rest)
    assert f.dtype == a.dtype == b.dtype == np.float32, (f.dtype, a.dtype,
                                                         b.dtype)
    assert a.shape[0] + b.shape[0] == f.shape[0], (a.shape, b.shape, f.shape)
    both = np.concatenate([a, b])
    same = both.view(np.uint32) == f.view(np.uint32)
    assert same.all(), "steps %s differ: %s vs %s" % (
        np.nonzero(~same)[0] + 1, both[~same], f[~same])
    print("the resumed run's %d losses equal the straight run's bit for bit"
          % b.shape[0])


def close(full, first, rest, rtol):
    f, a, b = np.load(full), np.load(first), np.load(rest)
    assert a.shape[0] + b.shape[0] == f.shape[0], (a.shape, b.shape, f.shape)
    both = np.concatenate([a, b]).astype(np.float64)
    rel = np.abs(both - f) / np.abs(f)
    print("the resumed run's %d losses equal the straight run's within %.2e"
          % (b.shape[0], rel.max()))
    assert rel.max() <= rtol, "steps %s differ: %s vs %s" % (
        np.nonzero(rel > rtol)[0] + 1, both[rel > rtol], f[rel > rtol])


def main():
    cmd = sys.argv[1]
    if cmd == "resumed":
        resumed(sys.argv[2], sys.argv[3], sys.argv[4])
    elif cmd == "close":
        close(sys.argv[2], sys.argv[3], sys.argv[4], float(sys.argv[5]))
    elif cmd == "labels":
        n, classes = int(sys.argv[3]), int(sys.argv[4])
        np.save(sys.argv[2], np.arange(n, dtype=np.int64) % classes)
    else:
        sys.exit("unknown command " + cmd)


if __name__ == "__main__":
    main()
