"""Training from Python: step() gives tessel-run --steps's losses bit for
bit (and PyTorch's trajectory within 1e-4), a checkpoint resumes the same
training, export_onnx and save_weights write what tessel-run --export-onnx
and --save-weights write."""

import json

import numpy as np
import pytest

import tessel
from conftest import MODELS, run_cli

GPT2 = MODELS / "gpt2_tiny"
ADAMW = dict(loss="cross_entropy", optimizer="adamw", lr=1e-3,
             betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01)
CLI_FLAGS = ["--train", "--optimizer", "adamw", "--lr", "1e-3", "--betas",
             "0.9,0.999", "--eps", "1e-8", "--weight-decay", "0.01"]


@pytest.fixture(scope="module")
def batches():
    """PyTorch's batches; the model is exported at seq 32 and PyTorch
    trained on 31 tokens: pad ids with 0 and labels with -100 (ignored),
    as test/Training/gpt2-tiny.test does."""
    b = np.load(GPT2 / "train" / "batches.npy")
    steps, batch = b.shape[:2]
    ids = np.concatenate([b[:, :, :-1], np.zeros((steps, batch, 1), b.dtype)], 2)
    labels = np.concatenate(
        [b[:, :, 1:], np.full((steps, batch, 1), -100, b.dtype)], 2)
    return ids, labels


def steps(art, batches, start, stop):
    ids, labels = batches
    return [art.step({"input_ids": ids[k], "labels": labels[k]})
            for k in range(start, stop)]


def train_cli(tesselc, tessel_run, batches, tmp_path, n, *out):
    """tesselc --train (CLI_FLAGS), then tessel-run's first `n` steps on
    `batches`, with the flags `out` that say what to write."""
    run_cli(tesselc, GPT2 / "model.onnx", *CLI_FLAGS, "-o", tmp_path / "t.tsl")
    np.save(tmp_path / "ids.npy", batches[0])
    np.save(tmp_path / "labels.npy", batches[1])
    run_cli(tessel_run, tmp_path / "t.tsl", "--steps", str(n), "--data",
            f"input_ids={tmp_path / 'ids.npy'}", "--data",
            f"labels={tmp_path / 'labels.npy'}", *out)


def test_losses_equal_cli_and_pytorch(batches, tmp_path, tesselc, tessel_run):
    art = tessel.compile(GPT2 / "model.onnx", train=ADAMW)
    losses = np.array(steps(art, batches, 0, 8), np.float32)
    assert art.steps == 8

    train_cli(tesselc, tessel_run, batches, tmp_path, 8, "--losses",
              tmp_path / "losses.npy")
    assert losses.tobytes() == np.load(tmp_path / "losses.npy").tobytes()

    ref = np.array(json.loads((GPT2 / "train" / "train.json").read_text())
                   ["trajectory"])
    assert np.max(np.abs(losses - ref) / np.abs(ref)) <= 1e-4


def test_checkpoint_resumes_the_training(batches, tmp_path):
    whole = tessel.compile(GPT2 / "model.onnx", train=ADAMW)
    five = steps(whole, batches, 0, 5)

    first = tessel.compile(GPT2 / "model.onnx", train=ADAMW)
    steps(first, batches, 0, 3)
    first.save_checkpoint(tmp_path / "ck")
    first.save(tmp_path / "t.tsl")
    second = tessel.load(tmp_path / "t.tsl")
    second.load_checkpoint(tmp_path / "ck")
    assert second.steps == 3
    assert steps(second, batches, 3, 5) == five[3:]
    name = second.state_names[0]
    assert second.state(name).tobytes() == whole.state(name).tobytes()


def test_export_onnx_equals_cli(batches, tmp_path, tesselc, tessel_run):
    art = tessel.compile(GPT2 / "model.onnx", train=ADAMW)
    steps(art, batches, 0, 2)
    art.export_onnx(tmp_path / "py.onnx")

    train_cli(tesselc, tessel_run, batches, tmp_path, 2, "--export-onnx",
              tmp_path / "cli.onnx")
    assert (tmp_path / "py.onnx").read_bytes() == (tmp_path / "cli.onnx").read_bytes()

    # With external data: the same two files (PATH and PATH.data).
    (tmp_path / "py").mkdir()
    (tmp_path / "cli").mkdir()
    art.export_onnx(tmp_path / "py" / "m.onnx", external=True)
    train_cli(tesselc, tessel_run, batches, tmp_path, 2, "--export-onnx",
              tmp_path / "cli" / "m.onnx", "--export-onnx-external")
    for name in ("m.onnx", "m.onnx.data"):
        assert (tmp_path / "py" / name).read_bytes() == \
            (tmp_path / "cli" / name).read_bytes()


def test_save_weights_equals_cli(batches, tmp_path, tesselc, tessel_run):
    """save_weights() writes what tessel-run --save-weights writes (the
    names and values against PyTorch's: test/Zoo/weights.test)."""
    art = tessel.compile(GPT2 / "model.onnx", train=ADAMW)
    steps(art, batches, 0, 2)
    art.save_weights(tmp_path / "py.safetensors")

    train_cli(tesselc, tessel_run, batches, tmp_path, 2, "--save-weights",
              tmp_path / "cli.safetensors")
    assert (tmp_path / "py.safetensors").read_bytes() == \
        (tmp_path / "cli.safetensors").read_bytes()
    with pytest.raises(tessel.RuntimeError, match="is a directory"):
        art.save_weights(tmp_path)


def test_training_input_errors(batches):
    art = tessel.compile(GPT2 / "model.onnx", train=ADAMW)
    ids, labels = batches
    bad = labels[0].copy()
    bad[0, 0] = 10**6
    with pytest.raises(tessel.InputError, match="labels"):
        art.step({"input_ids": ids[0], "labels": bad})
    with pytest.raises(tessel.InputError, match="not C-contiguous"):
        art.step({"input_ids": np.asfortranarray(ids[0]), "labels": labels[0]})
    inference = tessel.compile(GPT2 / "model.onnx")
    with pytest.raises(tessel.RuntimeError, match="no scalar output 'loss'"):
        inference.step({"input_ids": ids[0]})
    with pytest.raises(tessel.RuntimeError, match="no source model"):
        inference.export_onnx("/tmp/never.onnx")
    with pytest.raises(tessel.RuntimeError, match="trains no tensor of a model"):
        inference.save_weights("/tmp/never.safetensors")


def test_sharded_training_points_to_tessel_run(batches):
    art = tessel.compile(GPT2 / "model.onnx", train=ADAMW, mesh={"dp": 2},
                         plan="dp")
    ids, labels = batches
    with pytest.raises(tessel.RuntimeError, match="step\\(\\) runs artifacts of one rank"):
        art.step({"input_ids": ids[0], "labels": labels[0]})


def test_evaluate(batches):
    """evaluate() runs the evaluation program on the current parameters:
    at initialisation the first batch's loss is the first step's (the
    step's forward, before its update), and it moves no state."""
    art = tessel.compile(GPT2 / "model.onnx", train=dict(ADAMW,
                                                          eval_program=True))
    ids, labels = batches
    first = {"input_ids": ids[0], "labels": labels[0]}
    before = art.state(art.state_names[0]).copy()
    loss = art.evaluate([first])
    assert np.array_equal(art.state(art.state_names[0]), before)
    assert abs(loss - art.step(first)) < 1e-6
    # After a step, the mean over two batches, each evaluated alone.
    two = [first, {"input_ids": ids[1], "labels": labels[1]}]
    mean = art.evaluate(two)
    each = [art.evaluate([b]) for b in two]
    assert abs(mean - sum(each) / 2) < 1e-9
    assert art.steps == 1

    plain = tessel.compile(GPT2 / "model.onnx", train=ADAMW)
    with pytest.raises(RuntimeError, match="has no evaluation program"):
        plain.evaluate([first])
    with pytest.raises(tessel.InputError, match="at least one batch"):
        art.evaluate([])
