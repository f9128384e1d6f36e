"""Per-call overhead of Artifact.run() against tessel-run --repeat.

A tiny model (Relu of an f32 [1, 16]) compiled once; tessel-run --repeat K
runs the executor K times in one process (per run: the wall time of
--repeat 1+K less that of --repeat 1, over K; input binding excluded);
Python times K calls of art.run({"x": x}) (binding the input, running,
wrapping the output as NumPy), median of R batches. The overhead is the
difference per call.

    python_overhead.py TESSEL_RUN [K]
"""
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
from onnx import TensorProto, helper

import tessel


def main():
    tessel_run = sys.argv[1]
    k = int(sys.argv[2]) if len(sys.argv) > 2 else 20000
    x_info = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16])
    y_info = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16])
    model = helper.make_model(
        helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "tiny",
                          [x_info], [y_info]),
        opset_imports=[helper.make_opsetid("", 17)])
    with tempfile.TemporaryDirectory() as tmp:
        onnx.save(model, os.path.join(tmp, "tiny.onnx"))
        art = tessel.compile(os.path.join(tmp, "tiny.onnx"))
        x = np.random.default_rng(0).standard_normal((1, 16), np.float32)
        np.save(os.path.join(tmp, "x.npy"), x)
        art.save(os.path.join(tmp, "tiny.tsl"))
        # tessel-run prints its median in ms with 3 decimals (0.000 for
        # this model): time two processes, --repeat 1 and --repeat 1+k, and
        # take the difference per run (start-up, loading and the output cancel).
        def wall(repeat):
            t0 = time.perf_counter()
            subprocess.run(
                [tessel_run, os.path.join(tmp, "tiny.tsl"), "--input",
                 "x=" + os.path.join(tmp, "x.npy"), "--repeat", str(repeat)],
                capture_output=True, text=True, check=True)
            return time.perf_counter() - t0
        diffs = [(wall(1 + k) - wall(1)) / k * 1e6 for _ in range(3)]
        cli_us = statistics.median(diffs)

        inputs = {"x": x}
        for _ in range(1000):
            art.run(inputs)
        batches = []
        per_batch = max(1, k // 10)
        for _ in range(10):
            t0 = time.perf_counter()
            for _ in range(per_batch):
                art.run(inputs)
            batches.append((time.perf_counter() - t0) / per_batch * 1e6)
        py_us = statistics.median(batches)
    print(f"tiny model (Relu, f32 [1, 16]), 1 thread:")
    print(f"  tessel-run --repeat {k}: {cli_us:8.2f} us per run "
          f"(wall(--repeat 1+K) - wall(--repeat 1), / K; median of 3)")
    print(f"  art.run() from Python:   {py_us:8.2f} us per call "
          f"(median of 10 x {per_batch} calls; bind + run + NumPy outputs)")
    overhead = py_us - cli_us
    print(f"  overhead per call:       {overhead:8.2f} us "
          f"(goal <= 50 us: {'ok' if overhead <= 50 else 'MISSED'})")


if __name__ == "__main__":
    main()
