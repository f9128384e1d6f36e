"""The runtime stands alone: where the whole extension (_tessel, MLIR) cannot
be loaded, `import tessel` loads _tessel_runtime, which links no MLIR or
LLVM, and artifacts run; compiling says what is missing."""

import pathlib
import subprocess
import sys
import textwrap

import numpy as np

import tessel

from conftest import MODELS, assert_close, run_cli


def extension(name):
    folder = pathlib.Path(tessel.__file__).parent
    found = sorted(folder.glob(name + ".*.so")) + sorted(folder.glob(name + ".so"))
    assert found, f"{name} is not installed beside {tessel.__file__}"
    return found[0]


def needed(lib):
    out = subprocess.run(["readelf", "-d", str(lib)], capture_output=True,
                         text=True, check=True).stdout
    return [line.split("[")[1].rstrip("]") for line in out.splitlines()
            if "(NEEDED)" in line]


def test_runtime_extension_links_no_mlir_or_llvm():
    libs = needed(extension("_tessel_runtime"))
    assert libs, "readelf found no NEEDED entries"
    bad = [l for l in libs if "MLIR" in l or "LLVM" in l]
    assert not bad, f"_tessel_runtime needs {bad}"
    # ... where the compiler half does need them (the check can fail).
    assert any("MLIR" in l or "LLVM" in l
               for l in needed(extension("_tessel"))), needed(extension("_tessel"))


def test_artifact_runs_with_the_compiler_extension_unloadable(tmp_path,
                                                              tesselc):
    model = MODELS / "mlp" / "model.onnx"
    art = tmp_path / "mlp.tsl"
    run_cli(tesselc, model, "-o", art)
    xfile = MODELS / "mlp" / "input_x.npy"
    x = np.load(xfile)
    # A child whose import of tessel._tessel fails, as on a machine without
    # MLIR's libraries: running works, and compiling says what is missing.
    script = textwrap.dedent(f"""
        import sys, numpy as np
        sys.modules["tessel._tessel"] = None   # import raises ImportError
        import tessel
        out = tessel.Artifact({str(art)!r}).run({{"x": np.load({str(xfile)!r})}})
        np.save({str(tmp_path / "y.npy")!r}, next(iter(out.values())))
        assert tessel._native.__name__ == "tessel._tessel_runtime"
        try:
            tessel.compile({str(model)!r})
        except ImportError as e:
            print("compile:", e)
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stderr
    assert "compile:" in done.stdout and "_tessel" in done.stdout, done.stdout
    ref = tessel.Artifact(art).run({"x": x})
    assert_close(np.load(tmp_path / "y.npy"), next(iter(ref.values())), 0.0)
