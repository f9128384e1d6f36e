#!/usr/bin/python3
"""Checks a training step's --trace (test/Training/progress-trace.test).

  check_trace.py TRACE.json RANKS NAME...
      every rank's track has events of each phase (args.phase: forward,
      backward, optimizer, in that order of first appearance), and for each
      NAME (an instruction's name: "loss", the optimizer's "adamw") some on
      every rank.
"""
import json
import sys

trace = json.load(open(sys.argv[1]))["traceEvents"]
ranks = int(sys.argv[2])
events = [e for e in trace if e.get("ph") == "X"]
for r in range(ranks):
    mine = [e for e in events if e["pid"] == r]
    assert mine, "rank %d has no events" % r
    phases = [e["args"].get("phase") for e in mine]
    first = [p for i, p in enumerate(phases) if p not in phases[:i]]
    assert first == ["forward", "backward", "optimizer"], first
    counts = {p: phases.count(p) for p in first}
    print("rank %d: %s" % (r, counts))
    for name in sys.argv[3:]:
        n = sum(1 for e in mine if e["name"] == name)
        assert n > 0, "rank %d has no '%s' instruction" % (r, name)
        print("rank %d: %d '%s' instructions" % (r, n, name))
print("%d events" % len(events))
