"""Tessel from Python: compile, shard, run and train ONNX models.

    import numpy as np, tessel
    art = tessel.compile("model.onnx", mesh={"dp": 2, "tp": 2},
                         plan="plan.yaml", shapes={"input_ids": (1, 128)})
    out = art.run({"input_ids": ids}, ranks=4)   # dict name -> np.ndarray

Everything runs the same code as the command-line tools: ``compile`` is
tesselc's compile driver (in this process; threads may compile at once),
``Artifact.run`` the runtime of
tessel-run (one rank in this process; ``ranks=N`` starts tessel-run's rank
processes), ``schedule`` the library behind ``tesselc --emit=schedule``.
See docs/python.md.
"""

import json as _json
import os as _os
import re as _re
import shutil as _shutil
import subprocess as _subprocess
import sys as _sys
import tempfile as _tempfile
import weakref as _weakref

from . import errors
from .errors import (ClosedError, CompileError, InputError, ParseError,
                     RuntimeError, ScheduleError, TesselError)
# Two extensions, one loaded: _tessel (compiler and runtime; MLIR) where it
# loads, else _tessel_runtime (the runtime alone, no MLIR or LLVM), so that
# artifacts run where only the runtime is installed. Never both: each holds
# the artifact schema, which protobuf registers once per process.
try:
    from . import _tessel as _native
    _COMPILER_ERROR = None
except ImportError as _e:
    from . import _tessel_runtime as _native
    _COMPILER_ERROR = _e
from ._export import export

__version__ = _native.__version__


def _compiler():
    """The compiler extension, or an ImportError that says it is missing."""
    if _COMPILER_ERROR is not None:
        raise ImportError(
            "tessel's compiler extension (_tessel) cannot be loaded "
            f"({_COMPILER_ERROR}): this install runs, trains and evaluates "
            "artifacts; compile them where the compiler is installed") \
            from _COMPILER_ERROR
    return _native


def __getattr__(name):
    # PEP 562: the compiler's classes, loaded with the compiler.
    if name in ("Module", "Schedule"):
        return getattr(_compiler(), name)
    raise AttributeError(f"module 'tessel' has no attribute {name!r}")

__all__ = [
    "compile", "export", "load", "parse", "import_onnx", "list_nodes", "schedule",
    "schedule_names", "Artifact",
    "Module", "Schedule", "TesselError", "CompileError", "ParseError",
    "ScheduleError", "RuntimeError", "InputError", "ClosedError",
]

_EMITS = ("tsl", "mlir", "autodiff", "propagated", "partitioned")
_REPORT_FILE = "report.txt"
# tesselc's flags that print and exit: the command line's, not compile's.
_EXITING_FLAGS = {"help", "help-hidden", "help-list", "help-list-hidden",
                  "version", "print-options", "print-all-options", "h"}


def _tessel_run():
    """The tessel-run that run(ranks=N) starts: $TESSEL_RUN, else the one
    installed with this package."""
    path = _os.environ.get("TESSEL_RUN") or _os.path.join(
        _os.path.dirname(__file__), "bin", "tessel-run")
    if not _os.access(path, _os.X_OK):
        raise RuntimeError(f"tessel-run not found at {path} (set TESSEL_RUN)")
    return path


def _join(value):
    if isinstance(value, (tuple, list)):
        return ",".join(str(v) for v in value)
    return str(value)


def _train_flags(train):
    """train=dict(loss=..., optimizer=..., lr=..., ...) -> tesselc's
    training flags: each key is the flag with '-' for '_'
    (weight_decay -> --weight-decay); True is the bare flag."""
    flags = ["--train"]
    for key, value in train.items():
        flag = "--" + key.replace("_", "-")
        if value is True:
            flags.append(flag)
        elif value is False or value is None:
            continue
        else:
            flags.append(f"{flag}={_join(value)}")
    return flags


def _raise_compile_error(text, model_path):
    text = text.strip()
    m = _re.search(r"^(?:.*?):(\d+):(\d+): error:", text, _re.M)
    if m and str(model_path).endswith(".mlir"):
        raise ParseError(text, int(m.group(1)), int(m.group(2)))
    raise CompileError(text or "tesselc failed")


def compile(model, *, mesh=None, plan=None, shapes=None, train=None,
            weights=None, entry=None, emit="tsl", threads=1, flags=()):
    """Compiles a model with tesselc's driver.

    model:   a path (.onnx, or .mlir Tessel IR), an onnx.ModelProto, or a
             tessel.Module.
    mesh:    {"dp": 2, "tp": 2} (tesselc --mesh dp=2,tp=2).
    plan:    a plan file (YAML/JSON), "dp", or the plan as a dict
             ({"mesh": {...}, "rules": [...]}, docs/plans.md).
    shapes:  {"input_ids": (1, 128)}: static shapes of graph inputs.
    train:   dict(loss="cross_entropy", optimizer="adamw", lr=1e-3, ...):
             compile the training step (tesselc --train --loss ... ; every
             key is a flag of tesselc's training options).
    weights: for a .mlir model: where its weights are (--weights).
    entry:   for a .mlir model with several functions (--entry).
    emit:    "tsl" (default): an Artifact; "mlir", "autodiff",
             "propagated", "partitioned": the IR after that phase, a Module.
    threads: kernel threads of the Artifact's runs.
    flags:   further tesselc flags, e.g. ["--recompute"].

    Raises CompileError (ParseError for IR with line and column) with
    tesselc's message. Warnings go to sys.stderr.
    """
    if emit not in _EMITS:
        raise CompileError(f"emit={emit!r}: expected one of {', '.join(_EMITS)}")
    work = _tempfile.mkdtemp(prefix="tessel-")
    keep = False
    try:
        if isinstance(model, _compiler().Module):
            path = _os.path.join(work, "model.mlir")
            with open(path, "w") as f:
                f.write(model.text(debuginfo=True))
        elif hasattr(model, "SerializeToString"):
            path = _os.path.join(work, "model.onnx")
            with open(path, "wb") as f:
                f.write(model.SerializeToString())
        else:
            path = _os.fspath(model)
        args = []
        if mesh:
            args.append("--mesh=" + ",".join(f"{k}={v}" for k, v in mesh.items()))
        if plan is not None:
            if isinstance(plan, dict):
                plan_path = _os.path.join(work, "plan.json")
                with open(plan_path, "w") as f:
                    _json.dump(plan, f)
                plan = plan_path
            args.append("--plan=" + _os.fspath(plan))
        for name, shape in (shapes or {}).items():
            args.append(f"--shape={name}=" + "x".join(str(d) for d in shape))
        if train:
            args += _train_flags(dict(train))
        if weights is not None:
            args.append("--weights=" + _os.fspath(weights))
        if entry is not None:
            args.append("--entry=" + entry)
        args += list(flags)
        for flag in args:
            if flag.lstrip("-").split("=")[0] in _EXITING_FLAGS:
                raise CompileError(
                    f"{flag} prints and ends the process; run "
                    f"`tesselc {flag}` in a shell instead")
        if emit == "tsl":
            args.append("--report")
            out = _os.path.join(work, "model.tsl")
        else:
            # Locations (the ONNX node names) survive the text.
            args.append("--mlir-print-debuginfo")
            out = ""  # the IR comes back as text
        error, text, reports, warnings = _compiler().compile(args, path, out, emit)
        if error is not None:
            _raise_compile_error(error, path)
        if warnings:
            _sys.stderr.write(warnings)
        if emit != "tsl":
            stage = {"propagated": "propagated",
                     "partitioned": "partitioned"}.get(emit, "import")
            return _compiler().parse(text, "<tesselc --emit=" + emit + ">", stage)
        with open(_os.path.join(out, _REPORT_FILE), "w") as f:
            f.write(reports)
        art = Artifact(out, threads=threads, _owned=work)
        keep = True
        return art
    finally:
        if not keep:
            _shutil.rmtree(work, ignore_errors=True)


def load(path, *, threads=1, verify=True):
    """Opens an artifact directory (tesselc's -o, or Artifact.save)."""
    return Artifact(_os.fspath(path), threads=threads, verify=verify)


def parse(text, filename="<string>"):
    """Parses textual Tessel IR into a Module.

    A syntax or verifier error raises ParseError(message, line, column)."""
    return _compiler().parse(text, filename)


def import_onnx(path, *, mesh=None, plan=None, shapes=None):
    """Imports an ONNX model (a path or an onnx.ModelProto) into Tessel IR,
    annotated from mesh and plan when given (tesselc --emit=mlir)."""
    return compile(path, mesh=mesh, plan=plan, shapes=shapes, emit="mlir")


def schedule(name, stages, microbatches, *, chunks=1, costs=(1, 1, 1),
             step_cost=0.0, p2p_latency=0.0, p2p_bandwidth=0.0,
             message_bytes=0.0):
    """Builds, verifies and simulates a pipeline schedule (gpipe, 1f1b,
    interleaved-1f1b, zb-h1; see schedule_names()), as
    ``tesselc --emit=schedule --schedule=NAME --stages P --microbatches M``.

    costs: (forward, input-gradient backward, weight-gradient backward).
    The result has bubble_fraction, step_time, actions(rank), report(),
    svg(), and shows as a picture in Jupyter."""
    return _compiler().schedule(name, stages, microbatches, chunks, _join(costs),
                            step_cost, p2p_latency, p2p_bandwidth,
                            message_bytes)


def list_nodes(model):
    """What a plan can match in an ONNX model (a path): its graph inputs,
    every node's name and op type, the weights each takes with their
    shapes; the text of `tesselc MODEL --list-nodes`."""
    return _compiler().list_nodes(_os.fspath(model))


def schedule_names():
    """The registered pipeline schedules."""
    return _compiler().schedule_names()


class Artifact:
    """A compiled artifact: one program and weights file per rank.

    run() executes it (one rank here; ranks=N starts tessel-run's N rank
    processes); step() runs one training step of a train=... artifact."""

    def __init__(self, path, *, threads=1, verify=True, _owned=None):
        self._native = _native.RunArtifact(_os.fspath(path), threads, verify)
        self.path = _os.fspath(path)
        self.threads = threads
        self._cleanup = (_weakref.finalize(self, _shutil.rmtree, _owned, True)
                         if _owned else None)

    def __repr__(self):
        return f"<tessel.Artifact {self.path}>"

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    @property
    def num_ranks(self):
        """The ranks the artifact was compiled for (the mesh's size)."""
        return self._native.num_ranks

    @property
    def inputs(self):
        """{name: (dtype, shape)} of the program's inputs (whole tensors)."""
        return {n: (d, tuple(s)) for n, d, s in self._native.inputs()}

    @property
    def outputs(self):
        """{name: (dtype, shape)} of the program's outputs."""
        return {n: (d, tuple(s)) for n, d, s in self._native.outputs()}

    @property
    def steps(self):
        """Training steps run so far (or resumed from a checkpoint)."""
        return self._native.steps

    def run(self, inputs, *, ranks=None):
        """Runs the program on {name: array} and returns {name: np.ndarray}.

        Arrays must be C-contiguous with the program's dtype and shape; they
        are read in place (no copy on the way in), and the outputs are
        NumPy arrays over the runtime's tensors (no copy on the way out).
        ranks=N (the artifact's rank count) starts N rank processes as
        `tessel-run -n N` does and returns rank 0's outputs."""
        n = self.num_ranks if ranks is None else ranks
        if n == 1 and self._native.num_ranks == 1:
            return self._native.run(inputs)
        return self._run_ranks(inputs, n)

    def _run_ranks(self, inputs, n):
        import numpy as np
        if not isinstance(n, int) or n < 1:
            raise InputError(f"ranks must be an integer >= 1, got {n!r}")
        compiled = self.num_ranks
        if n != compiled:
            raise RuntimeError(
                f"{self.path} was compiled for {compiled} rank"
                f"{'' if compiled == 1 else 's'}, but {n} "
                f"{'was' if n == 1 else 'were'} started (ranks={n}); run it "
                f"with ranks={compiled}")
        # The checks of the one-rank run, before any process starts.
        self._native.check_inputs(inputs)
        with _tempfile.TemporaryDirectory(prefix="tessel-ranks-") as tmp:
            cmd = [_tessel_run(), self.path, "-n", str(n),
                   "--threads", str(self.threads)]
            for name, value in inputs.items():
                f = _os.path.join(tmp, f"in{len(cmd)}.npy")
                if not isinstance(value, np.ndarray):
                    value = np.from_dlpack(value)
                np.save(f, value, allow_pickle=False)
                cmd.append(f"--input={name}={f}")
            files = {}
            for i, name in enumerate(self.outputs):
                files[name] = _os.path.join(tmp, f"out{i}.npy")
                cmd.append(f"--output={name}={files[name]}")
            done = _subprocess.run(cmd, capture_output=True, text=True)
            if done.returncode != 0:
                raise RuntimeError(done.stderr.strip() or
                                   f"tessel-run exited with {done.returncode}")
            return {name: np.load(f) for name, f in files.items()}

    def step(self, batch):
        """One training step on {name: array} (inputs and labels); returns
        the loss. The parameters and optimizer states carry over."""
        return self._native.step(batch)

    def evaluate(self, batches):
        """The mean loss over `batches` (an iterable of {name: array}, as
        step() takes them) on the current parameters, without an update:
        the evaluation program that train=dict(..., eval_program=True)
        compiles (tesselc --eval-program; tessel-run --eval)."""
        return self._native.evaluate(list(batches))

    def state(self, name):
        """The current value of state `name` (a parameter or an optimizer
        moment of a training artifact)."""
        return self._native.state(name)

    @property
    def state_names(self):
        return self._native.state_names()

    def save_checkpoint(self, directory):
        """Writes the states after the steps so far (tessel-run --save)."""
        self._native.save_checkpoint(_os.fspath(directory))

    def load_checkpoint(self, directory):
        """Continues from a checkpoint (tessel-run --resume)."""
        self._native.load_checkpoint(_os.fspath(directory))

    def export_onnx(self, path, external=False):
        """Writes the source ONNX model with the trained tensors
        (tessel-run --export-onnx); with `external`, or trained tensors
        over 1 GiB, their bytes go to PATH.data beside it (ONNX external
        data; --export-onnx-external)."""
        self._native.export_onnx(_os.fspath(path), bool(external))

    def save_weights(self, path):
        """Writes the trained parameters, whole, under PyTorch's names (tied
        ones too) to a safetensors file that load_state_dict(strict=True)
        reads (tessel-run --save-weights). Warns for each parameter the
        export holds only in part (the rows the model reads)."""
        import warnings as _warnings
        for note in self._native.save_weights(_os.fspath(path)):
            _warnings.warn(note, stacklevel=2)

    def report(self):
        """What tesselc --report printed for this artifact: per rank, each
        collective with its bytes, and the planned peak memory."""
        try:
            with open(_os.path.join(self.path, _REPORT_FILE)) as f:
                return f.read()
        except OSError:
            return ("no report: this artifact was not compiled by "
                    "tessel.compile (run tesselc --report)")

    def save(self, path):
        """Copies the artifact directory to `path` (replaced whole when it
        holds an artifact, as tesselc -o does)."""
        self._native.num_ranks  # raises ClosedError when closed
        path = _os.fspath(path)
        if _os.path.exists(path):
            if not _os.path.exists(_os.path.join(path, "manifest.pb")):
                raise RuntimeError(f"save: '{path}' exists and is not an "
                                   "artifact; not replacing it")
            _shutil.rmtree(path)
        _shutil.copytree(self.path, path)

    def close(self):
        """Frees the executor and the mapped files; later calls raise
        ClosedError."""
        self._native.close()
        if self._cleanup:
            self._cleanup()
