#!/usr/bin/env python3
"""PyTorch eager's side of scripts/gpu-check's benchmark: the GPT-2-shaped
training step that bench/gen_gpt2_ir.py --plain writes for Tessel (pre-LN
blocks, fused QKV, attention as matmul / 8 / causal where / softmax /
matmul, GELU tanh, tied LM head, mean token cross-entropy), AdamW, on the
GPU: f32 without TF32 (Tessel's cuBLAS runs CUBLAS_DEFAULT_MATH), or with
--precision bf16 under torch.autocast(bfloat16), the peer of tesselc
--precision bf16 (GEMMs on bf16 operands, f32 master weights and
optimizer).

    gpu_gpt2_torch.py --config bench/config.json [--steps K] [--json OUT]
        [--weights ART.tsl/rank0.weights.safetensors] [--batches batches.npy]
        [--precision f32|bf16] [--profile]
        [--device cpu]   # a smoke test of a small config

--profile prints, after the timed steps, one more step's CUDA kernels
(torch.profiler), the 25 largest by total time.

With --weights and --batches it trains from the Tessel artifact's own
weights on tessel-run's batches, so the two runs' losses compare.

config.json (scripts/gpu-bundle writes it): layers, d, heads, seq, batch,
vocab, steps, lr, weight_decay, period. Weights get GPT-2's init, one draw
of `period` values repeated, as bench/gen_gpt2_weights.py gives Tessel.
Prints one JSON object: the median ms per step of steps 2..K (step 1 is the
warm-up), the first loss, the model FLOPs of one step (the formula below,
used for both sides), the device and the f32 peak it implies.
"""
import argparse
import json
import math
import subprocess
import sys
import time

import torch
import torch.nn.functional as F


def step_flops(c):
    """Model FLOPs of one training step: 3 x the forward's GEMMs (forward,
    and the backward's two GEMMs per forward GEMM); no recomputation."""
    b, t, d, L, v = c["batch"], c["seq"], c["d"], c["layers"], c["vocab"]
    tokens = b * t
    per_layer = 2 * tokens * d * (3 * d + d + 4 * d + 4 * d)  # qkv, proj, fc, proj
    per_layer += 2 * 2 * b * t * t * d  # q k^T and p v over all heads
    forward = L * per_layer + 2 * tokens * d * v  # LM head
    return 3 * forward


def sm_clock_mhz():
    """The SM's maximum clock (nvidia-smi; Hopper's 1980 MHz when it does
    not answer), and whether nvidia-smi gave it."""
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=clocks.max.sm",
                              "--format=csv,noheader,nounits", "-i", "0"],
                             capture_output=True, text=True, timeout=20)
        return float(out.stdout.strip().splitlines()[0]), True
    except Exception:  # noqa: BLE001 - any failure means "not known"
        return 1980.0, False


# Peak FLOPs per SM per clock: f32 without tensor cores, 128 FMA lanes;
# dense bf16 on Hopper's tensor cores (989 TFLOP/s at the H100 SXM's
# 1830 MHz boost).
F32_FLOPS_PER_SM_CLOCK = 256
BF16_FLOPS_PER_SM_CLOCK = 4096


class Gpt2(torch.nn.Module):
    def __init__(self, c, period, gen):
        super().__init__()
        d, L, v, t = c["d"], c["layers"], c["vocab"], c["seq"]
        self.h = c["heads"]

        block = torch.randn(period, generator=gen) * 0.02

        def normal(*shape):
            n = math.prod(shape)
            return torch.nn.Parameter(block.repeat(n // period + 1)[:n].reshape(shape))

        def zeros(*shape):
            return torch.nn.Parameter(torch.zeros(*shape))

        def ones(*shape):
            return torch.nn.Parameter(torch.ones(*shape))

        self.wte, self.wpe = normal(v, d), normal(t, d)
        self.blocks = torch.nn.ModuleList()
        for _ in range(L):
            blk = torch.nn.Module()
            blk.ln1_w, blk.ln1_b, blk.ln2_w, blk.ln2_b = ones(d), zeros(d), ones(d), zeros(d)
            blk.attn_w, blk.attn_b = normal(d, 3 * d), zeros(3 * d)
            blk.proj_w, blk.proj_b = normal(d, d), zeros(d)
            blk.fc_w, blk.fc_b = normal(d, 4 * d), zeros(4 * d)
            blk.mlp_w, blk.mlp_b = normal(4 * d, d), zeros(d)
            self.blocks.append(blk)
        self.lnf_w, self.lnf_b = ones(d), zeros(d)
        self.register_buffer("mask", torch.tril(torch.ones(t, t, dtype=torch.bool)))

    def forward(self, ids):
        b, t = ids.shape
        d = self.wte.shape[1]
        hd = d // self.h
        x = self.wte[ids] + self.wpe
        neg = torch.tensor(-3.0e38, device=ids.device)
        for blk in self.blocks:
            y = F.layer_norm(x, (d,), blk.ln1_w, blk.ln1_b)
            q, k, v = (y @ blk.attn_w + blk.attn_b).split(d, dim=2)
            q = q.view(b, t, self.h, hd).transpose(1, 2)
            k = k.view(b, t, self.h, hd).permute(0, 2, 3, 1)
            v = v.view(b, t, self.h, hd).transpose(1, 2)
            s = torch.where(self.mask, (q @ k) / 8.0, neg)
            o = (s.softmax(dim=3) @ v).transpose(1, 2).reshape(b, t, d)
            x = x + (o @ blk.proj_w + blk.proj_b)
            y = F.layer_norm(x, (d,), blk.ln2_w, blk.ln2_b)
            y = F.gelu(y @ blk.fc_w + blk.fc_b, approximate="tanh")
            x = x + (y @ blk.mlp_w + blk.mlp_b)
        x = F.layer_norm(x, (d,), self.lnf_w, self.lnf_b)
        return x @ self.wte.t()


def read_safetensors(path):
    """name -> numpy array of a .safetensors file (an artifact's weights)."""
    import numpy as np
    with open(path, "rb") as f:
        n = int.from_bytes(f.read(8), "little")
        header = json.loads(f.read(n))
    data = np.memmap(path, dtype=np.uint8, mode="r", offset=8 + n)
    kinds = {"F32": np.float32, "BOOL": np.bool_, "I64": np.int64}
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        lo, hi = info["data_offsets"]
        out[name] = data[lo:hi].view(kinds[info["dtype"]]).reshape(info["shape"])
    return out


def load_weights(model, path):
    """Tessel's names (bench/gen_gpt2_ir.py's) onto the module's parameters."""
    tensors = read_safetensors(path)
    names = {"transformer.wte.weight": model.wte, "transformer.wpe.weight": model.wpe,
             "transformer.ln_f.weight": model.lnf_w, "transformer.ln_f.bias": model.lnf_b}
    for i, blk in enumerate(model.blocks):
        p = "transformer.h.%d." % i
        for key, param in [("ln_1.weight", blk.ln1_w), ("ln_1.bias", blk.ln1_b),
                           ("ln_2.weight", blk.ln2_w), ("ln_2.bias", blk.ln2_b),
                           ("attn.c_attn.weight", blk.attn_w), ("attn.c_attn.bias", blk.attn_b),
                           ("attn.c_proj.weight", blk.proj_w), ("attn.c_proj.bias", blk.proj_b),
                           ("mlp.c_fc.weight", blk.fc_w), ("mlp.c_fc.bias", blk.fc_b),
                           ("mlp.c_proj.weight", blk.mlp_w), ("mlp.c_proj.bias", blk.mlp_b)]:
            names[p + key] = param
    with torch.no_grad():
        for name, param in names.items():
            if name not in tensors:
                raise SystemExit("gpu_gpt2_torch.py: %s has no tensor %s" % (path, name))
            t = torch.from_numpy(tensors[name].copy())
            if tuple(t.shape) != tuple(param.shape):
                raise SystemExit("gpu_gpt2_torch.py: %s is %s in %s, the model wants %s"
                                 % (name, tuple(t.shape), path, tuple(param.shape)))
            param.copy_(t)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", required=True)
    ap.add_argument("--steps", type=int, default=0)
    ap.add_argument("--json")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--weights", help="the Tessel artifact's .safetensors: the same weights")
    ap.add_argument("--batches", help="tessel-run's --data-lm .npy: the same batches")
    ap.add_argument("--precision", choices=["f32", "bf16"], default="f32")
    ap.add_argument("--profile", action="store_true")
    a = ap.parse_args()
    c = json.load(open(a.config))
    steps = a.steps or c["steps"]
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = torch.device(a.device)
    sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
    gen = torch.Generator().manual_seed(0)
    model = Gpt2(c, c.get("period", 4093), gen)
    if a.weights:
        load_weights(model, a.weights)
    model = model.to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=c["lr"], weight_decay=c["weight_decay"])
    if a.batches:
        import numpy as np
        batches = torch.from_numpy(np.load(a.batches)).to(dev)
        steps = min(steps, batches.shape[0])
    else:
        batches = torch.randint(0, c["vocab"], (steps, c["batch"], c["seq"] + 1), generator=gen).to(dev)
    bf16 = a.precision == "bf16"

    def train_step(k):
        with torch.autocast(dev.type, dtype=torch.bfloat16, enabled=bf16):
            logits = model(batches[k, :, :-1])
            loss = F.cross_entropy(logits.reshape(-1, c["vocab"]).float(),
                                   batches[k, :, 1:].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss

    times, losses = [], []
    for k in range(steps):
        sync()
        t0 = time.perf_counter()
        loss = train_step(k)
        sync()
        times.append((time.perf_counter() - t0) * 1e3)
        losses.append(loss.item())
    if a.profile:
        from torch.profiler import ProfilerActivity, profile
        acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if dev.type == "cuda" else [])
        with profile(activities=acts) as prof:
            train_step(steps - 1)
            sync()
        key = "cuda_time_total" if dev.type == "cuda" else "cpu_time_total"
        print(prof.key_averages().table(sort_by=key, row_limit=25, max_name_column_width=70),
              file=sys.stderr)
    timed = sorted(times[1:]) if steps > 1 else times
    mid = len(timed) // 2
    median = timed[mid] if len(timed) % 2 else (timed[mid - 1] + timed[mid]) / 2
    out = {
        "ms_per_step": median, "step_ms": times, "losses": losses,
        "flops_per_step": step_flops(c), "torch": torch.__version__,
        "cuda": torch.version.cuda, "device": str(dev), "precision": a.precision,
    }
    if dev.type == "cuda":
        props = torch.cuda.get_device_properties(dev)
        clock, measured = sm_clock_mhz()
        per_clock = props.multi_processor_count * clock * 1e6
        peak = per_clock * F32_FLOPS_PER_SM_CLOCK
        bf16_peak = per_clock * BF16_FLOPS_PER_SM_CLOCK
        out.update({
            "bf16_peak_flops": bf16_peak,
            "device": props.name, "sms": props.multi_processor_count,
            "sm_clock_mhz": clock, "clock_from_nvidia_smi": measured,
            "f32_peak_flops": peak,
            "max_memory_gib": torch.cuda.max_memory_allocated(dev) / 2**30,
        })
    text = json.dumps(out)
    print(text)
    if a.json:
        with open(a.json, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
