#!/usr/bin/python3
"""Checks Tessel's training runs against PyTorch's reference (train/).

  check_training.py losses REF_DIR LOSSES.npy [--key trajectory_full] [--rtol 1e-4]
                    [--envelope K]
      first loss within 1e-5 relative (of train.json's first_loss for
      trajectory_full, else of the trajectory's first), every step within
      rtol relative; --envelope K: within K x train.json's
      f32_chaos.envelope instead (how far f32-level perturbations take the
      trajectory from its f64 run, key trajectory_full_f64:
      resnet_train/train/f64_reference.py).
  check_training.py same A.npy B.npy [--rtol 1e-5]
      two runs' losses agree (a sharded run and the 1-rank run).
  check_training.py differ A.npy B.npy
      not bitwise equal (a kernel choice that changes rounding really ran).
  check_training.py same-grads A.safetensors B.safetensors [--rtol 1e-5]
      two gradient files (tessel-run --grads) agree per parameter within
      rtol x its largest |gradient|, and are not bitwise equal (different
      kernels ran).
  check_training.py bitwise A.npy B.npy
      two runs' losses are the same f32 values bit for bit (a pipelined
      run and the one-rank run with the same microbatches).
  check_training.py lm-batch REF_DIR OUT_DIR
      writes batch 0 of REF_DIR/batches.npy as OUT_DIR/input_ids.npy and
      OUT_DIR/labels.npy ([:, :-1] and [:, 1:]).
  check_training.py lm-padded REF_DIR OUT_DIR
      for a causal model exported at seq+1 positions while PyTorch trained
      on seq (gpt2_tiny): writes OUT_DIR/ids.npy and OUT_DIR/labels.npy, all
      steps, [:, :, :-1] and [:, :, 1:] with one more position (token 0,
      label -100: ignored, and seen by no earlier position), and batch 0 of
      each as OUT_DIR/batch0/input_ids.npy and OUT_DIR/batch0/labels.npy.
  check_training.py grads REF_DIR GRAD_DIR|GRADS.safetensors
      GRAD_DIR/NAME.npy or the tensor NAME of GRADS.safetensors (tessel-run
      --grads) (Tessel's gradient of parameter NAME) against
      PyTorch's grads.npz: within 1e-4 x max|grad| per parameter; an ONNX
      initializer named onnx::MatMul_N is nn.Linear's transposed weight
      (lm_head.weight), matched by shape. --norm R: instead, per parameter
      |g - ref| / |ref| (L2 norms) within R, where a ReLU whose input is
      within rounding of 0 may flip between kernels and move single
      elements further (f64_reference.py).
  check_training.py stats REF.npz CHECKPOINT_DIR [--atol 1e-4]
      every array of REF.npz (PyTorch's BatchNorm running statistics after
      training) against the state of that name in the one-rank checkpoint
      CHECKPOINT_DIR/rank0.safetensors (rank 0 of a sharded run), or the
      initializer of that name when the second argument is an .onnx model
      (tessel-run --export-onnx): within atol x (1 + |ref|).
  check_training.py with-initializers MODEL.onnx VALUES.npz OUT.onnx
      MODEL.onnx with the initializers VALUES.npz names replaced by its
      arrays (same shapes and dtypes).
  check_training.py batch REF_DIR OUT_DIR
      writes step 0 of REF_DIR/images.npy and labels.npy as
      OUT_DIR/images.npy and OUT_DIR/labels.npy.
"""
import json
import os
import sys

import numpy as np
from safetensors_np import read_safetensors


def losses(ref_dir, path, key, rtol=1e-4, envelope=0.0):
    ref = json.load(open(os.path.join(ref_dir, "train.json")))
    if envelope:
        rtol = envelope * ref["f32_chaos"]["envelope"]
    trajectories = sorted(k for k in ref if k.startswith("trajectory"))
    assert key in ref, "train.json has no '%s' (it has %s)" % (
        key, ", ".join(trajectories))
    want = np.array(ref[key], dtype=np.float64)
    got = np.load(path).astype(np.float64)
    assert got.shape == want.shape, (got.shape, want.shape)
    # first_loss is the full batch's; microbatches normalised with their
    # own BatchNorm statistics start from the trajectory's own first loss.
    first_ref = ref["first_loss"] if key == "trajectory_full" else want[0]
    first = abs(got[0] - first_ref) / abs(first_ref)
    worst = np.max(np.abs(got - want) / np.abs(want))
    print("%s: first loss %.7f (PyTorch %.7f, rel %.2e); worst step rel %.2e"
          % (key, got[0], first_ref, first, worst))
    assert first <= 1e-5, "first loss off by %.2e" % first
    assert worst <= rtol, "trajectory off by %.2e" % worst


def same(a, b, rtol):
    x, y = np.load(a).astype(np.float64), np.load(b).astype(np.float64)
    worst = np.max(np.abs(x - y) / np.abs(x))
    print("runs agree within %.2e" % worst)
    assert x.shape == y.shape and worst <= rtol, worst


def differ(a, b):
    """Two runs that must not be bitwise equal (a kernel choice that changes
    rounding really ran)."""
    x, y = np.load(a), np.load(b)
    assert x.shape == y.shape, (x.shape, y.shape)
    n = int(np.count_nonzero(x.view(np.uint32) != y.view(np.uint32)))
    assert n > 0, "the two runs are bitwise equal"
    print("runs differ in %d of %d losses" % (n, x.size))


def same_grads(a, b, rtol):
    """Two gradient files (tessel-run --grads) of the same parameters:
    each within rtol x its largest |gradient|, and not all bitwise equal
    (the two runs took different kernels)."""
    x, y = read_safetensors(a), read_safetensors(b)
    assert sorted(x) == sorted(y), (sorted(x), sorted(y))
    worst, differ = 0.0, 0
    for k in x:
        assert x[k].shape == y[k].shape, (k, x[k].shape, y[k].shape)
        top = max(float(np.max(np.abs(x[k]))), 1e-30)
        err = float(np.max(np.abs(x[k].astype(np.float64) - y[k]))) / top
        assert err <= rtol, "%s: %.3e of its largest |gradient|" % (k, err)
        worst = max(worst, err)
        differ += int(np.count_nonzero(x[k].view(np.uint32) != y[k].view(np.uint32)))
    assert differ > 0, "the two gradient files are bitwise equal"
    print("%d gradients agree within %.2e (%d elements differ)" % (len(x), worst, differ))


def bitwise(a, b):
    x, y = np.load(a), np.load(b)
    assert x.dtype == np.float32 and y.dtype == np.float32, (x.dtype, y.dtype)
    assert x.shape == y.shape, (x.shape, y.shape)
    differ = np.nonzero(x.view(np.uint32) != y.view(np.uint32))[0]
    assert differ.size == 0, "step %d: %r vs %r" % (
        differ[0] + 1, float(x[differ[0]]), float(y[differ[0]]))
    print("bitwise equal: %d losses" % x.size)


def lm_batch(ref_dir, out):
    b = np.load(os.path.join(ref_dir, "batches.npy"))
    np.save(os.path.join(out, "input_ids.npy"), b[0, :, :-1])
    np.save(os.path.join(out, "labels.npy"), b[0, :, 1:])


def lm_padded(ref_dir, out):
    b = np.load(os.path.join(ref_dir, "batches.npy"))
    steps, batch = b.shape[0], b.shape[1]
    ids = np.concatenate([b[:, :, :-1], np.zeros((steps, batch, 1), b.dtype)],
                         axis=2)
    labels = np.concatenate(
        [b[:, :, 1:], np.full((steps, batch, 1), -100, b.dtype)], axis=2)
    np.save(os.path.join(out, "ids.npy"), ids)
    np.save(os.path.join(out, "labels.npy"), labels)
    os.makedirs(os.path.join(out, "batch0"), exist_ok=True)
    np.save(os.path.join(out, "batch0", "input_ids.npy"), ids[0])
    np.save(os.path.join(out, "batch0", "labels.npy"), labels[0])


def grads(ref_dir, grad_dir, norm=0.0):
    ref = np.load(os.path.join(ref_dir, "grads.npz"))
    if grad_dir.endswith(".safetensors"):
        got = read_safetensors(grad_dir)
    else:
        got = {f[:-len(".npy")]: np.load(os.path.join(grad_dir, f))
               for f in os.listdir(grad_dir) if f.endswith(".npy")}
    unmatched = set(got)
    worst = 0.0
    for name in ref.files:
        want = ref[name]
        g = got.get(name)
        if g is None:
            # A transposed nn.Linear weight, renamed by the exporter.
            cands = [k for k in unmatched if k.startswith("onnx::")
                     and got[k].shape == want.T.shape]
            assert len(cands) == 1, "no gradient for %s" % name
            g = got[cands[0]].T
            unmatched.discard(cands[0])
        else:
            unmatched.discard(name)
        assert g.shape == want.shape, (name, g.shape, want.shape)
        if norm:
            diff = np.linalg.norm(g.astype(np.float64) - want)
            scale = float(np.linalg.norm(want.astype(np.float64)))
        else:
            diff = np.max(np.abs(g - want))
            scale = float(np.max(np.abs(want)))
        err = float(diff) / scale if scale else 0.0
        worst = max(worst, err)
        assert err <= (norm or 1e-4), "%s: off by %.2e of %s" % (
            name, err, "|grad|" if norm else "max|grad|")
    assert not unmatched, "gradients PyTorch has none for: %s" % sorted(unmatched)
    print("%d gradients within %.2e x %s" % (len(ref.files), worst,
                                             "|grad|" if norm else "max|grad|"))


def stats(ref_path, ckpt, atol):
    ref = np.load(ref_path)
    if ckpt.endswith(".onnx"):
        import onnx
        from onnx import numpy_helper
        got = {t.name: numpy_helper.to_array(t)
               for t in onnx.load(ckpt).graph.initializer}
    else:
        got = read_safetensors(os.path.join(ckpt, "rank0.safetensors"))
    worst = 0.0
    for name in ref.files:
        assert name in got, "%s has no tensor '%s'" % (ckpt, name)
        want, g = ref[name].astype(np.float64), got[name].astype(np.float64)
        assert g.shape == want.shape, (name, g.shape, want.shape)
        err = float(np.max(np.abs(g - want) / (1.0 + np.abs(want))))
        worst = max(worst, err)
        assert err <= atol, "%s: off by %.2e" % (name, err)
    print("%d running statistics within %.2e" % (len(ref.files), worst))


def with_initializers(model_path, values_path, out):
    import onnx
    from onnx import numpy_helper
    model = onnx.load(model_path)
    values = np.load(values_path)
    todo = set(values.files)
    for t in model.graph.initializer:
        if t.name in todo:
            old = numpy_helper.to_array(t)
            new = values[t.name]
            assert new.shape == old.shape and new.dtype == old.dtype, t.name
            t.CopyFrom(numpy_helper.from_array(new, t.name))
            todo.discard(t.name)
    assert not todo, "no initializers %s" % sorted(todo)
    onnx.save(model, out)


def batch(ref_dir, out):
    np.save(os.path.join(out, "images.npy"),
            np.load(os.path.join(ref_dir, "images.npy"))[0])
    np.save(os.path.join(out, "labels.npy"),
            np.load(os.path.join(ref_dir, "labels.npy"))[0])


def options(argv, defaults):
    """Splits argv into positionals and --name VALUE / --name=VALUE options
    (only those in `defaults`)."""
    pos, opts = [], dict(defaults)
    i = 0
    while i < len(argv):
        a = argv[i]
        if a.startswith("--"):
            name, eq, value = a[2:].partition("=")
            if name not in defaults:
                sys.exit("unknown option --%s (%s)" % (
                    name, ", ".join("--" + d for d in defaults) or "none"))
            if not eq:
                if i + 1 >= len(argv):
                    sys.exit("--%s needs a value" % name)
                i += 1
                value = argv[i]
            opts[name] = type(defaults[name])(value)
        else:
            pos.append(a)
        i += 1
    return pos, opts


def main():
    cmd = sys.argv[1]
    if cmd == "losses":
        pos, opts = options(sys.argv[2:], {"key": "trajectory_full", "rtol": 1e-4,
                                           "envelope": 0.0})
        assert len(pos) == 2, "usage: losses REF_DIR LOSSES.npy [--key K] [--rtol R] [--envelope K]"
        losses(pos[0], pos[1], opts["key"], opts["rtol"], opts["envelope"])
    elif cmd == "same":
        pos, opts = options(sys.argv[2:], {"rtol": 1e-5})
        assert len(pos) == 2, "usage: same A.npy B.npy [--rtol R]"
        same(pos[0], pos[1], opts["rtol"])
    elif cmd == "differ":
        assert len(sys.argv) == 4, "usage: differ A.npy B.npy"
        differ(sys.argv[2], sys.argv[3])
    elif cmd == "same-grads":
        pos, opts = options(sys.argv[2:], {"rtol": 1e-5})
        assert len(pos) == 2, "usage: same-grads A.safetensors B.safetensors [--rtol R]"
        same_grads(pos[0], pos[1], opts["rtol"])
    elif cmd == "bitwise":
        assert len(sys.argv) == 4, "usage: bitwise A.npy B.npy"
        bitwise(sys.argv[2], sys.argv[3])
    elif cmd == "lm-batch":
        lm_batch(sys.argv[2], sys.argv[3])
    elif cmd == "lm-padded":
        lm_padded(sys.argv[2], sys.argv[3])
    elif cmd == "grads":
        pos, opts = options(sys.argv[2:], {"norm": 0.0})
        assert len(pos) == 2, "usage: grads REF_DIR GRAD_DIR [--norm R]"
        grads(pos[0], pos[1], opts["norm"])
    elif cmd == "stats":
        pos, opts = options(sys.argv[2:], {"atol": 1e-4})
        assert len(pos) == 2, "usage: stats REF.npz CHECKPOINT_DIR|MODEL.onnx [--atol A]"
        stats(pos[0], pos[1], opts["atol"])
    elif cmd == "with-initializers":
        with_initializers(sys.argv[2], sys.argv[3], sys.argv[4])
    elif cmd == "batch":
        batch(sys.argv[2], sys.argv[3])
    else:
        sys.exit("unknown command " + cmd)


if __name__ == "__main__":
    main()
