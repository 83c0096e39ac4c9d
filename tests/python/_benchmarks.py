"""Modules of benchmarks/ (schedules shared by benchmarks and tests), loaded from their files.

benchmarks/ is not a package and the tests use the installed mlc_mlir, so nothing is put
on ``sys.path``: ``load_benchmark("cuda_schedules")`` executes ``benchmarks/cuda_schedules.py``
once per process and returns the module.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def load_benchmark(name: str) -> ModuleType:
    """``benchmarks/<name>.py`` as a module (cached in ``sys.modules`` under ``name``)."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module
