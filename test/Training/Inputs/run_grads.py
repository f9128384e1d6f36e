#!/usr/bin/python3
"""Runs a --emit=autodiff artifact once and writes each gradient output.

  run_grads.py TESSEL_RUN AUTODIFF.mlir ARTIFACT.tsl IN_DIR OUT_DIR
The outputs named NAME.grad (tessel.output_names of the .mlir) go to
OUT_DIR/NAME.npy; IN_DIR holds input_ids.npy and labels.npy, or the
inputs are named after OUT_DIR: run_grads.py ... OUT_DIR images=X.npy ...
"""
import os
import re
import subprocess
import sys

tessel_run, mlir, art, ins, out = sys.argv[1:6]
names = re.search(r'tessel\.output_names = \[([^\]]*)\]', open(mlir).read())
names = re.findall(r'"([^"]+)"', names.group(1))
inputs = sys.argv[6:] or ["input_ids=" + os.path.join(ins, "input_ids.npy"),
                          "labels=" + os.path.join(ins, "labels.npy")]
args = [tessel_run, art]
for i in inputs:
    args += ["--input", i]
for n in names:
    if n.endswith(".grad"):
        args += ["--output", "%s=%s" % (n, os.path.join(out, n[:-5] + ".npy"))]
subprocess.run(args, check=True)
