#!/usr/bin/env python3
"""Checks the include graph against docs/architecture.md's layers.

Usage: check_includes.py DOC BUILD_DIR   (ctest architecture-includes)

check_layers.py holds the link lines to the doc's "target | may link |
never" table; a header can still cross a wall that no link line shows (an
inline function, a declaration another layer defines). This checks every
`#include "..."` of every Tessel source and header:
- each .cpp belongs to the target that compiles it (BUILD_DIR's
  compile_commands.json);
- each header to the target of its directory: a directory's sources' target,
  or, for public include roots (include/tessel/X, runtime/*/include), the
  "headers" table of the doc (`include root | target`);
- a file of target T may include headers of T, and of the targets T may
  link, transitively, per the doc's table;
- inside one target, the doc's "directory | never includes" table keeps
  parts apart (the runtime's communicators from its CPU kernels).
A bare name resolves as the compiler's private include paths would: next to
the including file, then in the directories of its target's sources.
An include that resolves to no file in the tree (a generated header, a
library's) is not Tessel's wall to check. Prints every violation as
`file: includes header (A -> B, not an arrow)`; exit 1 if any.
"""
import json
import os
import re
import sys

from check_layers import split, tables

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def arrows(doc):
    """target -> the targets it may link (Tessel's only), and the header
    roots table (path prefix -> target)."""
    may, roots, walls = {}, {}, {}
    for t in tables(doc):
        head = [c.lower() for c in t[0]]
        if head[:2] == ["target", "may link"]:
            for row in t[1:]:
                may[row[0]] = {x for x in split(row[1])}
        elif head[:2] == ["include root", "target"]:
            for row in t[1:]:
                roots[row[0].strip("`").rstrip("/")] = row[1]
        elif head[:2] == ["directory", "never includes"]:
            for row in t[1:]:
                walls[row[0].rstrip("/")] = [x.rstrip("/") for x in split(row[1])]
    return may, roots, walls


def closure(may, target):
    seen, todo = set(), [target]
    while todo:
        t = todo.pop()
        if t in seen:
            continue
        seen.add(t)
        todo.extend(may.get(t, ()))
    return seen


def main():
    doc, build = sys.argv[1:3]
    src = os.path.dirname(os.path.dirname(os.path.abspath(doc)))
    may, roots, walls = arrows(doc)
    if not roots:
        sys.exit("check_includes.py: %s has no 'include root | target' table" % doc)
    # Sources -> targets, from the compile commands.
    owner = {}
    for e in json.load(open(os.path.join(build, "compile_commands.json"))):
        m = re.search(r"CMakeFiles/([^/]+)\.dir/", e.get("output", "") + " " + e["command"])
        f = os.path.realpath(os.path.join(e["directory"], e["file"]))
        if m and f.startswith(src + os.sep):
            owner.setdefault(f, m.group(1))
    dir_owner = {}
    for f, t in owner.items():
        dir_owner.setdefault(os.path.dirname(f), set()).add(t)

    def target_of(path):
        rel = os.path.relpath(path, src)
        best = None
        for root, t in roots.items():
            if (rel == root or rel.startswith(root + "/")) and \
                    (best is None or len(root) > len(best[0])):
                best = (root, t)
        if best:
            return {best[1]}
        if path in owner:
            return {owner[path]}
        return dir_owner.get(os.path.dirname(path), set())

    search = [src, os.path.join(src, "include"), os.path.join(src, "runtime", "include")]
    search += [os.path.join(src, "runtime", d, "include")
               for d in sorted(os.listdir(os.path.join(src, "runtime")))
               if os.path.isdir(os.path.join(src, "runtime", d, "include"))]

    target_dirs = {}
    for d, ts in dir_owner.items():
        for t in ts:
            target_dirs.setdefault(t, []).append(d)

    def resolve(including, name, private):
        for base in [os.path.dirname(including)] + search + private:
            p = os.path.realpath(os.path.join(base, name))
            if os.path.isfile(p) and p.startswith(src + os.sep):
                return p
        return None

    files = set(owner)
    for top in ("include", "lib", "dialects", "runtime", "tools", "python-bindings"):
        for dirpath, _, names in os.walk(os.path.join(src, top)):
            if "/fuzz" in dirpath or "/generated" in dirpath:
                continue
            files.update(os.path.realpath(os.path.join(dirpath, n))
                         for n in names if n.endswith((".h", ".cpp", ".cu")))
    bad, checked = [], 0
    for f in sorted(files):
        mine = target_of(f)
        if not mine or not any(t in may for t in mine):
            continue  # a test's, a tool's own file, or no row of the table
        allowed = set().union(*(closure(may, t) for t in mine))
        private = [d for t in sorted(mine) for d in sorted(target_dirs.get(t, ()))]
        for name in INCLUDE.findall(open(f, errors="replace").read()):
            h = resolve(f, name, private)
            if not h:
                continue
            checked += 1
            theirs = target_of(h)
            rel, hrel = os.path.relpath(f, src), os.path.relpath(h, src)
            for d, never in walls.items():
                if rel.startswith(d + "/"):
                    for n in never:
                        if hrel.startswith(n + "/"):
                            bad.append("%s: includes %s (%s never includes %s)"
                                       % (rel, name, d, n))
            if theirs and not theirs & allowed:
                bad.append("%s: includes %s (%s -> %s, not an arrow)" % (
                    os.path.relpath(f, src), name, "/".join(sorted(mine)),
                    "/".join(sorted(theirs))))
    for b in bad:
        print(b)
    print("check_includes.py: %d includes checked, %d across a wall" % (checked, len(bad)))
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
