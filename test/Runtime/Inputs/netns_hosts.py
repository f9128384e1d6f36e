#!/usr/bin/env python3
"""Runs the ranks of a command on several "hosts": Linux network namespaces
joined by veth pairs to a bridge (a switch namespace), torchrun style
(RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR = host 0's
address, MASTER_PORT), with no tessel-run launcher watching them:

    netns_hosts.py [options] -- CMD...

  --hosts H            namespaces (default 2), host h at 10.200.0.(h+1)/24
  --ranks-per-host K   ranks per host (default 1): rank r runs on host r // K
  --limit SECONDS      kill what still runs after this long (default 60)
  --unplug H:HOW       take host H off the network once --after's text
                       appears in a rank's output: HOW is `down` (its link
                       set down) or `delete` (its veth and namespace deleted)
  --after TEXT         (default "step 2/")
  --delay SECONDS      instead of --after: act this long after the start
  --env R:NAME=VALUE   an extra variable for rank R only (repeatable)
  --stop R             SIGSTOP rank R once --after's text appears
  --setup-only         create the hosts, print `hosts ok`, clean up

Prints each rank's output (prefixed `[rank R] `), then `rank R: exit CODE
within LIMIT s` or `rank R: still running after LIMIT s`, and, for each rank
that ended after the unplug or stop, `rank R: ended within N s of the
unplug` (N: whole seconds, rounded up). Exits 0; 77 with a reason on stderr
when namespaces cannot be made (not root, no `ip`).

Names are unique per run (tsl<pid><random>...), and everything made is
removed on every exit path: normal, exception, SIGINT/SIGTERM/SIGHUP.
Namespaces left by a run killed with SIGKILL are swept by the next run (their
creator's pid is in their name).
"""
import argparse
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import threading
import time

PREFIX = "tsl"


def ip(*args, check=True):
    r = subprocess.run(["ip"] + list(args), stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True)
    if check and r.returncode != 0:
        raise RuntimeError("ip %s: %s" % (" ".join(args), r.stderr.strip()))
    return r


class Hosts:
    """The namespaces of one run; cleanup() removes them (idempotent)."""

    def __init__(self, n):
        self.n = n
        tag = "%d%04x" % (os.getpid(), random.randrange(1 << 16))
        self.sw = "%s%ssw" % (PREFIX, tag)
        self.hosts = ["%s%sh%d" % (PREFIX, tag, h) for h in range(n)]
        self.made = []
        self.procs = []
        # veth names: at most 15 characters, unique per run.
        self.veth = ["t%sv%d" % (tag[-8:], h) for h in range(n)]
        self.peer = ["t%sp%d" % (tag[-8:], h) for h in range(n)]

    def address(self, h):
        return "10.200.0.%d" % (h + 1)

    def create(self):
        ip("netns", "add", self.sw)
        self.made.append(self.sw)
        ip("-n", self.sw, "link", "add", "br0", "type", "bridge")
        ip("-n", self.sw, "link", "set", "br0", "up")
        for h, name in enumerate(self.hosts):
            ip("netns", "add", name)
            self.made.append(name)
            ip("-n", name, "link", "set", "lo", "up")
            ip("link", "add", self.veth[h], "netns", name, "type", "veth",
               "peer", "name", self.peer[h], "netns", self.sw)
            ip("-n", name, "link", "set", self.veth[h], "name", "eth0")
            ip("-n", name, "addr", "add", self.address(h) + "/24", "dev",
               "eth0")
            ip("-n", name, "link", "set", "eth0", "up")
            ip("-n", self.sw, "link", "set", self.peer[h], "master", "br0")
            ip("-n", self.sw, "link", "set", self.peer[h], "up")

    def unplug(self, h, how):
        if how == "down":
            ip("-n", self.hosts[h], "link", "set", "eth0", "down")
        else:
            # Its cable (both ends of the veth), then the namespace's name;
            # its processes keep running, cut off, until they give up.
            ip("-n", self.sw, "link", "del", self.peer[h], check=False)
            ip("netns", "del", self.hosts[h], check=False)

    def cleanup(self):
        for p in self.procs:
            if p.poll() is None:
                try:
                    p.kill()
                except OSError:
                    pass
        for name in reversed(self.made):
            r = ip("netns", "pids", name, check=False)
            for pid in r.stdout.split():
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except OSError:
                    pass
            ip("netns", "del", name, check=False)
        self.made = []


def sweep_stale():
    """Deletes namespaces of runs whose creator is gone (killed by SIGKILL)."""
    r = ip("netns", "list", check=False)
    for line in r.stdout.splitlines():
        name = line.split()[0] if line.split() else ""
        m = re.match(PREFIX + r"(\d+)[0-9a-f]{4}(sw|h\d+)$", name)
        if not m:
            continue
        pid = int(m.group(1))
        try:
            os.kill(pid, 0)
            continue
        except ProcessLookupError:
            pass
        except PermissionError:
            continue
        ip("netns", "del", name, check=False)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hosts", type=int, default=2)
    ap.add_argument("--ranks-per-host", type=int, default=1)
    ap.add_argument("--limit", type=float, default=60)
    ap.add_argument("--unplug")
    ap.add_argument("--stop", type=int)
    ap.add_argument("--after", default="step 2/")
    ap.add_argument("--delay", type=float)
    ap.add_argument("--env", action="append", default=[])
    ap.add_argument("--setup-only", action="store_true")
    ap.add_argument("cmd", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    cmd = a.cmd[1:] if a.cmd and a.cmd[0] == "--" else a.cmd
    if os.geteuid() != 0 or not shutil.which("ip") or \
            not shutil.which("nsenter"):
        sys.stderr.write("netns_hosts.py: needs root, iproute2's `ip` and "
                         "nsenter to "
                         "make network namespaces\n")
        return 77
    sweep_stale()
    hosts = Hosts(a.hosts)

    def on_signal(sig, frame):
        raise SystemExit(128 + sig)

    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, on_signal)
    try:
        hosts.create()
        if a.setup_only:
            print("hosts ok: %s" % " ".join(
                hosts.address(h) for h in range(a.hosts)))
            return 0
        return run(a, cmd, hosts)
    finally:
        hosts.cleanup()


def run(a, cmd, hosts):
    n = a.hosts * a.ranks_per_host
    extra = {}
    for spec in a.env:
        r, kv = spec.split(":", 1)
        k, v = kv.split("=", 1)
        extra.setdefault(int(r), {})[k] = v
    outputs = [[] for _ in range(n)]
    trigger = threading.Event()

    def reader(r, stream):
        for line in stream:
            outputs[r].append(line)
            if a.after in line:
                trigger.set()

    threads = []
    for r in range(n):
        h = r // a.ranks_per_host
        env = dict(os.environ, RANK=str(r), WORLD_SIZE=str(n),
                   LOCAL_RANK=str(r % a.ranks_per_host),
                   LOCAL_WORLD_SIZE=str(a.ranks_per_host),
                   MASTER_ADDR=hosts.address(0), MASTER_PORT="29500")
        env.update(extra.get(r, {}))
        # nsenter switches the network namespace alone (`ip netns exec`
        # also gives each process a mount namespace of its own, which would
        # hide from tessel-run that the ranks of one host share /dev/shm).
        p = subprocess.Popen(["nsenter", "--net=/var/run/netns/" +
                              hosts.hosts[h], "--"] + cmd,
                             env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True)
        hosts.procs.append(p)
        t = threading.Thread(target=reader, args=(r, p.stdout), daemon=True)
        t.start()
        threads.append(t)
    start = time.time()
    acted = None
    codes = [None] * n
    ended = [None] * n
    while time.time() - start < a.limit and None in codes:
        due = trigger.is_set() if a.delay is None else \
            time.time() - start >= a.delay
        if acted is None and (a.unplug or a.stop is not None) and due:
            if a.unplug:
                h, how = a.unplug.split(":")
                hosts.unplug(int(h), how)
            if a.stop is not None:
                os.kill(hosts.procs[a.stop].pid, signal.SIGSTOP)
                # nsenter execs the command: the pid is the rank's.
            acted = time.time()
        for r, p in enumerate(hosts.procs):
            if codes[r] is None and (a.stop != r or acted is None):
                codes[r] = p.poll()
                if codes[r] is not None:
                    ended[r] = time.time()
        time.sleep(0.02)
    for r, p in enumerate(hosts.procs):
        if codes[r] is None:
            p.kill()
    for r, p in enumerate(hosts.procs):
        p.wait()
        threads[r].join(5)
        for line in outputs[r]:
            sys.stdout.write("[rank %d] %s" % (r, line))
    for r in range(n):
        if a.stop == r and acted is not None:
            print("rank %d: stopped" % r)
        elif codes[r] is None:
            print("rank %d: still running after %g s" % (r, a.limit))
        else:
            print("rank %d: exit %d within %g s" % (r, codes[r], a.limit))
    if acted is not None:
        for r in range(n):
            if ended[r] is not None and ended[r] >= acted:
                print("rank %d: ended within %d s of the unplug" %
                      (r, int(ended[r] - acted) + 1))
    elif a.unplug or a.stop is not None:
        print("never acted: every rank ended first" if a.delay is not None
              else "never acted: no rank printed %r" % a.after)
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
