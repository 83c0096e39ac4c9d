"""Loading an exported CUDA library: its kernels through ``cuda-python``, without MLIR.

A library that ``export_library`` wrote for a CUDA build (``mlc.build(mod, "cuda")``,
``mlc.graph.build(mod, "cuda")``) holds the host code, the kernel binaries and forwarders
for the host code's ``mgpu*`` calls (the compiler's ``export_cuda``). :func:`load_cuda`
checks that GPU 0 can run the kernels, fills the library's ``mlc_mgpu_table`` with the
functions of a :class:`~.mgpu.KernelRuntime` (the JIT's ``mgpu*`` callbacks over NVIDIA's
``cuda-python``), loads the kernel images (``mlc_cuda_load``) and returns a module whose
functions are :class:`~.cuda_call.CudaFunction` s, as the JIT's CUDA module: CUDA arrays
or ``torch.cuda`` tensors in place, NumPy arrays through copies, timing with CUDA events.

Without ``cuda-python``, a driver or a GPU (or with a GPU the kernels were not compiled
for) loading raises :class:`~.cuda_device.CudaUnavailable` naming what is missing.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from typing import Any

from ..errors import MlcError, RuntimeError_
from . import cuda_device as cu
from .cuda_call import CudaFunction, cuda_time_evaluator
from .library_format import CUDA_LOAD_SYMBOL, MGPU_TABLE_SYMBOL, PTX_SYMBOL, Metadata
from .loader import LibraryModule
from .mgpu import KernelRuntime
from .module import ProfileResult

__all__ = ["CudaLibraryModule", "load_cuda", "runs_on", "unavailable_reason"]

#: library handle -> the runtime its table points to (one per loaded library: a library
#: opened again shares its table, so its modules share the runtime)
_runtimes: dict[int, KernelRuntime] = {}


def runs_on(arch: str, fmt: str, device: str) -> bool:
    """Whether kernels for ``arch`` (``"sm_90"``, ``"sm_90a"``) in format ``fmt`` (``"bin"``: a
    cubin, ``"isa"``: PTX) run on a ``device`` chip (``"sm_XY"``)."""
    want, have = int(arch[3:].rstrip("a")), int(device[3:])
    if arch.endswith("a"):
        return want == have
    if fmt == "isa":
        return have >= want  # PTX is compiled for the device by the driver
    return have // 10 == want // 10 and have >= want  # cubin: same major, minor at least


def unavailable_reason(arch: str, fmt: str, index: int = 0) -> str | None:
    """Why kernels for ``arch`` cannot run on CUDA device ``index`` (no binding, driver or
    device, another chip), or None."""
    try:
        cu.activate(index)
        attr = cu.driver().CUdevice_attribute
        dev = cu.call("cuDeviceGet", index)
        major = cu.call("cuDeviceGetAttribute", attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev)
        minor = cu.call("cuDeviceGetAttribute", attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev)
    except MlcError as exc:
        return str(exc)
    device = f"sm_{int(major)}{int(minor)}"
    if not runs_on(arch, fmt, device):
        return (f"its kernels were compiled for {arch} ({'PTX' if fmt == 'isa' else 'cubin'}) but GPU {index} is "
                f"{device}: export a build for target='cuda -arch={device}'")
    return None


class CudaLibraryModule(LibraryModule):
    """A CUDA build loaded from an exported library: ``rt["f"](*cuda_arrays)``,
    ``time_evaluator`` with CUDA events, ``get_source("ptx")`` (the PTX the library holds)."""

    def __init__(self, path: str, metadata: Metadata, lib: ctypes.CDLL, runtime: KernelRuntime):
        super().__init__(path, metadata, lookup=lambda name: _address(lib, "_mlir_" + name),
                         signatures=metadata.signatures, target=metadata.target, keep_alive=[lib, runtime])
        self.runtime = runtime
        self._lib = lib
        self._cuda_funcs: dict[str, CudaFunction] = {}

    def __getitem__(self, name: str) -> CudaFunction:  # type: ignore[override]
        if not isinstance(name, str) or name not in self.signatures:
            raise MlcError(f"the loaded module has no public function {name!r}; it has {self.functions}")
        if name not in self._cuda_funcs:
            raw = self._lookup("_mlir_ciface_" + name)
            if not raw:
                raise RuntimeError_(f"{self.path}: the library has no symbol for @{name}")
            fn = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(raw)
            self._cuda_funcs[name] = CudaFunction(self, self.signatures[name], fn, None)
        return self._cuda_funcs[name]

    def time_evaluator(self, name: str, dev: Any = None, *, number: int = 10, repeat: int = 1,
                       min_repeat_ms: float = 0.0) -> Callable[..., ProfileResult]:
        """A function timing ``name`` on the GPU with CUDA events (seconds per call)."""
        return cuda_time_evaluator(self[name], number=number, repeat=repeat, min_repeat_ms=min_repeat_ms)

    def get_source(self, fmt: str = "ptx") -> str:
        """``"ptx"``: the kernels' PTX, kept in the library (it holds no other source)."""
        if fmt == "ptx":
            return ctypes.string_at(_address(self._lib, PTX_SYMBOL)).decode()
        return super().get_source(fmt)

    def __repr__(self) -> str:
        return f"<mlc.runtime.CudaLibraryModule {self.path} ({self.target}) functions={self.functions}>"

    @property
    def imported_modules(self) -> list[Any]:
        """The device code as the course reads it: ``imported_modules[0].get_source()`` (PTX)."""
        return [_DeviceCode(self)]


class _DeviceCode:
    type_key = "cuda"

    def __init__(self, host: CudaLibraryModule):
        self._host = host

    def get_source(self, fmt: str = "ptx") -> str:
        if fmt not in ("", "ptx", "cuda"):
            raise MlcError(f"get_source: the device module has its PTX only ('ptx'), not {fmt!r}")
        return self._host.get_source("ptx")


def _address(lib: ctypes.CDLL, symbol: str) -> int:
    try:
        return ctypes.cast(lib[symbol], ctypes.c_void_p).value or 0
    except AttributeError:
        return 0


def load_cuda(lib: ctypes.CDLL, path: str, meta: Metadata) -> CudaLibraryModule:
    """Set up the CUDA library ``lib`` (opened from ``path``) and load its kernels on GPU 0.

    Raises:
        CudaUnavailable: no ``cuda-python``, no driver, no GPU, or a GPU the kernels were not
            compiled for.
        CudaError: the driver refused a kernel image.
        RuntimeError_: a library whose table names a function this runtime does not have.
    """
    info = meta.cuda
    assert info is not None
    reason = unavailable_reason(info.arch, info.format)
    if reason is not None:
        raise cu.CudaUnavailable(f"load_module({path!r}): the library holds CUDA kernels ({meta.target}), which "
                                 f"need a CUDA GPU: {reason}")
    handle = int(lib._handle)
    runtime = _runtimes.get(handle)
    if runtime is None:
        runtime = KernelRuntime(0)
        missing = [name for name in info.entries if name not in runtime.callbacks]
        if missing:
            raise RuntimeError_(f"load_module({path!r}): the library calls {missing}, which this runtime does not "
                                "provide (export it again with this version of mlc-mlir)")
        table = (ctypes.c_void_p * len(info.entries)).in_dll(lib, MGPU_TABLE_SYMBOL)
        table[:] = [ctypes.cast(runtime.callbacks[name], ctypes.c_void_p).value for name in info.entries]
        _runtimes[handle] = runtime
    load = ctypes.CFUNCTYPE(ctypes.c_int)(_address(lib, CUDA_LOAD_SYMBOL))
    loaded = load()
    runtime.check()  # the driver's error, if loading an image failed there
    if loaded != info.images:
        last_error = lib.mlc_last_error
        last_error.restype = ctypes.c_char_p
        error = (last_error() or b"").decode(errors="replace") if loaded < 0 else ""
        raise RuntimeError_(f"load_module({path!r}): the metadata lists {info.images} kernel image(s), "
                            f"{max(loaded, 0)} loaded{f' ({error})' if error else ''}")
    return CudaLibraryModule(path, meta, lib, runtime)
