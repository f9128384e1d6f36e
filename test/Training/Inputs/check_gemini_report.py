#!/usr/bin/python3
"""Checks a tesselc --plugin gemini --report against its limit.

  check_gemini_report.py REPORT LIMIT
      the resident chunks (the parameters and optimizer state of the chunks
      whose placement says device, summed from the chunk lines) plus the
      arena of the memory report (the buffer planner over the final
      program) are at most LIMIT bytes, and the gemini line's peak is that
      sum; at least one chunk is in host memory and fetched.
"""
import re
import sys


def main():
    report, limit = open(sys.argv[1]).read(), int(sys.argv[2])
    sizes = {int(c): (int(b), int(s)) for c, b, s in re.findall(
        r"^  chunk (\d+): (\d+) bytes, \d+ params?, optimizer state (\d+) bytes",
        report, re.M)}
    where = dict((int(c), w) for c, w in re.findall(
        r"^  (\d+) +(device|host) ", report, re.M))
    assert sizes and set(sizes) == set(where), (sizes, where)
    resident = sum(b + s for c, (b, s) in sizes.items() if where[c] == "device")
    arena = int(re.search(r"^  arena: (\d+) bytes", report, re.M).group(1))
    peak = int(re.search(r"planned device peak: (\d+) bytes", report).group(1))
    assert peak == resident + arena, (peak, resident, arena)
    # The placement pass planned the arena the memory report finds.
    assert "[the placement planned" not in report, report
    assert peak <= limit, f"planned device peak {peak} > limit {limit}"
    host = [c for c, w in where.items() if w == "host"]
    assert host, "no chunk in host memory"
    assert re.search(r"^  \d+ +host +\d+-\d+", report, re.M), "no move"
    print(f"device peak {peak} <= {limit}: resident {resident} + arena "
          f"{arena}; {len(host)} of {len(where)} chunks in host memory")


if __name__ == "__main__":
    main()
