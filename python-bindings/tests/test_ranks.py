"""run(ranks=N) starts tessel-run's N rank processes and returns rank 0's
outputs: a sharded run on 4 ranks equals one rank, and equals the command
line's `tessel-run -n 4` bit for bit."""

import numpy as np
import pytest

import tessel
from conftest import MODELS, ROOT, assert_close, run_cli

GPT2 = MODELS / "gpt2_tiny"
MEGATRON = ROOT / "examples" / "plans" / "gpt2_megatron.yaml"


@pytest.fixture(scope="module")
def ids():
    return np.load(GPT2 / "input_input_ids.npy")


@pytest.fixture(scope="module")
def one_rank(ids):
    return tessel.compile(GPT2 / "model.onnx").run({"input_ids": ids})


@pytest.mark.parametrize("mesh", [{"dp": 2, "tp": 2}, {"dp": 1, "tp": 4}])
def test_four_ranks_equal_one(mesh, ids, one_rank, tmp_path, tesselc,
                              tessel_run):
    art = tessel.compile(GPT2 / "model.onnx", mesh=mesh, plan=MEGATRON)
    assert art.num_ranks == 4
    out = art.run({"input_ids": ids}, ranks=4)
    (name,) = out
    assert_close(out[name], one_rank[name], 1e-5)

    # The command line's 4 ranks: the same numbers, bit for bit.
    mesh_flag = ",".join(f"{k}={v}" for k, v in mesh.items())
    cli = run_cli(tesselc, GPT2 / "model.onnx", "--mesh", mesh_flag,
                  "--plan", MEGATRON, "--report", "-o", tmp_path / "cli.tsl")
    assert art.report() == cli.stdout  # the collectives and memory, per rank
    art.save(tmp_path / "saved.tsl")
    assert tessel.load(tmp_path / "saved.tsl").report() == cli.stdout
    run_cli(tessel_run, tmp_path / "cli.tsl", "-n", "4", "--input",
            f"input_ids={GPT2 / 'input_input_ids.npy'}", "--output",
            tmp_path / "cli.npy")
    assert out[name].tobytes() == np.load(tmp_path / "cli.npy").tobytes()


def test_plan_as_dict(ids, one_rank):
    plan = {"mesh": {"dp": 2}, "rules": [
        {"input": "input_ids", "split": {"dim": 0, "axes": ["dp"]}}]}
    art = tessel.compile(GPT2 / "model.onnx", plan=plan)
    assert art.num_ranks == 2
    out = art.run({"input_ids": ids})  # ranks: the artifact's
    (name,) = out
    assert_close(out[name], one_rank[name], 1e-5)


def test_wrong_rank_count_is_an_error(ids):
    art = tessel.compile(GPT2 / "model.onnx", mesh={"dp": 2}, plan="dp")
    with pytest.raises(tessel.RuntimeError, match="compiled for 2 ranks"):
        art.run({"input_ids": ids}, ranks=3)


def test_a_rank_failure_names_the_rank(ids, monkeypatch):
    art = tessel.compile(GPT2 / "model.onnx", mesh={"dp": 2}, plan="dp")
    monkeypatch.setenv("TESSEL_TEST_CRASH_RANK", "1")
    with pytest.raises(tessel.RuntimeError, match="rank 1"):
        art.run({"input_ids": ids}, ranks=2)


def test_bad_inputs_of_a_sharded_run(ids):
    """The one-rank run's checks and messages, before any rank starts."""
    art = tessel.compile(GPT2 / "model.onnx", mesh={"dp": 2}, plan="dp")
    with pytest.raises(tessel.InputError) as e:
        art.run({"input_ids": ids.astype(np.int32)})
    assert str(e.value) == ("input 'input_ids': expected i64 [2, 32], got "
                            "i32 [2, 32]")
    with pytest.raises(tessel.InputError,
                       match=r"missing input 'input_ids' \(i64 \[2, 32\]\)"):
        art.run({})
    with pytest.raises(tessel.InputError, match="unknown input 'x'"):
        art.run({"input_ids": ids, "x": ids})
    with pytest.raises(tessel.InputError, match="not C-contiguous"):
        art.run({"input_ids": np.asfortranarray(ids)})
    with pytest.raises(tessel.RuntimeError, match="but 1 was started"):
        art.run({"input_ids": ids}, ranks=1)
