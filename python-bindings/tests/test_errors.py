"""Bad input raises an exception with the tools' message, never crashes the
interpreter: wrong dtype or shape (naming the input and both), a missing or
unknown input, a non-contiguous array, a closed artifact, IR that does not
parse (line and column), options tesselc refuses."""

import numpy as np
import pytest

import tessel
from conftest import MODELS, run_cli

MLP = MODELS / "mlp" / "model.onnx"


@pytest.fixture(scope="module")
def art():
    return tessel.compile(MLP)


@pytest.fixture(scope="module")
def x():
    return np.load(MODELS / "mlp" / "input_x.npy")


def test_wrong_dtype_names_input_and_both(art, x):
    with pytest.raises(tessel.InputError) as e:
        art.run({"x": x.astype(np.float16)})
    assert str(e.value) == "input 'x': expected f32 [8, 64], got f16 [8, 64]"
    with pytest.raises(tessel.InputError) as e:
        art.run({"x": x.astype(np.float64)})
    assert str(e.value) == "input 'x': expected f32 [8, 64], got f64 [8, 64]"
    with pytest.raises(tessel.InputError) as e:
        art.run({"x": x.astype(np.uint8)})
    assert str(e.value) == "input 'x': expected f32 [8, 64], got uint8 [8, 64]"
    with pytest.raises(tessel.InputError,
                       match=r"input 'x': expected f32 \[8, 64\], got i64 \[8, 64\]"):
        art.run({"x": x.astype(np.int64)})


def test_wrong_shape_names_input_and_both(art, x):
    with pytest.raises(tessel.InputError) as e:
        art.run({"x": x[:4].copy()})
    assert str(e.value) == "input 'x': expected f32 [8, 64], got f32 [4, 64]"


def test_missing_and_unknown_inputs(art, x):
    with pytest.raises(tessel.InputError,
                       match=r"missing input 'x' \(f32 \[8, 64\]\)"):
        art.run({})
    with pytest.raises(tessel.InputError,
                       match=r"unknown input 'y' \(the program's inputs: x\)"):
        art.run({"x": x, "y": x})


def test_not_an_array(art):
    with pytest.raises(tessel.InputError, match="expected a NumPy array"):
        art.run({"x": [[1.0] * 64] * 8})


def test_non_contiguous_is_refused(art, x):
    wide = np.zeros((8, 128), np.float32)
    with pytest.raises(tessel.InputError, match="not C-contiguous"):
        art.run({"x": wide[:, ::2]})
    with pytest.raises(tessel.InputError, match="not C-contiguous"):
        art.run({"x": np.asfortranarray(x)})
    # The same values, contiguous, run.
    assert art.run({"x": np.ascontiguousarray(wide[:, ::2])})


def test_closed_artifact(x):
    a = tessel.compile(MLP)
    a.close()
    for call in (lambda: a.run({"x": x}), lambda: a.inputs,
                 lambda: a.num_ranks, lambda: a.save("/tmp/never.tsl")):
        with pytest.raises(tessel.ClosedError, match="is closed"):
            call()


def test_ir_parse_error_has_line_and_column():
    text = "module {\n  func.func @f() {\n    %0 = tessel.bogus\n  }\n}\n"
    with pytest.raises(tessel.ParseError) as e:
        tessel.parse(text)
    assert (e.value.line, e.value.column) == (3, 10)
    assert "<string>:3:10: error:" in str(e.value)


def test_ir_verifier_error_has_line():
    text = "func.func @f(%a: tensor<2xf32>) -> tensor<3xf32> {\n  return %a : tensor<2xf32>\n}\n"
    with pytest.raises(tessel.ParseError) as e:
        tessel.parse(text)
    assert e.value.line == 2


def test_compile_errors_carry_the_cli_message(tmp_path, tesselc):
    cases = [
        dict(mesh={"dp": 0}),
        dict(mesh={"dp": 2}, plan=tmp_path / "missing.yaml"),
        dict(shapes={"nope": (1, 2)}),
        dict(train=dict(optimizer="lion")),
    ]
    flags = [["--mesh", "dp=0"],
             ["--mesh", "dp=2", "--plan", str(tmp_path / "missing.yaml")],
             ["--shape", "nope=1x2"],
             ["--train", "--optimizer", "lion"]]
    for kwargs, f in zip(cases, flags):
        cli = run_cli(tesselc, MLP, *f, "-o", tmp_path / "o.tsl", check=False)
        assert cli.returncode != 0
        with pytest.raises(tessel.CompileError) as e:
            tessel.compile(MLP, **kwargs)
        assert str(e.value) == cli.stderr.strip(), kwargs


def test_missing_model_and_unknown_option():
    with pytest.raises(tessel.CompileError, match="nope.onnx"):
        tessel.compile("nope.onnx")
    with pytest.raises(tessel.CompileError, match="no-such-flag"):
        tessel.compile(MLP, flags=["--no-such-flag"])
    # Flags that would print and exit() are refused, not run.
    for flag in ("--help", "-help-hidden", "--version"):
        with pytest.raises(tessel.CompileError, match="ends the process"):
            tessel.compile(MLP, flags=[flag])
    with pytest.raises(tessel.CompileError, match="ends the process"):
        tessel.compile(MLP, train=dict(help=True))
    # tesselc's options are reset after each call: the next compile is clean.
    assert tessel.compile(MLP).num_ranks == 1


def test_mlir_parse_error_from_compile(tmp_path):
    bad = tmp_path / "bad.mlir"
    bad.write_text("module {\n  func.func @f( {\n}\n")
    with pytest.raises(tessel.ParseError) as e:
        tessel.compile(bad)
    assert e.value.line == 2
