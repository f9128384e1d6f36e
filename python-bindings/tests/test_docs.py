"""docs/python.md's Python blocks run, in order, from the repository's root,
and print what the comments under (or beside) their print() calls say."""

import contextlib
import io
import os
import re

from conftest import ROOT

DOC = ROOT / "docs" / "python.md"


def blocks():
    return re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S)


def expected_lines(code):
    """The text a print() line's comment promises: '# text' on the next
    line, or '  # text' beside it."""
    lines = code.splitlines()
    out = []
    for i, line in enumerate(lines):
        if "print(" not in line:
            continue
        beside = re.search(r"\)\s+# (.*)$", line)
        if beside:
            out.append(beside.group(1))
        elif i + 1 < len(lines) and lines[i + 1].startswith("# "):
            out.append(lines[i + 1][2:])
    return out


def test_walkthrough_runs(tmp_path, monkeypatch):
    found = blocks()
    assert len(found) >= 5
    monkeypatch.chdir(ROOT)
    scope = {}
    for code in found:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(code, str(DOC), "exec"), scope)
        for want in expected_lines(code):
            assert want in out.getvalue(), (want, out.getvalue())
