"""Writes a cluster file with bench/calibrate_cpu.py's writer from stated
figures (argv[1]: the output; argv[2]: "edges" or "negative"), as a
calibration would after its measurements: every key it writes, at the
edges of their ranges (zero latencies, no bf16, the smallest and largest
rates), or with a bandwidth a fit left negative, which the writer must
refuse rather than write."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "..", "bench"))
import calibrate_cpu  # noqa: E402

cfg = {
    "name": "cpu-calibrated",
    "device": {
        "name": "this machine's core",
        "peak_flops_f32": 1.5e11,
        "peak_flops_bf16": 0.0,
        "matmul_efficiency": 1.0,
        "convolution_efficiency": 1.0,
        "memory_bytes": 4.0 * 2**30,
        "memory_bandwidth": 1.25e10,
        "op_overhead": 0.0,
        "matmul_saturation_dim": 0.0,
    },
    "devices_per_node": 2,
    "nodes": 1,
    "intra_node": {"kind": "shm", "latency": 0.0, "bandwidth": 3.1e9,
                   "async_overhead": 0.0, "all_reduce_bandwidth": 5.4e9,
                   "shared_latency": 0.0},
    "inter_node": {"kind": "tcp", "latency": 5e-5, "bandwidth": 1.25e9},
}
rates = {"gelu": 7.8e8, "gelu_grad": 1.0, "adam_update": 1e21}
if sys.argv[2] == "negative":
    cfg["intra_node"]["bandwidth"] = -3.1e9
calibrate_cpu.write_cluster(sys.argv[1], cfg, rates, 2)
