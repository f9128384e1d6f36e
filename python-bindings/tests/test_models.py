"""Every model of test/models compiled and run from Python equals the
command line's output (tesselc + tessel-run) bit for bit."""

import json

import numpy as np
import pytest

import tessel
from conftest import MODELS, assert_close, run_cli


def model_inputs(model_dir):
    """The model's inputs: its input_NAME.npy files, or (none checked in)
    token ids drawn with a fixed seed for the shapes of meta.json."""
    files = sorted(model_dir.glob("input_*.npy"))
    if files:
        return {f.stem[len("input_"):]: np.load(f) for f in files}
    meta = json.loads((model_dir / "meta.json").read_text())
    rng = np.random.default_rng(0)
    return {name: rng.integers(0, 256, size=shape, dtype=np.int64)
            for name, shape in meta["inputs"].items()}


@pytest.mark.parametrize("model", sorted(p.name for p in MODELS.iterdir()
                                          if (p / "model.onnx").exists()))
def test_model_equals_cli(model, tmp_path, tesselc, tessel_run):
    model_dir = MODELS / model
    inputs = model_inputs(model_dir)
    art = tessel.compile(model_dir / "model.onnx")
    assert set(art.inputs) == set(inputs)
    out = art.run(inputs)

    run_cli(tesselc, model_dir / "model.onnx", "-o", tmp_path / "cli.tsl")
    cmd = [tessel_run, tmp_path / "cli.tsl"]
    for name, value in inputs.items():
        np.save(tmp_path / f"{name}.npy", value)
        cmd.append(f"--input={name}={tmp_path / (name + '.npy')}")
    for name in art.outputs:
        cmd.append(f"--output={name}={tmp_path / ('out_' + name + '.npy')}")
    run_cli(*cmd)

    assert set(out) == set(art.outputs)
    for name, value in out.items():
        ref = np.load(tmp_path / f"out_{name}.npy")
        assert value.dtype == ref.dtype and value.shape == ref.shape
        assert value.tobytes() == ref.tobytes(), f"{model}: output {name}"
    # And the model's checked-in reference (PyTorch), where there is one.
    if (model_dir / "output.npy").exists():
        first = out[next(iter(art.outputs))]
        ref = np.load(model_dir / "output.npy")
        assert_close(first, ref, 1e-4)


@pytest.mark.parametrize("model", ["encoder_f64_ts", "llama_f64"])
def test_f64_model_in_and_out(model):
    """An f64 model takes and gives float64 arrays, computed in f64: the
    encoder within 1e-12 of PyTorch's f64 output (the Llama 1e-6: its
    RMSNorm computes in f32, in PyTorch as in the export)."""
    model_dir = MODELS / "half" / model
    art = tessel.compile(model_dir / "model.onnx")
    out = art.run({"input_ids": np.load(model_dir / "input_ids.npy")})
    logits = out[next(iter(art.outputs))]
    ref = np.load(model_dir / "output.npy")
    assert logits.dtype == np.float64 and logits.shape == ref.shape
    bound = (1e-6 if model == "llama_f64" else 1e-12) * np.abs(ref).max()
    assert np.abs(logits - ref).max() <= bound
