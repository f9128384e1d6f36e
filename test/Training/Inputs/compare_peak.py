#!/usr/bin/python3
"""Compares the planned peaks of two `tesselc --report` outputs.

  compare_peak.py BASE.report OTHER.report
      prints both peaks and arenas; fails unless OTHER's peak is below BASE's.
"""
import re
import sys


def peak(path):
    text = open(path).read()
    m = re.search(r"memory report \(per rank, planned\): peak (\d+) bytes", text)
    a = re.search(r"  arena: (\d+) bytes", text)
    assert m and a, "%s has no memory report" % path
    return int(m.group(1)), int(a.group(1))


base, other = peak(sys.argv[1]), peak(sys.argv[2])
print("peak %d -> %d bytes (arena %d -> %d, %.1f%% of the arena)"
      % (base[0], other[0], base[1], other[1], 100.0 * other[1] / base[1]))
assert other[0] < base[0], "the peak did not go down"
