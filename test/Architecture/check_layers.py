#!/usr/bin/env python3
"""Checks the real link graph against docs/architecture.md.

Usage: check_layers.py DOC BUILD_DIR

Runs `cmake --graphviz` on BUILD_DIR (a configured build; only the graph is
written, into a temporary directory), then for every row of the doc's
"target | may link | never" table checks that the target's direct
dependencies are all allowed and that nothing it reaches transitively
matches a "never" entry; then checks the "binary | never loads" table with
readelf -d. Names match Tessel targets exactly and external libraries by
fragment (case-insensitive). Prints every violation; exit 1 if any.
"""
import os
import re
import subprocess
import sys
import tempfile


def tables(doc):
    """The doc's markdown tables as lists of rows (lists of cells)."""
    out, cur = [], None
    for line in open(doc):
        line = line.strip()
        if line.startswith("|"):
            cells = [c.strip() for c in line.strip("|").split("|")]
            if all(re.fullmatch(r"-+", c) for c in cells):
                continue
            if cur is None:
                cur = [cells]
                out.append(cur)
            else:
                cur.append(cells)
        else:
            cur = None
    return out


def split(cell):
    return [x.strip() for x in cell.split(",") if x.strip()]


def graph(build):
    with tempfile.TemporaryDirectory() as tmp:
        dot = os.path.join(tmp, "g.dot")
        subprocess.run(["cmake", "--graphviz=" + dot, build], cwd=tmp,
                       check=True, stdout=subprocess.DEVNULL)
        text = open(dot).read()
    names = dict(re.findall(r'"(node\d+)" \[ label = "([^"]+)"', text))
    # A target with an alias is labelled "Name\n(Alias)": the name.
    names = {k: v.split("\\n")[0] for k, v in names.items()}
    edges = {}
    for a, b in re.findall(r'"(node\d+)" -> "(node\d+)"', text):
        edges.setdefault(names[a], set()).add(names[b])
    return edges


def matches(name, entry):
    if entry.startswith("Tessel") or entry.startswith("tessel"):
        return name == entry
    return entry.lower() in name.lower()


def closure(edges, start):
    seen, todo = set(), [start]
    while todo:
        for d in edges.get(todo.pop(), ()):
            if d not in seen:
                seen.add(d)
                todo.append(d)
    return seen


def main():
    doc, build = sys.argv[1], os.path.abspath(sys.argv[2])
    edges = graph(build)
    errors = []
    for t in tables(doc):
        head = [h.lower() for h in t[0]]
        if head[:3] == ["target", "may link", "never (transitively)"]:
            for row in t[1:]:
                target, allowed, never = row[0], split(row[1]), split(row[2])
                if target not in edges and not any(target in v for v in edges.values()):
                    # An optional target this build does not make (TesselCuda
                    # without a CUDA toolkit).
                    print("note: %s is not built here; its row is skipped" % target)
                    continue
                for d in sorted(edges.get(target, ())):
                    if not any(matches(d, a) for a in allowed):
                        errors.append("%s links %s, which its row does not allow"
                                      % (target, d))
                for d in sorted(closure(edges, target)):
                    for n in never:
                        if matches(d, n):
                            errors.append("%s reaches %s (never: %s)"
                                          % (target, d, n))
        elif head[:2] == ["binary", "never loads"]:
            for row in t[1:]:
                binary = os.path.join(build, "bin", row[0])
                if not os.path.exists(binary):
                    errors.append("%s: not built" % binary)
                    continue
                needed = subprocess.run(["readelf", "-d", binary],
                                        capture_output=True, text=True).stdout
                libs = re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]",
                                  needed)
                if not libs:
                    errors.append("%s: no dynamic section read" % binary)
                for lib in libs:
                    for n in split(row[1]):
                        if lib.startswith(n):
                            errors.append("%s loads %s" % (row[0], lib))
    for e in errors:
        print("error: " + e)
    print("architecture: %d violation(s)" % len(errors))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
