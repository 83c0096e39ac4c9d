"""DLPack capsules (``DLManagedTensor``, unversioned) through ctypes: export any buffer,
import a producer's capsule keeping it alive until the importing array dies.

Used for CUDA arrays (``kDLCUDA``); NumPy handles the host case itself.
"""

from __future__ import annotations

import ctypes
import weakref
from typing import Any

import numpy as np

from ..errors import RuntimeError_

__all__ = ["export_capsule", "import_capsule", "DLManagedTensor"]

_KDL_INT, _KDL_UINT, _KDL_FLOAT, _KDL_BOOL = 0, 1, 2, 6


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class DLManagedTensor(ctypes.Structure):
    pass


_DELETER = ctypes.CFUNCTYPE(None, ctypes.POINTER(DLManagedTensor))
DLManagedTensor._fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", _DELETER)]

_CAPSULE_DESTRUCTOR = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
_api = ctypes.pythonapi
_api.PyCapsule_New.restype = ctypes.py_object
_api.PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, _CAPSULE_DESTRUCTOR]
_api.PyCapsule_IsValid.restype = ctypes.c_int
_api.PyCapsule_IsValid.argtypes = [ctypes.py_object, ctypes.c_char_p]
_api.PyCapsule_GetPointer.restype = ctypes.c_void_p
_api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_api.PyCapsule_SetName.restype = ctypes.c_int
_api.PyCapsule_SetName.argtypes = [ctypes.py_object, ctypes.c_char_p]

# Exported tensors alive until their consumer calls the deleter: address -> keep-alive.
_EXPORTED: dict[int, tuple[Any, ...]] = {}


@_DELETER
def _delete(managed: Any) -> None:
    _EXPORTED.pop(ctypes.addressof(managed.contents), None)


def _capsule_destructor(capsule: int) -> None:
    # An unconsumed capsule ("dltensor") still owns the tensor: free it.
    obj = ctypes.cast(capsule, ctypes.py_object)
    if _api.PyCapsule_IsValid(obj, b"dltensor"):
        ptr = _api.PyCapsule_GetPointer(obj, b"dltensor")
        _EXPORTED.pop(ptr, None)


_DESTRUCTOR = _CAPSULE_DESTRUCTOR(_capsule_destructor)


def _dl_dtype(dtype: np.dtype) -> DLDataType:
    codes = {"f": _KDL_FLOAT, "i": _KDL_INT, "u": _KDL_UINT, "b": _KDL_BOOL}
    if dtype.kind not in codes:
        raise RuntimeError_(f"DLPack: dtype {dtype} has no DLPack type code")
    return DLDataType(codes[dtype.kind], dtype.itemsize * 8, 1)


def _np_dtype(dl: DLDataType) -> np.dtype:
    kinds = {_KDL_FLOAT: "f", _KDL_INT: "i", _KDL_UINT: "u", _KDL_BOOL: "b"}
    if dl.lanes != 1 or dl.code not in kinds or dl.bits % 8:
        raise RuntimeError_(f"DLPack: unsupported element type (code {dl.code}, bits {dl.bits}, lanes {dl.lanes})")
    return np.dtype("bool") if dl.code == _KDL_BOOL else np.dtype(f"{kinds[dl.code]}{dl.bits // 8}")


def export_capsule(ptr: int, shape: tuple[int, ...], dtype: np.dtype, device: tuple[int, int],
                   owner: Any) -> Any:
    """A ``"dltensor"`` capsule describing the C-contiguous buffer at ``ptr``; ``owner``
    stays alive until the consumer releases the tensor."""
    managed = DLManagedTensor()
    shape_arr = (ctypes.c_int64 * max(len(shape), 1))(*shape)
    t = managed.dl_tensor
    t.data = ptr
    t.device = DLDevice(*device)
    t.ndim = len(shape)
    t.dtype = _dl_dtype(np.dtype(dtype))
    t.shape = ctypes.cast(shape_arr, ctypes.POINTER(ctypes.c_int64))
    t.strides = ctypes.POINTER(ctypes.c_int64)()  # NULL: C-contiguous
    t.byte_offset = 0
    managed.deleter = _delete
    address = ctypes.addressof(managed)
    _EXPORTED[address] = (managed, shape_arr, owner)
    return _api.PyCapsule_New(address, b"dltensor", _DESTRUCTOR)


def _contiguous(shape: tuple[int, ...], strides: tuple[int, ...] | None) -> bool:
    if strides is None:
        return True
    expect = 1
    for n, s in zip(reversed(shape), reversed(strides)):
        if n != 1 and s != expect:
            return False
        expect *= n
    return True


def _release(address: int) -> None:
    managed = DLManagedTensor.from_address(address)
    if managed.deleter:
        managed.deleter(ctypes.pointer(managed))


class _Imported:
    """Owns a consumed capsule's tensor: calls the producer's deleter when collected."""

    def __init__(self, address: int):
        self._finalizer = weakref.finalize(self, _release, address)


def import_capsule(capsule: Any, *, want_device: tuple[int, int]) -> tuple[int, tuple[int, ...], np.dtype, Any]:
    """Consume a ``"dltensor"`` capsule: ``(data pointer, shape, dtype, owner)``; keep
    ``owner`` alive as long as the memory is used.

    Raises:
        RuntimeError_: a capsule already consumed, on another device, or not C-contiguous.
    """
    if not _api.PyCapsule_IsValid(capsule, b"dltensor"):
        raise RuntimeError_("from_dlpack: not an unconsumed DLPack 'dltensor' capsule")
    address = _api.PyCapsule_GetPointer(capsule, b"dltensor")
    t = DLManagedTensor.from_address(address).dl_tensor
    device = (int(t.device.device_type), int(t.device.device_id))
    if device != want_device:
        raise RuntimeError_(f"from_dlpack: the tensor is on DLPack device {device}, expected {want_device}")
    shape = tuple(int(t.shape[i]) for i in range(t.ndim))
    strides = tuple(int(t.strides[i]) for i in range(t.ndim)) if t.strides else None
    if not _contiguous(shape, strides):
        raise RuntimeError_(f"from_dlpack: only C-contiguous tensors are supported (shape {shape}, "
                            f"strides {strides}); call .contiguous() first")
    dtype = _np_dtype(t.dtype)
    _api.PyCapsule_SetName(capsule, b"used_dltensor")
    return int(t.data or 0) + int(t.byte_offset), shape, dtype, _Imported(address)
