"""Shared fixtures: the repository, the command-line tools the Python
results are compared with, and a runner for them."""

import os
import pathlib
import subprocess

import pytest

ROOT = pathlib.Path(os.environ.get(
    "TESSEL_SRC", pathlib.Path(__file__).resolve().parents[2]))
BIN = pathlib.Path(os.environ.get("TESSEL_BIN_DIR", ROOT / "build" / "bin"))
MODELS = ROOT / "test" / "models"


def tool(name):
    path = BIN / name
    if not os.access(path, os.X_OK):
        pytest.fail(f"{path} is missing: build the tools first "
                    "(scripts/build) or set TESSEL_BIN_DIR")
    return str(path)


def run_cli(*args, check=True):
    """Runs a tool; returns the CompletedProcess (text)."""
    done = subprocess.run([str(a) for a in args], capture_output=True,
                          text=True)
    if check and done.returncode != 0:
        pytest.fail(f"{' '.join(map(str, args))} failed:\n{done.stderr}")
    return done


@pytest.fixture
def tesselc():
    return tool("tesselc")


@pytest.fixture
def tessel_run():
    return tool("tessel-run")


def assert_close(out, ref, tol):
    """max|out - ref| <= tol * max(1, max|ref|), as test/E2E/Inputs/
    compare_npy.py checks the command line's outputs."""
    import numpy as np
    assert out.shape == ref.shape and out.dtype == ref.dtype
    err = float(np.max(np.abs(out.astype(np.float64) - ref.astype(np.float64))))
    bound = tol * max(1.0, float(np.max(np.abs(ref))))
    assert err <= bound, f"max abs error {err:.3e} > bound {bound:.3e}"
