"""Checks bench/launch_spread.py's arithmetic from its own printed launches:
the groups' lowest figures, their highest / lowest, and the verdict (a
prediction within TOL % of every group's figure exists iff highest / lowest
<= (1 + TOL) / (1 - TOL)). usage: check_spread.py OUT GROUP TOL"""
import re
import sys

text = open(sys.argv[1]).read()
group, tol = int(sys.argv[2]), float(sys.argv[3]) / 100.0
ms = [float(x) for x in
      re.search(r"^launches \(ms per step, in order\): (.*)$", text,
                re.M).group(1).split()]
groups = [min(ms[i:i + group]) for i in range(0, len(ms) - group + 1, group)]
printed = [float(x) for x in
           re.search(r"groups in turn: ([0-9. ]+) ms", text).group(1).split()]
assert printed == [round(g, 3) for g in groups], (printed, groups)
ratio = max(groups) / min(groups)
exists = ratio <= (1 + tol) / (1 - tol)
said = "a prediction within" in text
said_not = "no prediction is within" in text
assert said != said_not, text
assert said == exists, (ratio, text)
if exists:
    lo, hi = [float(x) for x in
              re.search(r"any in \[([0-9.]+), ([0-9.]+)\]", text).groups()]
    # Every point of the band is within tol of every group's figure.
    for p in (lo, hi):
        for g in groups:
            assert abs(p - g) <= tol * g + 1e-3, (p, g)
print("spread ok: %d launches, %d groups, highest / lowest %.2f, %s" % (
    len(ms), len(groups), ratio, "a band" if exists else "no band"))
