#!/usr/bin/python3
"""Runs every committed crash input that a tool reads through that tool:
each must end with exit 1 and one error -- no signal, no abort, no stack
dump (docs/fuzzing.md).

  run_regressions.py CORPUS_DIR MLP_ARTIFACT WORK_DIR TESSELC TESSEL_OPT TESSEL_RUN

  tessel-onnx-import-fuzzer/crash-*  tesselc FILE --emit=mlir
  tessel-ir-fuzzer/crash-*           tessel-opt FILE
  tessel-plan-fuzzer/crash-*         tesselc mlp --mesh tp=4 --plan FILE
  tessel-npy-fuzzer/crash-*          tessel-run MLP --input x=FILE
  tessel-checkpoint-index-fuzzer/crash-*  tessel-run MLP --steps 1 --resume DIR
  tessel-safetensors-fuzzer/crash-*  tesselc linear.mlir --weights FILE
(the artifact and fuzzer-only inputs are replayed by ctest's fuzz-replay-*
tests; ctest replays the safetensors inputs through the runtime's reader).
"""
import glob
import os
import shutil
import subprocess
import sys


def main():
    corpus, mlp, work, tesselc, opt, run = sys.argv[1:]
    model = os.path.join(os.path.dirname(corpus), "..", "models", "mlp", "model.onnx")
    cases = []
    for f in glob.glob(os.path.join(corpus, "tessel-onnx-import-fuzzer", "crash-*")):
        cases.append((f, [tesselc, f, "--emit=mlir", "-o", os.devnull]))
    for f in glob.glob(os.path.join(corpus, "tessel-ir-fuzzer", "crash-*")):
        cases.append((f, [opt, f, "-o", os.devnull]))
    for f in glob.glob(os.path.join(corpus, "tessel-plan-fuzzer", "crash-*")):
        cases.append((f, [tesselc, model, "--mesh", "tp=4", "--plan", f,
                          "-o", os.path.join(work, "p.tsl")]))
    for f in glob.glob(os.path.join(corpus, "tessel-npy-fuzzer", "crash-*")):
        cases.append((f, [run, mlp, "--input", "x=" + f]))
    for f in glob.glob(os.path.join(corpus, "tessel-checkpoint-index-fuzzer", "crash-*")):
        d = os.path.join(work, "ckpt-" + os.path.basename(f))
        os.makedirs(d, exist_ok=True)
        shutil.copy(f, os.path.join(d, "model.safetensors.index.json"))
        cases.append((f, [run, mlp, "--steps", "1", "--resume", d]))
    linear = os.path.join(os.path.dirname(corpus), "..", "Training", "Inputs", "linear.mlir")
    for f in glob.glob(os.path.join(corpus, "tessel-safetensors-fuzzer", "crash-*")):
        cases.append((f, [tesselc, linear, "--weights", f,
                          "-o", os.path.join(work, "w.tsl")]))
    bad = 0
    for f, cmd in sorted(cases):
        p = subprocess.run(cmd, capture_output=True, text=True)
        lines = [l for l in p.stderr.splitlines() if l.strip()]
        errors = [l for l in lines if "error:" in l]
        # One diagnostic: tessel-opt's also quotes the source line and a caret.
        ok = (p.returncode == 1 and len(errors) == 1 and
              not any("Stack dump" in l or "PLEASE submit" in l for l in lines))
        print("%s %s: exit %d, %d error lines" %
              ("ok  " if ok else "FAIL", os.path.relpath(f, corpus), p.returncode, len(errors)))
        if not ok:
            print("  " + "\n  ".join(lines[:5]))
            bad += 1
    print("%d inputs, %d failed" % (len(cases), bad))
    return 1 if bad or not cases else 0


if __name__ == "__main__":
    sys.exit(main())
