#!/usr/bin/env python3
"""Checks a tessel-run --trace file: valid Chrome-trace JSON, one track per
expected rank, complete events that do not overlap within a rank, and the
named nodes / op kinds present (tracks, tid, of one rank may overlap: a
pipelined program's actions lie over its instructions). Prints 'trace ok' or the first problem.

    check_trace.py FILE --ranks N [--node NAME]... [--kind KIND]...
"""
import argparse
import json
import sys

ap = argparse.ArgumentParser()
ap.add_argument("file")
ap.add_argument("--ranks", type=int, required=True)
ap.add_argument("--node", action="append", default=[])
ap.add_argument("--kind", action="append", default=[])
a = ap.parse_args()
events = json.load(open(a.file))["traceEvents"]
runs = [e for e in events if e.get("ph") == "X"]
problems = []
if sorted({e["pid"] for e in runs}) != list(range(a.ranks)):
    problems.append("ranks %s, expected 0..%d" % (sorted({e["pid"] for e in runs}), a.ranks - 1))
for r in range(a.ranks):
    mine = sorted((e for e in runs if e["pid"] == r), key=lambda e: e["ts"])
    for tid in sorted({e.get("tid", 0) for e in mine}):
        track = [e for e in mine if e.get("tid", 0) == tid]
        for x, y in zip(track, track[1:]):
            if x["ts"] + x["dur"] > y["ts"] + 1e-3:
                problems.append("rank %d: %s overlaps %s" % (r, x["name"], y["name"]))
    if any(e["dur"] < 0 for e in mine):
        problems.append("rank %d: a negative duration" % r)
    names = {e["name"] for e in mine}
    kinds = {e["cat"] for e in mine}
    for n in a.node:
        if n not in names:
            problems.append("rank %d: no event for node %s" % (r, n))
    for k in a.kind:
        if k not in kinds:
            problems.append("rank %d: no %s event" % (r, k))
print(problems[0] if problems else "trace ok (%d events)" % len(runs))
sys.exit(1 if problems else 0)
