"""Devices and arrays: ``mlc.cpu()``, ``mlc.cuda(0)``, ``mlc.runtime.array``, ``empty``.

A CPU :class:`NDArray` owns a C-contiguous NumPy array; compiled functions read and write
it in place. ``__dlpack__`` makes it usable from NumPy (``np.from_dlpack``) and PyTorch.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import RuntimeError_

__all__ = ["Device", "cpu", "cuda", "NDArray", "array", "empty", "as_numpy"]


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
    """An n-dimensional array on a device (the course's ``tvm.nd.array``)."""

    def __init__(self, data: np.ndarray, device: Device | None = None):
        self.device = _check_device(device)
        self._data = np.ascontiguousarray(data)

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
        self._data[...] = src
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
    (a :class:`~mlc_mlir.runtime.cuda_device.CudaNDArray` on ``mlc.cuda(i)``)."""
    if isinstance(device, Device) and device.kind == "cuda":
        from .cuda_device import cuda_array, cuda_empty, from_dlpack, is_cuda_array

        if is_cuda_array(data):  # device to device
            src = from_dlpack(data)
            return cuda_empty(src.shape, np.dtype(src.dtype), device).copyfrom(src)
        return cuda_array(np.ascontiguousarray(as_numpy(data)), device)
    return NDArray(np.array(as_numpy(data), copy=True), device)


def empty(shape: tuple[int, ...] | list[int], dtype: str = "float32", device: Device | None = None) -> NDArray:
    """A new uninitialised NDArray."""
    try:
        np_dtype = np.dtype(dtype)
    except TypeError:
        raise RuntimeError_(f"empty: unknown dtype {dtype!r}") from None
    if not all(isinstance(d, (int, np.integer)) and d >= 0 for d in shape):
        raise RuntimeError_(f"empty: shape must be non-negative ints, got {tuple(shape)}")
    if isinstance(device, Device) and device.kind == "cuda":
        from .cuda_device import cuda_empty

        return cuda_empty(tuple(int(d) for d in shape), np_dtype, device)
    return NDArray(np.empty(tuple(int(d) for d in shape), np_dtype), device)


def as_numpy(value: Any) -> np.ndarray:
    """A NumPy view of an NDArray, NumPy array or DLPack-capable object (no copy when possible)."""
    if isinstance(value, NDArray):
        return value._data
    if isinstance(value, np.ndarray):
        return value
    from .cuda_device import is_cuda_array

    if is_cuda_array(value):
        raise RuntimeError_(f"a {type(value).__name__} on a CUDA device was given where host memory is "
                            "needed: copy it to the host (.numpy() / .cpu()) or run a CUDA build")
    if hasattr(value, "__dlpack__"):
        try:
            return np.from_dlpack(value)
        except (TypeError, RuntimeError, BufferError) as exc:
            raise RuntimeError_(f"cannot view {type(value).__name__} through DLPack on the CPU: {exc}") from None
    return np.asarray(value)
