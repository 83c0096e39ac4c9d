"""CUDA device memory and the driver, through NVIDIA's ``cuda-python`` (``cuda.bindings.driver``).

``mlc.runtime.array(x, device=mlc.cuda(0))`` returns a :class:`CudaNDArray`: a buffer in
GPU memory (``cuMemAlloc``) with ``.numpy()``, ``copyfrom`` and DLPack (``kDLCUDA``) both
ways, so ``torch.from_dlpack(arr)`` and ``mlc.runtime.from_dlpack(torch_cuda_tensor)`` share
memory without a copy. Every driver call is checked: a failing call raises
:class:`CudaError` naming the call and the driver's error name.

Without ``cuda-python``, without ``libcuda`` or without a GPU every entry point raises
:class:`CudaUnavailable` saying which. ``pip install 'mlc-mlir[cuda]'`` installs the
binding; the driver comes with the NVIDIA display driver.

Contexts: each device's primary context (the one PyTorch and the CUDA runtime use) is
retained once and made current before each operation. Work goes to :func:`current_stream`
(the legacy default stream unless set with :func:`use_stream`).

Tests without a GPU replace the driver module with :func:`use_driver` (an object with the
same functions, returning ``(CUresult, value...)`` tuples).
"""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import Iterator
from typing import Any

import numpy as np

from ..errors import RuntimeError_
from .dlpack import export_capsule, import_capsule
from .ndarray import as_numpy, cuda

__all__ = ["CudaError", "CudaUnavailable", "CudaNDArray", "driver", "use_driver", "device_count",
           "activate", "current_stream", "use_stream", "cuda_array", "cuda_empty", "from_dlpack",
           "is_cuda_array", "synchronize", "KDL_CUDA"]

KDL_CPU, KDL_CUDA = 1, 2
_INSTALL = "pip install 'mlc-mlir[cuda]' (NVIDIA's cuda-python)"


class CudaError(RuntimeError_):
    """A CUDA driver call failed (the message names the call and the driver's error)."""


class CudaUnavailable(RuntimeError_):
    """No CUDA here: ``cuda-python``, the driver (``libcuda``) or the device is missing."""


class _State:
    override: Any = None
    initialized: Any = None  # the driver module cuInit succeeded on
    contexts: dict[int, Any] = {}
    stream: int = 0


_STATE = _State()


@contextlib.contextmanager
def use_driver(fake: Any) -> Iterator[Any]:
    """Use ``fake`` instead of ``cuda.bindings.driver`` inside the ``with`` (tests)."""
    old = (_STATE.override, _STATE.initialized, _STATE.contexts, _STATE.stream)
    _STATE.override, _STATE.initialized, _STATE.contexts, _STATE.stream = fake, None, {}, 0
    try:
        yield fake
    finally:
        _STATE.override, _STATE.initialized, _STATE.contexts, _STATE.stream = old


def _module() -> Any:
    if _STATE.override is not None:
        return _STATE.override
    try:
        from cuda.bindings import driver as drv
    except ImportError:
        raise CudaUnavailable(f"CUDA arrays and kernels need the CUDA driver binding: {_INSTALL}") from None
    return drv


def _error_name(drv: Any, err: Any) -> str:
    try:
        res = drv.cuGetErrorName(err)
        name = res[1]
        return name.decode() if isinstance(name, bytes) else str(name)
    except Exception:  # noqa: BLE001 - best effort: the code is reported either way
        return f"CUresult {int(err)}"


def call(name: str, *args: Any) -> Any:
    """Call driver function ``name``; its value(s), or :class:`CudaError` on failure."""
    drv = driver()
    result = getattr(drv, name)(*args)
    err = result[0] if isinstance(result, tuple) else result
    if int(err) != 0:
        raise CudaError(f"{name} failed: {_error_name(drv, err)} ({int(err)})")
    if not isinstance(result, tuple) or len(result) == 1:
        return None
    return result[1] if len(result) == 2 else result[1:]


def driver() -> Any:
    """The initialized driver module (``cuInit`` done once).

    Raises:
        CudaUnavailable: no ``cuda-python``, no ``libcuda``, or ``cuInit`` failed.
    """
    drv = _module()
    if _STATE.initialized is drv:
        return drv
    try:
        result = drv.cuInit(0)
    except Exception as exc:  # noqa: BLE001 - cuda-python raises its own loader error type
        raise CudaUnavailable(f"no CUDA driver (libcuda.so.1) could be loaded: no CUDA device can be used "
                              f"here ({type(exc).__name__}: {exc})") from None
    err = result[0] if isinstance(result, tuple) else result
    if int(err) != 0:
        raise CudaUnavailable(f"the CUDA driver found no usable device: cuInit failed with "
                              f"{_error_name(drv, err)}")
    _STATE.initialized = drv
    return drv


def device_count() -> int:
    """Number of CUDA devices; 0 when there is no driver or no binding."""
    try:
        return int(call("cuDeviceGetCount"))
    except CudaUnavailable:
        return 0


def activate(index: int = 0) -> Any:
    """Make device ``index``'s primary context current on this thread; return it.

    Raises:
        CudaUnavailable: no driver, or no device ``index``.
    """
    ctx = _STATE.contexts.get(index)
    if ctx is None:
        count = int(call("cuDeviceGetCount"))
        if not 0 <= index < count:
            raise CudaUnavailable(f"no CUDA device {index}: the driver sees {count} device(s)")
        dev = call("cuDeviceGet", index)
        ctx = call("cuDevicePrimaryCtxRetain", dev)
        _STATE.contexts[index] = ctx
    call("cuCtxSetCurrent", ctx)
    return ctx


def current_stream() -> int:
    """The stream (address) compiled functions and copies use: 0 is the legacy default stream."""
    return _STATE.stream


@contextlib.contextmanager
def use_stream(stream: Any) -> Iterator[None]:
    """Run on ``stream`` (a ``CUstream``, an ``int`` handle, or a ``torch.cuda.Stream``)."""
    handle = getattr(stream, "cuda_stream", stream)
    old, _STATE.stream = _STATE.stream, int(handle)
    try:
        yield
    finally:
        _STATE.stream = old


def synchronize(index: int = 0) -> None:
    """Wait for all work on device ``index``."""
    activate(index)
    call("cuCtxSynchronize")


def _free(drv: Any, ctx: Any, ptr: int) -> None:
    """Finalizer of an owned buffer (errors at interpreter exit are ignored)."""
    try:
        drv.cuCtxSetCurrent(ctx)
        drv.cuMemFree(ptr)
    except Exception:  # noqa: BLE001 - a finalizer must not raise
        pass


class CudaNDArray:
    """An array in GPU memory (C-contiguous). Create it with ``mlc.runtime.array`` /
    ``empty`` on ``mlc.cuda(i)``, or :func:`from_dlpack`; compiled CUDA functions take it
    without copies."""

    def __init__(self, ptr: int, shape: tuple[int, ...], dtype: np.dtype, device: Any, *,
                 owner: Any = None, owned: bool = False):
        self.data_ptr = int(ptr)
        self._shape = tuple(int(d) for d in shape)
        self._dtype = np.dtype(dtype)
        self.device = device
        self._owner = owner  # keeps an imported buffer (DLPack capsule) alive
        if owned:
            self._finalizer = weakref.finalize(self, _free, driver(), activate(device.index), self.data_ptr)

    @property
    def shape(self) -> tuple[int, ...]:
        return self._shape

    @property
    def dtype(self) -> str:
        return str(self._dtype)

    @property
    def ndim(self) -> int:
        return len(self._shape)

    @property
    def nbytes(self) -> int:
        return int(np.prod(self._shape, dtype=np.int64)) * self._dtype.itemsize

    def numpy(self) -> np.ndarray:
        """A NumPy copy of the contents (device to host, after the stream's work)."""
        out = np.empty(self._shape, self._dtype)
        if self.nbytes:
            activate(self.device.index)
            call("cuMemcpyDtoHAsync", out.ctypes.data, self.data_ptr, self.nbytes, current_stream())
            call("cuStreamSynchronize", current_stream())
        return out

    def copyfrom(self, source: Any) -> CudaNDArray:
        """Copy ``source`` (a host array-like, or a CUDA array of the same dtype) into this array."""
        if is_cuda_array(source):
            src = source if isinstance(source, CudaNDArray) else from_dlpack(source)
            if src.shape != self.shape or src.dtype != self.dtype:
                raise RuntimeError_(f"copyfrom: source is {src.shape} {src.dtype}, this array is "
                                    f"{self.shape} {self.dtype}")
            activate(self.device.index)
            if self.nbytes:
                call("cuMemcpyDtoDAsync", self.data_ptr, src.data_ptr, self.nbytes, current_stream())
            return self

        host = np.ascontiguousarray(as_numpy(source), dtype=self._dtype)
        if host.shape != self.shape:
            raise RuntimeError_(f"copyfrom: shape {host.shape} differs from {self.shape}")
        activate(self.device.index)
        if self.nbytes:
            call("cuMemcpyHtoDAsync", self.data_ptr, host.ctypes.data, self.nbytes, current_stream())
            call("cuStreamSynchronize", current_stream())
        return self

    def __dlpack__(self, *, stream: Any = None, max_version: Any = None, dl_device: Any = None,
                   copy: Any = None) -> Any:
        if stream not in (None, -1, 1, 2) and int(stream) != current_stream():
            synchronize(self.device.index)  # the consumer's stream sees finished data
        return export_capsule(self.data_ptr, self._shape, self._dtype, (KDL_CUDA, self.device.index), self)

    def __dlpack_device__(self) -> tuple[int, int]:
        return (KDL_CUDA, self.device.index)

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        raise RuntimeError_(f"a CUDA array ({self.shape} {self.dtype} on {self.device}) is not host memory: "
                            "call .numpy() to copy it to the host")

    def __repr__(self) -> str:
        return f"<mlc.CudaNDArray shape={self.shape} dtype={self.dtype} device={self.device}>"


def is_cuda_array(value: Any) -> bool:
    """Whether ``value`` lives in CUDA memory (a :class:`CudaNDArray` or a DLPack kDLCUDA object)."""
    if isinstance(value, CudaNDArray):
        return True
    dev = getattr(value, "__dlpack_device__", None)
    if dev is None or isinstance(value, np.ndarray):
        return False
    try:
        return int(dev()[0]) == KDL_CUDA
    except Exception:  # noqa: BLE001 - not a DLPack device tuple: not a CUDA array
        return False


def cuda_empty(shape: tuple[int, ...], dtype: np.dtype, device: Any) -> CudaNDArray:
    """An uninitialised array of ``shape``/``dtype`` on ``device`` (``cuMemAlloc``)."""
    activate(device.index)
    nbytes = int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
    ptr = call("cuMemAlloc", max(nbytes, 1))
    return CudaNDArray(int(ptr), shape, dtype, device, owned=True)


def cuda_array(data: np.ndarray, device: Any) -> CudaNDArray:
    """A new array on ``device`` holding a copy of host array ``data``."""
    arr = cuda_empty(data.shape, data.dtype, device)
    return arr.copyfrom(data)


def from_dlpack(obj: Any) -> CudaNDArray:
    """A zero-copy :class:`CudaNDArray` view of a kDLCUDA DLPack object (a ``torch.cuda`` tensor).

    Raises:
        RuntimeError_: ``obj`` is not on a CUDA device, or is not C-contiguous.
    """
    if isinstance(obj, CudaNDArray):
        return obj
    if not is_cuda_array(obj):
        raise RuntimeError_(f"from_dlpack: {type(obj).__name__} is not on a CUDA device")
    kind, index = obj.__dlpack_device__()
    activate(int(index))
    try:
        capsule = obj.__dlpack__(stream=current_stream() or 1)
    except TypeError:
        capsule = obj.__dlpack__()
    ptr, shape, dtype, owner = import_capsule(capsule, want_device=(KDL_CUDA, int(index)))
    return CudaNDArray(ptr, shape, dtype, cuda(int(index)), owner=(owner, obj))

