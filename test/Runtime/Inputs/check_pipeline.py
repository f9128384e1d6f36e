#!/usr/bin/env python3
"""What test/Runtime/pipeline*.test check of a pipelined run.

    check_pipeline.py equal A.npy B.npy   'bitwise equal' or the difference
    check_pipeline.py actions TRACE.json  each rank's action spans (tid 1)
                                          in time order, one line per rank
    check_pipeline.py svg FILE.svg        the heading, then the boxes of
                                          each rank in the file's order
"""
import json
import re
import sys


def equal(a, b):
    import numpy as np
    x, y = np.load(a), np.load(b)
    if x.shape != y.shape or x.dtype != y.dtype:
        print("shapes differ: %s %s vs %s %s" % (x.dtype, x.shape, y.dtype, y.shape))
    elif x.tobytes() == y.tobytes():
        print("bitwise equal")
    else:
        print("differ: max abs %g" % float(abs(x - y).max()))


def actions(path):
    events = json.load(open(path))["traceEvents"]
    spans = [e for e in events if e.get("ph") == "X" and e.get("tid") == 1]
    for r in sorted({e["pid"] for e in spans}):
        mine = sorted((e for e in spans if e["pid"] == r), key=lambda e: e["ts"])
        print("rank %d: %s" % (r, ", ".join(e["name"] for e in mine)))


def svg(path):
    text = open(path).read()
    print(re.search(r'font-size="15">([^<]*)<', text).group(1))
    boxes = re.findall(r"<title>(\S+ \S+) on rank (\d+): ([0-9.]+) to", text)
    for r in sorted({int(b[1]) for b in boxes}):
        # In the file's order: each rank's boxes are written in run order.
        print("rank %d: %s" % (r, ", ".join(b[0] for b in boxes if int(b[1]) == r)))


cmd = sys.argv[1]
if cmd == "equal":
    equal(sys.argv[2], sys.argv[3])
elif cmd == "actions":
    actions(sys.argv[2])
elif cmd == "svg":
    svg(sys.argv[2])
else:
    sys.exit("unknown command " + cmd)
