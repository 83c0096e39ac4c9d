"""mlc-mlir: the MLC course's workflow (tensor programs, schedules, graphs, tuning) on upstream MLIR."""

from . import errors, runtime
from .build import build
from .errors import (ArgumentError, BuildError, GraphError, LoweringError, MlcError, ParseError,
                     RuntimeError_, ScheduleError, TEError, TuneError)
from .ir import Function, Module
from .runtime import cpu, cuda, register_func

__all__ = ["build", "Module", "Function", "runtime", "errors", "cpu", "cuda", "register_func",
           "MlcError", "ParseError", "TEError", "ScheduleError", "GraphError", "BuildError",
           "LoweringError", "ArgumentError", "RuntimeError_", "TuneError"]

__version__ = "0.1.0"


_NOT_YET = {
    "frontend": "mlc.frontend (from_fx, the PyTorch FX importer)",
}


def __getattr__(name: str):
    # Layers are imported lazily, so `import mlc_mlir` stays cheap and a layer's import
    # error names that layer.
    import importlib
    import importlib.util

    if name in ("te", "schedule", "graph", "tune", "meta_schedule"):
        return importlib.import_module(f".{name}", __name__)
    if name in _NOT_YET:
        if importlib.util.find_spec(f"{__name__}.{name}") is not None:
            return importlib.import_module(f".{name}", __name__)
        raise MlcError(f"{_NOT_YET[name]} is not implemented in mlc-mlir {__version__} yet")
    if name == "Schedule":
        from .schedule import Schedule
        return Schedule
    raise AttributeError(f"module 'mlc_mlir' has no attribute {name!r}")
