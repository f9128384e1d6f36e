"""The exceptions of the tessel package.

Each carries the message the command-line tools (tesselc, tessel-run) print
for the same mistake.
"""

import builtins


class TesselError(Exception):
    """Base class of every error the tessel package raises."""


class CompileError(TesselError):
    """tesselc refused the model, the plan, the options or the IR."""


class ParseError(CompileError):
    """Textual IR that does not parse or verify.

    ``line`` and ``column`` (1-based) locate the first error in the text.
    """

    def __init__(self, message, line=0, column=0):
        super().__init__(message)
        self.line = line
        self.column = column


class ScheduleError(CompileError):
    """A pipeline schedule that cannot be built or simulated."""


class RuntimeError(TesselError, builtins.RuntimeError):
    """The runtime (tessel-run) failed: loading, running, checkpoints."""


class InputError(RuntimeError, ValueError):
    """An input of run() or step(): missing, unknown, or of the wrong dtype,
    shape or memory layout (the message names the input and both types)."""


class ClosedError(RuntimeError):
    """The artifact was closed."""
