"""mlc-mlir: the MLC course's workflow (tensor programs, schedules, graphs, tuning) on upstream MLIR."""

from . import errors, runtime
from .build import build
from .errors import (ArgumentError, BuildError, GraphError, LoweringError, MlcError, ParseError,
                     ScheduleError, TEError)
from .ir import Function, Module
from .runtime import cpu, cuda, register_func

__all__ = ["build", "Module", "Function", "runtime", "errors", "cpu", "cuda", "register_func",
           "MlcError", "ParseError", "TEError", "ScheduleError", "GraphError", "BuildError",
           "LoweringError", "ArgumentError"]

__version__ = "0.1.0"


def __getattr__(name: str):
    # Sub-packages written as separate layers are imported lazily, so `import mlc_mlir`
    # stays cheap and a layer's import error names that layer.
    import importlib

    lazy = {"te": ".te", "schedule": ".schedule", "graph": ".graph", "tune": ".tune",
            "frontend": ".frontend", "transform": ".transform"}
    if name in lazy:
        return importlib.import_module(lazy[name], __name__)
    if name in ("Schedule",):
        from .schedule import Schedule
        return Schedule
    raise AttributeError(f"module 'mlc_mlir' has no attribute {name!r}")
