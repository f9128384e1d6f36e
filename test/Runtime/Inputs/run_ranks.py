#!/usr/bin/env python3
"""Starts N ranks of a command as independent processes, torchrun style
(RANK, WORLD_SIZE, MASTER_ADDR=127.0.0.1, a free MASTER_PORT; no tessel-run
launcher watching them), and reports how each ended:

    run_ranks.py [--hold-port] [--env R:NAME=VALUE]... N LIMIT_SECONDS CMD...

prints each rank's output, then `rank R: exit CODE within LIMIT s` (or
`rank R: still running after LIMIT s`, and kills it). Exits 0.
--hold-port keeps MASTER_PORT taken (listening, never answering) while the
ranks run; --env gives rank R alone an extra variable.
"""
import os
import socket
import subprocess
import sys
import time

args = sys.argv[1:]
hold = False
extra = {}
while args and args[0].startswith("--"):
    if args[0] == "--hold-port":
        hold = True
        args = args[1:]
    elif args[0] == "--env":
        r, kv = args[1].split(":", 1)
        k, v = kv.split("=", 1)
        extra.setdefault(int(r), {})[k] = v
        args = args[2:]
    else:
        sys.exit("unknown option " + args[0])
n, limit, cmd = int(args[0]), float(args[1]), args[2:]
s = socket.socket()
s.bind(("127.0.0.1", 0))
port = s.getsockname()[1]
if hold:
    s.listen(16)
else:
    s.close()
procs = []
for r in range(n):
    env = dict(os.environ, RANK=str(r), WORLD_SIZE=str(n),
               MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    env.update(extra.get(r, {}))
    procs.append(subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, text=True))
start = time.time()
codes = [None] * n
while time.time() - start < limit and None in codes:
    for r, p in enumerate(procs):
        if codes[r] is None:
            codes[r] = p.poll()
    time.sleep(0.02)
for r, p in enumerate(procs):
    if codes[r] is None:
        p.kill()
    out = p.communicate()[0]
    sys.stdout.write(out)
for r in range(n):
    if codes[r] is None:
        print("rank %d: still running after %g s" % (r, limit))
    else:
        print("rank %d: exit %d within %g s" % (r, codes[r], limit))
