#!/usr/bin/env python3
"""Checks the runtime's sources against docs/architecture.md's size limits.

Usage: check_sizes.py ROOT [--list]   (ctest architecture-sizes; the limits
are docs/architecture.md's "Sizes")

The runtime (runtime/, tools/tessel-run) keeps every source file at most
MAX_FILE_LINES lines and every function body at most MAX_FUNCTION_LINES
(a function's lines from its signature's `{` to its closing `}`; lambdas and
local classes count in the function that holds them). Generated files
(runtime/artifact/generated) are not hand-written and not checked.

Functions are found by scanning tokens with comments, strings and
preprocessor lines removed: a `{` opens a function body when the text since
the previous `;`, `{` or `}` of its scope ends in `)` (optionally followed by
const, noexcept, override, final, a trailing return type or a member
initialiser list) and is not a control statement (if, for, while, switch,
catch, do), an initialiser (`= {`) or a lambda inside another function.
Prints each violation as `file:line: function NAME is N lines (limit L)`;
`--list` prints the longest functions and files as well. Exit 1 if any.
"""
import os
import re
import sys

MAX_FILE_LINES = 900
MAX_FUNCTION_LINES = 150
SUFFIXES = (".cpp", ".cu", ".h", ".cuh", ".inc")
DIRS = ("runtime", "tools/tessel-run")
SKIP = ("runtime/artifact/generated",)
CONTROL = {"if", "for", "while", "switch", "catch", "do", "else", "try"}
SCOPE_WORDS = re.compile(
    r"\b(namespace|class|struct|union|enum|extern\s*\"C\")\b[^;{}()]*$")


def strip(text):
    """Blanks comments, string and character literals and preprocessor
    lines, keeping every newline so line numbers hold."""
    out, i, n = [], 0, len(text)
    line_start = True
    while i < n:
        c = text[i]
        if line_start and c in " \t":
            out.append(c)
            i += 1
            continue
        if line_start and c == "#":
            # A preprocessor line, with its continuations.
            while i < n and text[i] != "\n":
                if text[i] == "\\" and i + 1 < n and text[i + 1] == "\n":
                    out.append(" \n")
                    i += 2
                    continue
                out.append(" ")
                i += 1
            continue
        line_start = c == "\n"
        if text.startswith("//", i):
            while i < n and text[i] != "\n":
                out.append(" ")
                i += 1
            continue
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
            continue
        m = re.match(r'R"([^(\s]*)\(', text[i:i + 20])
        if m and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            end = text.find(")" + m.group(1) + '"', i)
            j = n if end < 0 else end + len(m.group(1)) + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
            continue
        if c in "\"'":
            if c == "'" and i > 0 and text[i - 1].isalnum():
                out.append(" ")  # a digit separator: 1'000
                i += 1
                continue
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(re.sub(r"[^\n]", " ", text[i:j + 1]))
            i = j + 1
            continue
        out.append(c)
        i += 1
    return "".join(out)


def head_is_function(head):
    """Whether the text before a `{` is a function's signature."""
    h = " ".join(head.split())
    if not h or h.endswith("=") or h.endswith("return") or h.endswith(","):
        return None
    if SCOPE_WORDS.search(h) and ")" not in h:
        return "scope"
    first = re.match(r"[A-Za-z_]+", h)
    if first and first.group(0) in CONTROL:
        return None
    # A member initialiser list: `Foo(int a) : a_(a), b_{b}`.
    h = re.sub(r"\)\s*:\s*[\w:<>,\s]+[({].*$", ")", h)
    h = re.sub(r"(\s*(const|noexcept|override|final|volatile|&|&&|mutable))*$",
               "", h)
    h = re.sub(r"\s*->\s*[\w:<>,\s*&]+$", "", h)
    if h.endswith(")"):
        name = re.search(r"([~\w:]+(?:operator\s*\S+)?)\s*\((?:[^()]|\([^()]*\))*\)$", h)
        if name and name.group(1) not in CONTROL and name.group(1) != "]":
            return name.group(1)
        return "lambda" if re.search(r"\]\s*\(", h) else None
    return None


def functions(text):
    """(name, first line, line count) of each outermost function body."""
    s = strip(text)
    found = []
    depth = 0            # open braces
    function_depth = None  # the depth a function body opened at
    head_start = 0
    line = 1
    for i, c in enumerate(s):
        if c == "\n":
            line += 1
        elif c == "{":
            if function_depth is None:
                name = head_is_function(s[head_start:i])
                if name and name not in ("scope", "lambda"):
                    function_depth, open_line, open_name = depth, line, name
            depth += 1
            head_start = i + 1
        elif c == "}":
            depth = max(depth - 1, 0)
            if function_depth is not None and depth == function_depth:
                found.append((open_name, open_line, line - open_line + 1))
                function_depth = None
            head_start = i + 1
        elif c == ";":
            head_start = i + 1
    return found


def main():
    root = sys.argv[1]
    listing = "--list" in sys.argv
    bad, files, funcs = [], [], []
    for d in DIRS:
        for dirpath, _, names in os.walk(os.path.join(root, d)):
            rel_dir = os.path.relpath(dirpath, root)
            if any(rel_dir.startswith(x) for x in SKIP):
                continue
            for name in sorted(names):
                if not name.endswith(SUFFIXES):
                    continue
                path = os.path.join(dirpath, name)
                rel = os.path.relpath(path, root)
                with open(path, encoding="utf-8", errors="replace") as f:
                    text = f.read()
                lines = text.count("\n")
                files.append((lines, rel))
                if lines > MAX_FILE_LINES:
                    bad.append(f"{rel}:1: file is {lines} lines "
                               f"(limit {MAX_FILE_LINES})")
                for fname, first, count in functions(text):
                    funcs.append((count, f"{rel}:{first}", fname))
                    if count > MAX_FUNCTION_LINES:
                        bad.append(f"{rel}:{first}: function {fname} is "
                                   f"{count} lines (limit {MAX_FUNCTION_LINES})")
    if listing:
        for count, where, fname in sorted(funcs, reverse=True)[:25]:
            print(f"{count:5d} {where} {fname}")
        for lines, rel in sorted(files, reverse=True)[:10]:
            print(f"{lines:5d} {rel}")
    for b in bad:
        print(b)
    print(f"check_sizes: {len(files)} files, {len(funcs)} functions, "
          f"{len(bad)} over the limits")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
