"""mlc-mlir: the MLC course's workflow (tensor programs, schedules, graphs, tuning) on upstream MLIR."""

import logging as _logging

from . import _aliases, errors, log
from .errors import (ArgumentError, BuildError, ExecutionError, GraphError, LoweringError, MlcError, ParseError,
                     RuntimeError_, ScheduleError, TEError, TuneError)

# Imported on first use (module __getattr__ below), so `mlc-opt` and `import mlc_mlir` start
# without loading NumPy and the runtime: name -> (module, attribute or None for the module).
_LAZY = {"runtime": (".runtime", None), "build": (".compiler", None), "Module": (".ir", "Module"),
         "Function": (".ir", "Function"), "cpu": (".runtime", "cpu"), "cuda": (".runtime", "cuda"),
         "register_func": (".runtime", "register_func"),
         # the course's tvm.IRModule({...}) / IRModule.from_expr(func)
         "IRModule": (".ir", "Module")}

__all__ = ["build", "Module", "IRModule", "Function", "runtime", "errors", "cpu", "cuda", "register_func",
           "MlcError", "ParseError", "TEError", "ScheduleError", "GraphError", "BuildError",
           "LoweringError", "ArgumentError", "RuntimeError_", "ExecutionError", "TuneError"]

__version__ = "0.1.0"

# Library logging: silent unless the application configures it or sets MLC_LOG (log.py).
_logging.getLogger(__name__).addHandler(_logging.NullHandler())
log.configure_from_env()


# `mlc.build` is the compiler package mlc_mlir.compiler, which is callable as the function
# mlc_mlir.compiler.build (compiler/__init__.py): `mlc.build(mod)` compiles. Modules that
# moved keep their old import paths (`import mlc_mlir.compiler.pipeline`): _aliases.py.
_aliases.install()


_NOT_YET = {
    "frontend": "mlc.frontend (from_fx, the PyTorch FX importer)",
}


def __getattr__(name: str):
    # Layers are imported lazily, so `import mlc_mlir` stays cheap and a layer's import
    # error names that layer.
    import importlib
    import importlib.util

    if name in _LAZY:
        module, attr = _LAZY[name]
        mod = importlib.import_module(module, __name__)
        value = mod if attr is None else getattr(mod, attr)
        globals()[name] = value
        return value
    if name in ("te", "schedule", "graph", "topi", "tune", "meta_schedule"):
        return importlib.import_module(f".{name}", __name__)
    if name in _NOT_YET:
        if importlib.util.find_spec(f"{__name__}.{name}") is not None:
            return importlib.import_module(f".{name}", __name__)
        raise MlcError(f"{_NOT_YET[name]} is not implemented in mlc-mlir {__version__} yet")
    if name == "Schedule":
        from .schedule import Schedule
        return Schedule
    raise AttributeError(f"module 'mlc_mlir' has no attribute {name!r}")
