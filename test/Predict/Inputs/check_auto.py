"""Checks tesselc --plan=auto's choice from outside: every configuration its
--explain table lists is compiled again by hand (--plugin hybrid:...) with
--predict, and the chosen one must predict the least step time of them all.

With a sixth argument, the plan file --emit=plan wrote for the same choice:
the command its "Reuse it" line gives must predict the chosen step time.

usage: check_auto.py TESSELC MODEL CLUSTER EXPLAIN.txt WORKDIR [PLAN.yaml]
"""
import re
import subprocess
import sys


def plugin_of(label):
    """'dp=2 tp=1 pp=1 zero2' -> 'hybrid:dp=2,tp=1,pp=1,zero=2'."""
    f = dict(re.findall(r"(dp|tp|pp|mb)=(\d+)", label))
    zero = re.search(r"zero(\d)", label)
    s = "hybrid:dp=%s,tp=%s,pp=%s,zero=%s" % (f["dp"], f["tp"], f["pp"],
                                              zero.group(1) if zero else "0")
    if "mb" in f:
        s += ",microbatches=" + f["mb"]
    return s, "recompute" in label


def main():
    tesselc, model, cluster, explain, work = sys.argv[1:6]
    text = open(explain).read()
    rows = re.findall(r"^\s+\d+\s+(dp=\d+ tp=\d+ pp=\d+[^\n]*?)\s{2,}[0-9.]+ ms",
                      text, re.M)
    chosen = re.search(r"^chosen: (.*?) \(--plugin", text, re.M).group(1)
    if len(rows) < 2:
        sys.exit("expected at least 2 candidates, got %r" % rows)
    times = {}
    for i, label in enumerate(rows):
        plugin, recompute = plugin_of(label)
        cmd = [tesselc, model, "--train", "--plugin", plugin, "--predict",
               "--cluster", cluster, "-o", "%s/c%d.tsl" % (work, i)]
        if recompute:
            cmd.append("--recompute")
        out = subprocess.run(cmd, capture_output=True, text=True, check=True)
        times[label] = float(re.search(r"predicted step: ([0-9.]+) ms",
                                       out.stdout).group(1))
    best = min(times.values())
    if times[chosen] > best:
        sys.exit("chosen %s predicts %.3f ms; %s predicts %.3f ms" % (
            chosen, times[chosen], min(times, key=times.get), best))
    print("auto ok: %d candidates recompiled, the chosen one is the fastest"
          % len(times))
    if len(sys.argv) > 6:
        plan = sys.argv[6]
        reuse = re.search(r"^# Reuse it: tesselc \S+ (.*) --plan THIS_FILE$",
                          open(plan).read(), re.M).group(1).split()
        out = subprocess.run([tesselc, model, *reuse, "--plan", plan,
                              "--predict", "--cluster", cluster, "-o",
                              work + "/reused.tsl"],
                             capture_output=True, text=True, check=True)
        t = float(re.search(r"predicted step: ([0-9.]+) ms",
                            out.stdout).group(1))
        if t != times[chosen]:
            sys.exit("the plan file reused predicts %.3f ms, the choice %.3f ms"
                     % (t, times[chosen]))
        print("plan ok: %s --plan %s predicts the chosen %.3f ms"
              % (" ".join(reuse), plan.split("/")[-1], t))


if __name__ == "__main__":
    main()
