"""Compares the collectives tesselc --report counts per rank with the
collective instructions each rank ran (tessel-run --trace).
Usage: report_vs_trace.py REPORT.txt TRACE.json"""
import json
import re
import sys

KINDS = {"all_reduce", "all_gather", "reduce_scatter", "all_to_all",
         "collective_permute", "broadcast", "send", "recv"}
report = open(sys.argv[1]).read()
per_rank = int(re.search(r"(\d+) collectives per rank", report).group(1))
trace = json.load(open(sys.argv[2]))
events = trace["traceEvents"] if isinstance(trace, dict) else trace
ran = {}
for e in events:
    if e.get("ph") == "X" and e.get("cat") in KINDS:
        ran[e["pid"]] = ran.get(e["pid"], 0) + 1
ranks = sorted({e["pid"] for e in events})
counts = [ran.get(r, 0) for r in ranks]
verdict = "match" if all(c == per_rank for c in counts) else "MISMATCH"
print(f"report {per_rank} per rank, ranks ran {counts}: {verdict}")
