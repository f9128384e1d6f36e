"""Flips bytes of every file of an artifact and a checkpoint and runs a
command on each flipped copy: each must exit 1 with one tessel-run error
naming the flipped file, never 0, never a crash (a signal) or a hang.

usage: flip_files.py DIR... -- COMMAND...

For each regular file under each DIR (recursively): its first byte, its
middle byte and its last byte, one at a time (XOR 0xff, put back after).
The exhaustive flips (every byte, in process) are
test/unit/Runtime/CorruptionTest.cpp; this is the end-to-end check through
tessel-run itself, on a compiled training artifact and its checkpoint.
"""
import os
import subprocess
import sys


def files_under(d):
    out = []
    for root, _, names in os.walk(d):
        for n in names:
            out.append(os.path.join(root, n))
    return sorted(out)


def main():
    sep = sys.argv.index("--")
    dirs, command = sys.argv[1:sep], sys.argv[sep + 1:]
    bad = 0
    runs = 0
    for d in dirs:
        for path in files_under(d):
            with open(path, "rb") as f:
                pristine = f.read()
            rel = os.path.relpath(path, os.path.dirname(d.rstrip("/")))
            for at in sorted({0, len(pristine) // 2, len(pristine) - 1}):
                flipped = bytearray(pristine)
                flipped[at] ^= 0xFF
                with open(path, "r+b") as f:
                    f.seek(at)
                    f.write(flipped[at:at + 1])
                try:
                    r = subprocess.run(command, capture_output=True, text=True,
                                       timeout=120)
                    code, err = r.returncode, r.stderr
                except subprocess.TimeoutExpired:
                    code, err = "timeout", ""
                finally:
                    with open(path, "r+b") as f:
                        f.seek(at)
                        f.write(pristine[at:at + 1])
                runs += 1
                errors = [l for l in err.splitlines()
                          if l.startswith("tessel-run: error: ")]
                if code != 1 or len(errors) != 1 or rel not in errors[0]:
                    bad += 1
                    print("%s byte %d flipped: exit %s, stderr:\n%s" %
                          (rel, at, code, err))
    print("flipped copies: %d, refused as expected: %d" % (runs, runs - bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
