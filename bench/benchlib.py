"""What the bench/compare_*.py scripts share: the flags that name Tessel's
tools and the models, running a command for its log and peak RSS, and the
line of a failed run's log that an n/a row quotes."""
import os
import re
import subprocess


def add_tool_args(ap, models=True, threads=True):
    """--tesselc and --tessel-run (Tessel's binaries), --models (the
    directory of the models; where `models`) and --threads (the thread
    counts to run at, comma-separated; where `threads`)."""
    ap.add_argument("--tesselc", required=True)
    ap.add_argument("--tessel-run", required=True)
    if models:
        ap.add_argument("--models", required=True)
    if threads:
        ap.add_argument("--threads", default="1,2")


def run_measured(cmd, env):
    """Runs cmd: (returncode, stdout + stderr, peak RSS in KB of the largest
    process: the one started, or one of its children)."""
    wrapped = ["/usr/bin/time", "-f", "__RSS_KB__ %M"] + cmd
    p = subprocess.run(wrapped, capture_output=True, text=True, env=env)
    m = re.search(r"__RSS_KB__ (\d+)", p.stderr)
    return p.returncode, p.stdout + p.stderr, int(m.group(1)) if m else 0


def first_error(text):
    """The first line that says what went wrong, for an n/a row."""
    for line in text.splitlines():
        if "error" in line.lower():
            return line.strip()
    lines = [l for l in text.splitlines() if l.strip()]
    return lines[-1].strip() if lines else "failed"


def run_ahead_of_background_work():
    """Raises this process's priority above niced background work (a build,
    a fuzzer) where allowed: what it times should not wait for them. Its
    children (the ranks) inherit it."""
    try:
        os.nice(-10)
    except OSError:
        pass
