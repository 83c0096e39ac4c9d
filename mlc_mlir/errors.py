"""The project's error hierarchy: one base class, one subclass per layer."""

from __future__ import annotations

__all__ = [
    "MlcError",
    "ParseError",
    "TEError",
    "ScheduleError",
    "GraphError",
    "BuildError",
    "LoweringError",
    "RuntimeError_",
    "ArgumentError",
    "AllocationError",
    "InstallError",
    "TuneError",
    "check",
]


class MlcError(Exception):
    """Base class of every error this project raises for a user mistake."""


class ParseError(MlcError):
    """MLIR text that does not parse or verify."""


class TEError(MlcError):
    """A bad tensor expression (shape, dtype, index)."""


class ScheduleError(MlcError):
    """An illegal or unknown schedule request."""


class GraphError(MlcError):
    """A malformed model graph (shape mismatch, unknown callee, ...)."""


class BuildError(MlcError):
    """A module that cannot be built for the requested target."""


class LoweringError(BuildError):
    """A pass pipeline that failed while lowering a module."""


class RuntimeError_(MlcError):
    """A failure while running compiled code (bad call, failing callback)."""


class ArgumentError(RuntimeError_):
    """Arguments of a compiled function call that do not match its signature."""


class AllocationError(RuntimeError_, MemoryError):
    """Compiled code could not allocate a buffer (``malloc`` returned NULL): out of memory."""


class InstallError(MlcError):
    """An incomplete installation: a dialect definition or runtime library is missing."""


class TuneError(MlcError):
    """A tuning request that cannot be served (bad budget, target, database, space)."""


def check(cond: object, msg: str, error: type[MlcError] = MlcError) -> None:
    """Raise ``error(msg)`` unless ``cond`` holds."""
    if not cond:
        raise error(msg)
