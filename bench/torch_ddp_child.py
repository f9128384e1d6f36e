#!/usr/bin/env python3
"""One rank of PyTorch's DistributedDataParallel (gloo, CPU) training the
GPT-2-small of bench/models on its slice of each batch: the peer of
Tessel's dp=2 row in bench/train_dp.py. Rank 0 prints the median ms of steps
2.. and saves the global losses (the mean over ranks, as Tessel's dp loss).

    torch_ddp_child.py RANK WORLD PORT MODELS GLOBAL_BATCH STEPS LOSSES.npy
"""
import os
import sys
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "models"))
from export_models import load_gpt2_small  # noqa: E402


def main():
    rank, world, port, models, batch, steps, losses_out = sys.argv[1:8]
    rank, world, batch, steps = int(rank), int(world), int(batch), int(steps)
    torch.set_num_threads(1)
    torch.set_num_interop_threads(1)
    torch.manual_seed(0)
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=port)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    model = load_gpt2_small(models)
    model.train()
    ddp = torch.nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.AdamW(ddp.parameters(), lr=1e-4, betas=(0.9, 0.999),
                            eps=1e-8, weight_decay=0.01)
    data = np.load(os.path.join(models, "gpt2_small_b%d_batches.npy" % batch))
    per = batch // world
    times, losses = [], []
    for k in range(steps):
        rows = torch.from_numpy(data[k % len(data)][rank * per:(rank + 1) * per])
        x, y = rows[:, :-1].contiguous(), rows[:, 1:].contiguous()
        dist.barrier()
        t0 = time.perf_counter()
        out = ddp(x)
        loss = F.cross_entropy(out.reshape(-1, out.shape[-1]), y.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        times.append((time.perf_counter() - t0) * 1e3)
        mean = loss.detach().clone()
        dist.all_reduce(mean)
        losses.append(mean.item() / world)
    if rank == 0:
        np.save(losses_out, np.array(losses, dtype=np.float32))
        warm = sorted(times[1:] or times)
        print("ms", warm[len(warm) // 2])
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
