"""Checks zero1-memory.test's reports, given as (ddp, zero1) pairs of
`tesselc --report` outputs of the same model, mesh and buckets: zero1's
arena against ddp's, and zero1's planned peak against the bound made of its
own report's figures (see the test)."""
import re
import sys


def read(path):
    text = open(path).read()

    def num(pattern):
        m = re.search(pattern, text, re.M)
        if not m:
            sys.exit("%s: no line matching %r" % (path, pattern))
        return int(m.group(1))

    buckets = re.search(r"^gradient buckets: (\d+) per rank.*\(bytes: ([\d ]+)\)",
                        text, re.M)
    if not buckets:
        sys.exit("%s: no gradient buckets line" % path)
    return {
        "peak": num(r"^memory report \(per rank, planned\): peak (\d+) bytes"),
        "params": num(r"^  params: (\d+) bytes"),
        "optimizer": num(r"^  optimizer state: (\d+) bytes"),
        "constants": num(r"^  constants: (\d+) bytes"),
        "arena": num(r"^  arena: (\d+) bytes"),
        "grads": num(r"^  gradients +(\d+) bytes +analytic"),
        "kept": num(r"^  activations kept for the backward \(live at its start\): (\d+) bytes"),
        "dp": num(r"N = dp = (\d+)\)"),
        "buckets": [int(b) for b in buckets.group(2).split()],
    }


args = sys.argv[1:]
for ddp_path, zero1_path in zip(args[0::2], args[1::2]):
    ddp, z = read(ddp_path), read(zero1_path)
    n = len(z["buckets"])
    label = "dp=%d, %d bucket%s" % (z["dp"], n, "" if n == 1 else "s")
    if z["buckets"] != ddp["buckets"]:
        print("%s: zero1's buckets differ from ddp's" % label)
    if z["arena"] <= ddp["arena"]:
        print("%s: zero1 arena within ddp's: ok" % label)
    else:
        print("%s: zero1 arena %d bytes, ddp's %d: %d over" %
              (label, z["arena"], ddp["arena"], z["arena"] - ddp["arena"]))
    bound = (z["params"] + z["optimizer"] + z["constants"] + z["grads"] +
             max(z["kept"], max(z["buckets"])) + z["grads"] // 100)
    if z["peak"] <= bound:
        print("%s: zero1 peak within its bound: ok" % label)
    else:
        print("%s: zero1 peak %d bytes, bound %d: %d over" %
              (label, z["peak"], bound, z["peak"] - bound))
