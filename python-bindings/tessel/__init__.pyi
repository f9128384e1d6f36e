"""Type stubs of the tessel package (docs/python.md)."""

import os
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np

from .errors import (ClosedError as ClosedError, CompileError as CompileError,
                     InputError as InputError, ParseError as ParseError,
                     RuntimeError as RuntimeError,
                     ScheduleError as ScheduleError,
                     TesselError as TesselError)

__version__: str

_Path = Union[str, os.PathLike]
_Array = Any  # np.ndarray, or any object with __dlpack__ (a torch.Tensor)


class Module:
    """Tessel IR: an MLIR module of the tessel dialect."""

    @property
    def stage(self) -> str:
        """'import', 'propagated' or 'partitioned'."""
    def __str__(self) -> str: ...
    def text(self, debuginfo: bool = False) -> str:
        """The textual IR; with debuginfo, each op's location."""
    def run_passes(self, pipeline: str) -> None:
        """Runs a pass pipeline in tessel-opt's syntax."""
    def propagate(self) -> None:
        """tesselc's pipeline through -tessel-propagate."""
    def partition(self) -> None:
        """The rest of tesselc's pipeline through -tessel-partition."""
    def ops(self) -> List[Tuple[str, str, Optional[str]]]:
        """(op name, location, sharding or None) of every op."""


class Schedule:
    """A verified, simulated pipeline schedule."""

    @property
    def name(self) -> str: ...
    @property
    def stages(self) -> int: ...
    @property
    def microbatches(self) -> int: ...
    @property
    def bubble_fraction(self) -> float:
        """Idle over step time, the mean over ranks."""
    @property
    def rank_bubble_fractions(self) -> List[float]: ...
    @property
    def step_time(self) -> float: ...
    def actions(self, rank: int) -> List[Tuple[str, int, int]]:
        """(kind, stage, microbatch) of rank `rank`'s actions, in order."""
    def report(self, actions: bool = True) -> str:
        """The text tesselc --emit=schedule prints."""
    def text(self) -> str:
        """The schedule's text form (tesselc --save-schedule)."""
    def svg(self) -> str: ...
    def _repr_svg_(self) -> str: ...


class Artifact:
    """A compiled artifact: one program and weights file per rank."""

    path: str
    threads: int

    def __init__(self, path: _Path, *, threads: int = 1,
                 verify: bool = True) -> None: ...
    def __enter__(self) -> "Artifact": ...
    def __exit__(self, *exc: Any) -> None: ...
    @property
    def num_ranks(self) -> int: ...
    @property
    def inputs(self) -> Dict[str, Tuple[str, Tuple[int, ...]]]:
        """{name: (dtype, shape)}, dtype one of f32, i64, i32, bool."""
    @property
    def outputs(self) -> Dict[str, Tuple[str, Tuple[int, ...]]]: ...
    @property
    def steps(self) -> int: ...
    @property
    def state_names(self) -> List[str]: ...
    def run(self, inputs: Mapping[str, _Array], *,
            ranks: Optional[int] = None) -> Dict[str, np.ndarray]:
        """Runs the program; ranks=N starts tessel-run's N rank processes
        and returns rank 0's outputs."""
    def step(self, batch: Mapping[str, _Array]) -> float:
        """One training step; returns the loss."""
    def state(self, name: str) -> np.ndarray: ...
    def save_checkpoint(self, directory: _Path) -> None: ...
    def load_checkpoint(self, directory: _Path) -> None: ...
    def export_onnx(self, path: _Path, external: bool = ...) -> None: ...
    def save_weights(self, path: _Path) -> None: ...
    def report(self) -> str:
        """tesselc --report's text: collectives and planned memory."""
    def save(self, path: _Path) -> None: ...
    def close(self) -> None: ...


def compile(model: Union[_Path, Module, Any], *,
            mesh: Optional[Mapping[str, int]] = None,
            plan: Union[_Path, Mapping[str, Any], None] = None,
            shapes: Optional[Mapping[str, Sequence[int]]] = None,
            train: Optional[Mapping[str, Any]] = None,
            weights: Optional[_Path] = None, entry: Optional[str] = None,
            emit: str = "tsl", threads: int = 1,
            flags: Sequence[str] = ()) -> Any:
    """An Artifact (emit='tsl'), or a Module (emit='mlir', 'autodiff',
    'propagated', 'partitioned')."""
def export(module: Any, args: Sequence[Any], path: _Path, *,
           dynamo: bool = True,
           options: Optional[Mapping[str, Any]] = None) -> _Path:
    """torch.onnx.export, then the module's parameters, buffers, ties and
    requires_grad recorded in the model (metadata 'tessel.parameters')."""
def load(path: _Path, *, threads: int = 1, verify: bool = True) -> Artifact: ...
def parse(text: str, filename: str = "<string>") -> Module: ...
def import_onnx(path: Union[_Path, Any], *,
                mesh: Optional[Mapping[str, int]] = None,
                plan: Union[_Path, Mapping[str, Any], None] = None,
                shapes: Optional[Mapping[str, Sequence[int]]] = None) -> Module: ...
def schedule(name: str, stages: int, microbatches: int, *, chunks: int = 1,
             costs: Sequence[float] = (1, 1, 1), step_cost: float = 0.0,
             p2p_latency: float = 0.0, p2p_bandwidth: float = 0.0,
             message_bytes: float = 0.0) -> Schedule: ...
def schedule_names() -> List[str]: ...
def list_nodes(model: _Path) -> str:
    """tesselc MODEL --list-nodes: what a plan can match."""
