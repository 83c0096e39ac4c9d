"""Devices and arrays: ``mlc.cpu()``, ``mlc.cuda(0)``, ``mlc.runtime.array``, ``empty``.

A CPU :class:`NDArray` owns a C-contiguous NumPy array; compiled functions read and write
it in place. ``__dlpack__`` makes it usable from NumPy (``np.from_dlpack``) and PyTorch.
``array`` and ``empty`` allocate it on a 64-byte boundary (as TVM's NDArray): NumPy's own
arrays start 16 bytes into a cache line here, and half of a kernel's 32-byte vector loads
then straddle two lines (mm_relu 128 in 6x16 tiles: 47.9 us against 44.6 aligned).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import RuntimeError_

__all__ = ["Device", "cpu", "cuda", "NDArray", "array", "empty", "as_numpy", "aligned_empty", "ALIGNMENT"]

#: bytes: the start of every CPU array that ``array`` / ``empty`` allocate is a multiple
ALIGNMENT = 64


def aligned_empty(shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    """An uninitialised C-contiguous NumPy array starting on an ``ALIGNMENT``-byte boundary
    (a view into a slightly larger byte buffer, which it keeps alive)."""
    dtype = np.dtype(dtype)
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    raw = np.empty(nbytes + ALIGNMENT, np.uint8)
    start = -raw.ctypes.data % ALIGNMENT
    return raw[start:start + nbytes].view(dtype).reshape(shape)


@dataclass(frozen=True)
class Device:
    """A device: ``kind`` is ``"cpu"`` or ``"cuda"``."""

    kind: str
    index: int = 0

    def __str__(self) -> str:
        return f"{self.kind}({self.index})"


def cpu(index: int = 0) -> Device:
    """The host CPU."""
    return Device("cpu", index)


def cuda(index: int = 0) -> Device:
    """CUDA GPU ``index`` (arrays on it need a GPU driver)."""
    return Device("cuda", index)


def _check_device(device: Device | None) -> Device:
    device = device or cpu()
    if not isinstance(device, Device):
        raise RuntimeError_(f"device must be mlc.cpu() or mlc.cuda(i), got {device!r}")
    if device.kind != "cpu":
        raise RuntimeError_(f"arrays on {device} are not supported by this runtime: "
                            "only mlc.cpu() arrays exist (CUDA kernels take host arrays)")
    return device


class NDArray:
    """An n-dimensional array on a device (the course's ``tvm.nd.array``).

    Its NumPy array sits in a slot at a fixed offset: the compiled fast entries read it
    there (``mlc_mlir.runtime.fastcall.wrapper_layout``), so a call with NDArrays costs what
    one with NumPy arrays does.
    """

    __slots__ = ("device", "_data", "__weakref__")

    def __init__(self, data: np.ndarray, device: Device | None = None):
        self.device = _check_device(device)
        self._data = np.ascontiguousarray(data)

    @classmethod
    def _wrap(cls, data: np.ndarray, device: Device) -> NDArray:
        """An NDArray owning ``data`` (C-contiguous, fresh) without checks: the executor's outputs."""
        arr = cls.__new__(cls)
        arr.device = device
        arr._data = data
        return arr

    @property
    def shape(self) -> tuple[int, ...]:
        return self._data.shape

    @property
    def dtype(self) -> str:
        return str(self._data.dtype)

    def numpy(self) -> np.ndarray:
        """A NumPy copy of the contents."""
        return self._data.copy()

    def copyfrom(self, source: Any) -> NDArray:
        """Copy ``source`` (array-like of the same shape) into this array."""
        src = as_numpy(source)
        if src.shape != self.shape:
            raise RuntimeError_(f"copyfrom: shape {src.shape} differs from {self.shape}")
        try:
            self._data[...] = src
        except (TypeError, ValueError) as exc:
            raise RuntimeError_(f"copyfrom: cannot copy {src.dtype} data into {self.dtype}: {exc}") from None
        return self

    def __dlpack__(self, *args: Any, **kwargs: Any) -> Any:
        return self._data.__dlpack__(*args, **kwargs)

    def __dlpack_device__(self) -> tuple[int, int]:
        return self._data.__dlpack_device__()

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        return self._data if dtype is None else self._data.astype(dtype)

    def __repr__(self) -> str:
        return f"<mlc.NDArray shape={self.shape} dtype={self.dtype} device={self.device}>\n{self._data}"


def array(data: Any, device: Device | None = None) -> NDArray:
    """Copy ``data`` (NumPy array, list, or anything with ``__dlpack__``) into a new NDArray
    (a :class:`~mlc_mlir.runtime.cuda_device.CudaNDArray` on ``mlc.cuda(i)``).

    Raises:
        RuntimeError_: ``data`` is not array-like (ragged lists, objects) or too large;
            no CUDA device for ``mlc.cuda(i)``.
    """
    if isinstance(device, Device) and device.kind == "cuda":
        # here, not at the top: runtime.cuda_device imports this module
        from .cuda_device import cuda_array, cuda_empty, from_dlpack, is_cuda_array

        if is_cuda_array(data):  # device to device
            src = from_dlpack(data)
            return cuda_empty(src.shape, np.dtype(src.dtype), device).copyfrom(src)
        return cuda_array(np.ascontiguousarray(as_numpy(data)), device)
    src = as_numpy(data)
    if src.dtype.hasobject:
        raise RuntimeError_(f"array: {type(data).__name__} is not numeric array data (dtype {src.dtype})")
    try:
        copy = aligned_empty(src.shape, src.dtype)
        copy[...] = src
        return NDArray(copy, device)
    except MemoryError:
        raise RuntimeError_(f"array: cannot allocate a copy of shape {src.shape} {src.dtype}") from None


def empty(shape: tuple[int, ...] | list[int], dtype: str = "float32", device: Device | None = None) -> NDArray:
    """A new uninitialised NDArray.

    Raises:
        RuntimeError_: an unknown dtype, a shape that is not a sequence of non-negative
            ints, or a size that cannot be allocated.
    """
    try:
        np_dtype = np.dtype(dtype)
    except (TypeError, ValueError, SyntaxError):
        raise RuntimeError_(f"empty: unknown dtype {dtype!r}") from None
    if np_dtype.hasobject or np_dtype.itemsize == 0:
        raise RuntimeError_(f"empty: dtype {dtype!r} is not a numeric type")
    if isinstance(shape, (int, np.integer)):
        shape = (shape,)
    try:
        dims = tuple(shape)
    except TypeError:
        raise RuntimeError_(f"empty: shape must be a sequence of non-negative ints, got {shape!r}") from None
    if not all(isinstance(d, (int, np.integer)) and not isinstance(d, bool) and d >= 0 for d in dims):
        raise RuntimeError_(f"empty: shape must be non-negative ints, got {dims}")
    if isinstance(device, Device) and device.kind == "cuda":
        from .cuda_device import cuda_empty  # here, not at the top: runtime.cuda_device imports this module

        return cuda_empty(tuple(int(d) for d in dims), np_dtype, device)
    try:
        data = aligned_empty(tuple(int(d) for d in dims), np_dtype)
    except (ValueError, MemoryError) as exc:
        raise RuntimeError_(f"empty: cannot allocate shape {dims} of {np_dtype}: {exc}") from None
    return NDArray(data, device)


def as_numpy(value: Any) -> np.ndarray:
    """A NumPy view of an NDArray, NumPy array or DLPack-capable object (no copy when possible).

    Raises:
        RuntimeError_: an object whose ``__dlpack__`` fails or returns no capsule, or
            data NumPy cannot turn into an array.
    """
    if isinstance(value, NDArray):
        return value._data
    if isinstance(value, np.ndarray):
        return value
    from .cuda_device import is_cuda_array  # here, not at the top: runtime.cuda_device imports this module

    if is_cuda_array(value):
        raise RuntimeError_(f"a {type(value).__name__} on a CUDA device was given where host memory is "
                            "needed: copy it to the host (.numpy() / .cpu()) or run a CUDA build")
    if hasattr(value, "__dlpack__"):
        try:
            return np.from_dlpack(value)
        except Exception as exc:  # noqa: BLE001 - the object's own __dlpack__ may raise anything
            raise RuntimeError_(f"cannot view {type(value).__name__} through DLPack on the CPU: "
                                f"{type(exc).__name__}: {exc}") from None
    try:
        return np.asarray(value)
    except (ValueError, TypeError, MemoryError) as exc:
        raise RuntimeError_(f"cannot make an array of {type(value).__name__}: {exc}") from None
