"""``mlc.runtime.load_module(path)``: a library written by ``export_library``, loaded without MLIR.

    rt = mlc.runtime.load_module("mm_relu.so")          # a built module: rt["mm_relu"](a, b, c)
    ex = mlc.runtime.load_module("mlp.so")              # a built graph: an Executable
    vm = mlc.runtime.vm.VirtualMachine(ex, mlc.runtime.cpu())   # or mlc.graph.VirtualMachine
    logits = vm["main"](x)

Needs NumPy and, for code with parallel loops, an OpenMP runtime (``libiomp5`` of the
``intel-openmp`` wheel, a system libomp or ``$MLC_OPENMP_LIB``: :func:`~mlc_mlir.toolchain.openmp_lib`),
loaded only when the library needs it. The library is opened with ``ctypes``, its metadata
(:mod:`.library_format`) gives the signatures, and calls go through the same paths as the
JIT's: the library's C fast entries (when this process lays NumPy arrays out as the
exporting one did) or the checked Python path.
"""

from __future__ import annotations

import ctypes
import functools
import logging
import os
import shutil
import tempfile
from collections.abc import Callable
from typing import Any

import numpy as np

from ..errors import AllocationError, LoweringError, RuntimeError_
from ..toolchain import openmp_lib
from .heap import keep_heap
from .library_format import METADATA_SYMBOL, PY_SLOTS, TABLE_SYMBOL, Metadata, abi_layout, decode
from .module import RuntimeModule
from .ndarray import NDArray
from .vm import CallbackErrors, Executable

__all__ = ["load_module", "LibraryModule"]

log = logging.getLogger(__name__)

#: path -> (device, inode, mtime, size) of each library this process loaded from that path
_loaded: dict[str, tuple[int, int, int, int]] = {}
_ALLOC_GETTER = "__mlc_alloc_flag_address"


class LibraryModule(RuntimeModule):
    """A module loaded from an exported library (``path``); its code lives as long as it does."""

    def __init__(self, path: str, metadata: Metadata, **kwargs: Any):
        super().__init__(**kwargs)
        self.path = path
        self.metadata = metadata

    def get_source(self, fmt: str = "llvm") -> str:
        """A loaded library keeps no sources."""
        raise RuntimeError_(f"get_source({fmt!r}): this module was loaded from {self.path}, which holds "
                            "compiled code only (get_source works on the module mlc.build returned)")

    def _export_library(self, path: str, graph: Any = None) -> None:
        """Exporting a loaded library copies its file."""
        if os.path.abspath(path) != self.path:
            shutil.copyfile(self.path, path)

    def __repr__(self) -> str:
        return f"<mlc.runtime.LibraryModule {self.path} functions={self.functions}>"


@functools.lru_cache(maxsize=1)
def _load_openmp() -> str:
    path = openmp_lib()
    ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)  # its __kmpc_* resolve the library's
    log.debug("OpenMP runtime %s loaded", path)
    return path


def _identity(path: str) -> tuple[int, int, int, int]:
    st = os.stat(path)
    return st.st_dev, st.st_ino, st.st_mtime_ns, st.st_size


def _dlopen(path: str) -> ctypes.CDLL:
    """Open the library; the OpenMP runtime first when its code needs one."""
    keep_heap()
    name = path
    ident = _identity(path)
    if _loaded.get(path, ident) != ident:
        # the dynamic loader hands back the library it already loaded from this path: a file
        # written there since (exported again) is loaded through a copy of its own
        tmp = tempfile.mkdtemp(prefix="mlc-load-")
        name = os.path.join(tmp, os.path.basename(path))
        shutil.copyfile(path, name)
    try:
        try:
            lib = ctypes.CDLL(name, mode=ctypes.RTLD_LOCAL)
        except OSError as exc:
            if "__kmpc_" not in str(exc) and "omp_" not in str(exc):
                raise
            try:
                _load_openmp()
            except LoweringError as omp:
                raise RuntimeError_(f"load_module({path!r}): the library runs parallel loops and needs an "
                                    f"OpenMP runtime: {omp}") from None
            lib = ctypes.CDLL(name, mode=ctypes.RTLD_LOCAL)
    except OSError as exc:
        raise RuntimeError_(f"load_module({path!r}): cannot load it as a shared library: {exc}") from None
    _loaded[path] = ident
    return lib


def _address(lib: ctypes.CDLL, symbol: str) -> int:
    try:
        return ctypes.cast(lib[symbol], ctypes.c_void_p).value or 0
    except AttributeError:
        return 0


def _fill_table(lib: ctypes.CDLL, meta: Metadata) -> bool:
    """Write this process's objects into the library's table; False if its fast entries cannot run here."""
    if not meta.plans or meta.abi is None or meta.abi != abi_layout():
        return False
    capi = [ctypes.cast(getattr(ctypes.pythonapi, n), ctypes.c_void_p).value for n in PY_SLOTS[2:-1]]
    values = [id(np.ndarray), id(None), *capi, id(NDArray), *(id(d) for d in meta.dtypes)]
    table = (ctypes.c_void_p * len(values)).in_dll(lib, TABLE_SYMBOL)
    table[:] = values
    return True


def _alloc_hook(lib: ctypes.CDLL) -> Callable[[], None] | None:
    """After each call: AllocationError if the code could not allocate (the JIT's hook, here)."""
    getter = _address(lib, "_mlir_" + _ALLOC_GETTER)
    if not getter:
        return None
    address = ctypes.c_void_p()
    slots = (ctypes.c_void_p * 1)(ctypes.cast(ctypes.pointer(address), ctypes.c_void_p))
    ctypes.CFUNCTYPE(None, ctypes.c_void_p)(getter)(ctypes.addressof(slots))
    flag = ctypes.c_int64.from_address(address.value)

    def check() -> None:
        failed, flag.value = flag.value, 0
        if failed:
            raise AllocationError(f"compiled code could not allocate an intermediate buffer of {failed} bytes "
                                  f"({failed / 2**30:.1f} GiB): out of memory")

    return check


def load_module(path: str | os.PathLike[str]) -> RuntimeModule | Executable:
    """Load a library written by ``export_library`` (course ``tvm.runtime.load_module``).

    Returns:
        For ``rt.export_library`` (``mlc.build``) a :class:`RuntimeModule`
        (``rt["name"](*arrays)``, ``rt.time_evaluator``); for ``ex.export_library``
        (``mlc.graph.build``) an :class:`~mlc_mlir.runtime.vm.Executable` for
        ``VirtualMachine(ex, mlc.cpu())``.

    A CUDA build's library (``mlc.build(mod, "cuda")``) loads its kernels on GPU 0 through
    ``cuda-python`` (:mod:`.cuda_library`): its functions take CUDA arrays (or NumPy arrays,
    copied), its graphs run in ``VirtualMachine(ex, mlc.cuda(0))``.

    Raises:
        RuntimeError_: no such file, not a library exported by mlc-mlir, a newer format, or
            an OpenMP runtime that the library needs and this machine lacks.
        CudaUnavailable: a CUDA library where ``cuda-python``, the driver or a GPU that
            runs its kernels is missing (the message says which).
    """
    path = os.path.abspath(os.fspath(path))
    if not os.path.isfile(path):
        raise RuntimeError_(f"load_module: no file {path!r}")
    lib = _dlopen(path)
    addr = _address(lib, METADATA_SYMBOL)
    if not addr:
        raise RuntimeError_(f"load_module({path!r}): not a library exported by mlc-mlir (no {METADATA_SYMBOL})")
    meta = decode(ctypes.string_at(addr).decode(), path)
    if meta.cuda is not None:
        from .cuda_library import load_cuda  # it subclasses LibraryModule

        cuda_rt = load_cuda(lib, path, meta)
        if meta.kind == "graph":
            return Executable(cuda_rt, meta.graph_signatures, [], CallbackErrors(), None, None, meta.extent_checks,
                              meta.memory_plan)
        return cuda_rt
    fast = _fill_table(lib, meta)
    if meta.plans and not fast:
        log.info("%s: NumPy's array layout here differs from the exporting process's: calls take the checked "
                 "path", path)
    rt = LibraryModule(path, meta, lookup=lambda name: _address(lib, "_mlir_" + name), signatures=meta.signatures,
                       target=meta.target, after_call=_alloc_hook(lib), keep_alive=[lib],
                       fast_plans=meta.plans if fast else {})
    if meta.kind == "graph":
        return Executable(rt, meta.graph_signatures, [], CallbackErrors(), None, None, meta.extent_checks,
                          meta.memory_plan)
    return rt
