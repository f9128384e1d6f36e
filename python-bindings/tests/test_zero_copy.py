"""NumPy in and out without copies: run() of a 10 MB input reads the array
where it lies, and the outputs are arrays over the runtime's tensors."""

import tracemalloc

import numpy as np
import onnx
from onnx import TensorProto, helper

import tessel

ROWS, COLS = 2560, 1024  # f32: 10 MiB


def relu_model(path):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [ROWS, COLS])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [ROWS, COLS])
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])],
                              "relu", [x], [y])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(model, path)
    return model


def test_ten_megabyte_input_is_not_copied(tmp_path):
    model = relu_model(tmp_path / "relu.onnx")
    art = tessel.compile(model)  # an onnx.ModelProto works as well as a path
    x = np.random.default_rng(0).standard_normal((ROWS, COLS), np.float32)
    assert x.nbytes == 10 * 2**20
    art.run({"x": x})  # warm-up: the arena's pages

    tracemalloc.start()
    out = art.run({"x": x})
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    # The executor read the array's own buffer ...
    assert art._native.input_address("x") == x.ctypes.data
    # ... and nothing copied it on the Python side (NumPy's allocations are
    # traced: a copy of x would be 10 MiB).
    assert peak < 2**20, f"{peak} bytes allocated by Python during run()"
    np.testing.assert_array_equal(out["y"], np.maximum(x, 0))
    # The output is a view of the runtime's tensor, not a copy of it.
    assert not out["y"].flags.owndata
    assert out["y"].flags.c_contiguous


def test_read_only_and_dlpack_inputs(tmp_path):
    art = tessel.compile(relu_model(tmp_path / "relu.onnx"))
    x = np.ones((ROWS, COLS), np.float32)
    x.flags.writeable = False
    assert art.run({"x": x})["y"].sum() == ROWS * COLS
    assert art._native.input_address("x") == x.ctypes.data


def test_outputs_outlive_the_artifact(tmp_path):
    art = tessel.compile(relu_model(tmp_path / "relu.onnx"))
    x = np.full((ROWS, COLS), -1.0, np.float32)
    y = art.run({"x": x})["y"]
    art.close()
    del art
    assert float(y.max()) == 0.0


class OnlyDlpack:
    """An array known only through the DLPack protocol (as a torch.Tensor
    is): what run() reads is its memory, not a copy."""

    def __init__(self, array):
        self.array = array

    def __dlpack__(self, stream=None):
        return self.array.__dlpack__()

    def __dlpack_device__(self):
        return self.array.__dlpack_device__()


def test_dlpack_input_is_not_copied(tmp_path):
    art = tessel.compile(relu_model(tmp_path / "relu.onnx"))
    x = np.random.default_rng(1).standard_normal((ROWS, COLS), np.float32)
    out = art.run({"x": OnlyDlpack(x)})
    assert art._native.input_address("x") == x.ctypes.data
    np.testing.assert_array_equal(out["y"], np.maximum(x, 0))


def test_runs_from_threads(tmp_path):
    """Two threads running one artifact take turns (the GIL is released
    during a run); every result is right."""
    import threading
    art = tessel.compile(relu_model(tmp_path / "relu.onnx"))
    xs = [np.full((ROWS, COLS), float(i), np.float32) for i in range(4)]
    results = {}

    def work(i):
        for _ in range(3):
            results[i] = float(art.run({"x": xs[i]})["y"][0, 0])

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == {i: float(i) for i in range(4)}
