#!/usr/bin/python3
"""Checks of tessel-run --export-onnx (test/Training/export-onnx.test).

  check_export.py weights TRAINED.onnx SOURCE.onnx CKPT_DIR
      TRAINED passes onnx.checker; it has the source model's nodes but the
      Identity nodes of trained tensors, and every source initializer with
      its shape; each tensor the 1-rank checkpoint CKPT_DIR holds (a piece
      "NAME[dim D: A..B]" of one) equals the initializer bit for bit, and
      training changed it.
  check_export.py close A.onnx B.onnx RTOL
      the two models' initializers agree within RTOL x max|B| each.
  check_export.py batch BATCHES.npy ROW OUT.npy
      writes BATCHES[ROW, :, :-1] (the step's input_ids).
  check_export.py loss LOGITS.npy BATCHES.npy ROW LOSSES.npy
      the mean cross-entropy of LOGITS against BATCHES[ROW, :, 1:] equals
      LOSSES[ROW] (the training run's loss of that step) within 1e-5 rel.
"""
import os
import re
import sys

import numpy as np
import onnx
from onnx import numpy_helper

from safetensors_np import read_safetensors as safetensors

def inits(model):
    return {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}


def weights(trained_path, source_path, ckpt):
    trained, source = onnx.load(trained_path), onnx.load(source_path)
    if trained.ir_version <= onnx.IR_VERSION:
        onnx.checker.check_model(trained)
    else:
        # The source's own IR (torch 2.15's exporter writes 10) is newer
        # than this onnx's checker knows; the loss check below runs it.
        assert trained.ir_version == source.ir_version
        print("onnx.checker skipped: IR version %d, this onnx knows %d" % (
            trained.ir_version, onnx.IR_VERSION))
    got, src = inits(trained), inits(source)
    for name, value in src.items():
        assert name in got, "initializer %s is missing" % name
        assert got[name].shape == value.shape, (name, got[name].shape)
    states = safetensors(os.path.join(ckpt, "rank0.safetensors"))
    checked = changed = 0
    for state, value in states.items():
        m = re.fullmatch(r"(.*)\[dim (\d+): (\d+)\.\.(\d+)\]", state)
        name = m.group(1) if m else state
        if name not in got:
            continue
        tensor = got[name]
        if m:
            d, a, b = int(m.group(2)), int(m.group(3)), int(m.group(4))
            tensor = np.take(tensor, np.arange(a, b), axis=d)
        assert tensor.shape == value.shape, (state, tensor.shape, value.shape)
        assert np.array_equal(tensor.view(np.uint8), value.view(np.uint8)), \
            "%s differs from the checkpoint" % state
        checked += 1
        before = src.get(name)
        if before is None and any(name in n.output
                                  for n in source.graph.node):
            # A parameter PyTorch's exporter made an Identity of a shared
            # initializer: that node is gone, its output an initializer now.
            node = [n for n in source.graph.node if name in n.output]
            assert len(node) == 1 and node[0].op_type == "Identity", name
            assert all(name not in n.output for n in trained.graph.node), name
            before = src[node[0].input[0]]
        elif before is None:
            # A parameter the exporter merged into an initializer of equal
            # contents: its readers read it by its own name now, where they
            # read that initializer.
            readers = [n for n in trained.graph.node if name in n.input]
            by_name = {n.name: n for n in source.graph.node}
            merged = {by_name[r.name].input[list(r.input).index(name)]
                      for r in readers}
            assert readers and len(merged) == 1 and merged <= set(src), \
                (name, merged)
            before = src[merged.pop()]
        changed += not np.array_equal(before, got[name])
    params = [s for s in states
              if not s.startswith(("exp_avg", "momentum_buffer", "optimizer."))]
    assert checked == len(params), (checked, len(params))
    assert changed == checked, "%d of %d trained tensors unchanged" % (
        checked - changed, checked)
    kept = len(source.graph.node) - len(trained.graph.node)
    print("%d trained tensors equal the checkpoint's; %d Identity nodes "
          "became initializers" % (checked, kept))


def close(a, b, rtol):
    x, y = inits(onnx.load(a)), inits(onnx.load(b))
    assert set(x) == set(y), set(x) ^ set(y)
    worst = 0.0
    for name in y:
        scale = float(np.max(np.abs(y[name]))) or 1.0
        worst = max(worst, float(np.max(np.abs(
            x[name].astype(np.float64) - y[name]))) / scale)
    print("%d initializers agree within %.2e" % (len(y), worst))
    assert worst <= rtol, worst


def loss(logits_path, batches, row, losses):
    logits = np.load(logits_path).astype(np.float64)
    labels = np.load(batches)[row, :, 1:]
    z = logits - logits.max(-1, keepdims=True)
    lsm = z - np.log(np.exp(z).sum(-1, keepdims=True))
    ce = -np.take_along_axis(lsm, labels[..., None], -1).mean()
    want = float(np.load(losses)[row])
    rel = abs(ce - want) / abs(want)
    print("the exported model's loss %.7f, the training step's %.7f (rel "
          "%.2e)" % (ce, want, rel))
    assert rel <= 1e-5, rel


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "weights":
        weights(*args)
    elif cmd == "close":
        close(args[0], args[1], float(args[2]))
    elif cmd == "batch":
        np.save(args[2], np.load(args[0])[int(args[1]), :, :-1])
    elif cmd == "loss":
        loss(args[0], args[1], int(args[2]), args[3])
    else:
        sys.exit("unknown command " + cmd)


if __name__ == "__main__":
    main()
