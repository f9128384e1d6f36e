"""The IR API: import, parse, print, propagate, partition and pass
pipelines give the text tesselc and tessel-opt print."""

import pytest

import tessel
from conftest import MODELS, ROOT, run_cli, tool

MLP = MODELS / "mlp" / "model.onnx"
PLAN = ROOT / "examples" / "plans" / "mlp_tp.yaml"


def cli_ir(tesselc, emit, tmp_path, *flags):
    out = tmp_path / f"{emit}.mlir"
    run_cli(tesselc, MLP, f"--emit={emit}", *flags, "-o", out)
    return out.read_text()


def test_import_equals_emit_mlir(tesselc, tmp_path):
    mod = tessel.import_onnx(MLP, mesh={"tp": 2}, plan=PLAN)
    assert str(mod) == cli_ir(tesselc, "mlir", tmp_path, "--mesh=tp=2",
                              f"--plan={PLAN}")
    assert mod.stage == "import"


def test_propagate_and_partition_equal_the_cli(tesselc, tmp_path):
    mod = tessel.import_onnx(MLP, mesh={"tp": 2}, plan=PLAN)
    # Through text and back: parse(str(mod)) is the same module.
    mod = tessel.parse(str(mod))
    mod.propagate()
    assert str(mod) == cli_ir(tesselc, "propagated", tmp_path, "--mesh=tp=2",
                              f"--plan={PLAN}")
    shardings = [s for _, _, s in mod.ops() if s]
    assert shardings, "propagation annotates ops"
    mod.partition()
    partitioned = cli_ir(tesselc, "partitioned", tmp_path, "--mesh=tp=2",
                         f"--plan={PLAN}")
    assert str(mod) == partitioned
    assert "all_reduce" in partitioned
    # partition() from an unpropagated module runs the whole pipeline.
    again = tessel.import_onnx(MLP, mesh={"tp": 2}, plan=PLAN)
    again.partition()
    assert str(again) == partitioned
    with pytest.raises(tessel.CompileError, match="already partitioned"):
        again.partition()


def test_run_passes_equals_tessel_opt(tmp_path):
    mod = tessel.import_onnx(MLP, mesh={"tp": 2}, plan=PLAN)
    src = tmp_path / "in.mlir"
    src.write_text(str(mod))
    opt = run_cli(tool("tessel-opt"), src,
                  "--pass-pipeline=builtin.module(tessel-split-bias,tessel-propagate)")
    mod.run_passes("tessel-split-bias,tessel-propagate")
    assert str(mod) == opt.stdout
    with pytest.raises(tessel.CompileError, match="no-such-pass"):
        mod.run_passes("no-such-pass")


def test_compile_a_module(tmp_path):
    import numpy as np
    mod = tessel.import_onnx(MLP)
    x = np.load(MODELS / "mlp" / "input_x.npy")
    from_module = tessel.compile(mod).run({"x": x})
    from_onnx = tessel.compile(MLP).run({"x": x})
    for name in from_onnx:
        assert from_module[name].tobytes() == from_onnx[name].tobytes()


def test_compile_emits_each_phase(tesselc, tmp_path):
    for emit in ("propagated", "partitioned"):
        mod = tessel.compile(MLP, mesh={"tp": 2}, plan=PLAN, emit=emit)
        assert mod.stage == emit
        assert str(mod) == cli_ir(tesselc, emit, tmp_path, "--mesh=tp=2",
                                  f"--plan={PLAN}")
    grads = tessel.compile(MLP, emit="autodiff")
    assert str(grads) == cli_ir(tesselc, "autodiff", tmp_path)
    with pytest.raises(tessel.CompileError, match="emit='nope'"):
        tessel.compile(MLP, emit="nope")


def test_list_nodes_equals_cli(tesselc, tmp_path):
    cli = run_cli(tesselc, MLP, "--list-nodes")
    assert tessel.list_nodes(MLP) == cli.stdout
    missing = run_cli(tesselc, tmp_path / "nope.onnx", "--list-nodes",
                      check=False)
    with pytest.raises(tessel.CompileError) as e:
        tessel.list_nodes(tmp_path / "nope.onnx")
    assert str(e.value) == missing.stderr.strip()
