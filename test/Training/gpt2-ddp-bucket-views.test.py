"""Checks gpt2-ddp-bucket-views.test's traces: every slice of a gradient
bucket (an instruction whose operand is the arena range an earlier
all_reduce wrote) writes inside that range (its piece of the bucket), so
it copies nothing. Prints, per trace, the ranks, the bucket slices and how
many of them write elsewhere (copied)."""
import json
import os
import sys

for path in sys.argv[1:]:
    events = json.load(open(path))
    events = events["traceEvents"] if isinstance(events, dict) else events
    byRank = {}
    for e in events:
        if e.get("ph") == "X" and e.get("tid") == 0:
            byRank.setdefault(e["pid"], []).append(e)
    slices = copied = 0
    for rank, evs in byRank.items():
        evs.sort(key=lambda e: e["args"]["instruction"])
        buckets = set()
        for e in evs:
            reads, writes = e["args"]["arena_reads"], e["args"]["arena_writes"]
            if e["cat"] == "all_reduce" and writes and writes[0]:
                buckets.add(tuple(writes[0]))
            if e["cat"] != "slice" or not reads[0] or tuple(reads[0]) not in buckets:
                continue
            slices += 1
            (ro, rb), (wo, wb) = reads[0], writes[0]
            if not (ro <= wo and wo + wb <= ro + rb):
                copied += 1
    print("%s: ranks %d, bucket slices %d, copied %d"
          % (os.path.basename(path), len(byRank), slices, copied))
