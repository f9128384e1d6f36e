"""Writes torch-bench-P.json as bench/gpu_gpt2_torch.py writes it on a GPU,
for gpu-bench-report.test: PyTorch's losses from the model's reference
(train.json's trajectory, PyTorch 1.13 on the same weights and batches),
scaled by `scale`; a step of 100 ms; 2e12 FLOPs per step; peaks of 40e12
(f32) and 400e12 (bf16) FLOP/s; an H200's name.

    torch_bench_json.py TRAIN.json OUT.json PRECISION [SCALE]
"""
import json
import sys

train, out, precision = sys.argv[1:4]
scale = float(sys.argv[4]) if len(sys.argv) > 4 else 1.0
ref = json.load(open(train))["trajectory_full"]
json.dump({
    "ms_per_step": 100.0, "losses": [x * scale for x in ref], "flops_per_step": 2e12,
    "torch": "2.x", "cuda": "13.0", "device": "NVIDIA H200", "precision": precision,
    "sms": 132, "sm_clock_mhz": 1980.0, "clock_from_nvidia_smi": True,
    "f32_peak_flops": 40e12, "bf16_peak_flops": 400e12, "max_memory_gib": 1.5,
}, open(out, "w"))
