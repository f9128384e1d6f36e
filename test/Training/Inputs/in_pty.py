#!/usr/bin/python3
"""Runs a command with its stdout on a pseudo-terminal (stderr as it is) and
prints what it wrote there, escapes shown: '\\r' as <CR>, ESC as <ESC>.

  in_pty.py CMD ARGS...
Exits with the command's status.
"""
import os
import pty
import subprocess
import sys

master, slave = pty.openpty()
proc = subprocess.Popen(sys.argv[1:], stdout=slave)
os.close(slave)
out = b""
while True:
    try:
        chunk = os.read(master, 65536)
    except OSError:  # EIO: the command closed the terminal
        break
    if not chunk:
        break
    out += chunk
rc = proc.wait()
text = out.decode("utf-8", "replace").replace("\r\n", "\n")
sys.stdout.write(text.replace("\r", "<CR>").replace("\x1b", "<ESC>"))
sys.exit(rc)
