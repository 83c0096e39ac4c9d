"""Memref descriptors for NumPy arrays, without copies, and views back from descriptors.

``mlir.runtime.get_ranked_memref_descriptor`` builds a new ctypes class on every call
(hundreds of microseconds); here the descriptor class is cached per (rank, dtype).
"""

from __future__ import annotations

import ctypes
import functools

import numpy as np
from mlir.runtime import as_ctype, make_nd_memref_descriptor

__all__ = ["descriptor_class", "descriptor", "packed_args", "view", "MLIR_TO_NUMPY", "numpy_dtype"]

#: element type spelling in MLIR -> NumPy dtype
MLIR_TO_NUMPY: dict[str, np.dtype] = {
    "f16": np.dtype("float16"),
    "f32": np.dtype("float32"),
    "f64": np.dtype("float64"),
    "i1": np.dtype("bool"),
    "i8": np.dtype("int8"),
    "i16": np.dtype("int16"),
    "i32": np.dtype("int32"),
    "i64": np.dtype("int64"),
    "index": np.dtype("int64"),
}


def numpy_dtype(mlir_elem: str) -> np.dtype:
    """NumPy dtype of an MLIR element type spelling (``f32`` -> float32)."""
    return MLIR_TO_NUMPY[mlir_elem]


@functools.lru_cache(maxsize=None)
def descriptor_class(rank: int, dtype: np.dtype) -> type[ctypes.Structure]:
    """The ctypes class of a rank-``rank`` memref descriptor of ``dtype`` (cached)."""
    ctype = ctypes.c_bool if dtype == np.dtype("bool") else as_ctype(dtype)
    return make_nd_memref_descriptor(rank, ctype)


def descriptor(arr: np.ndarray) -> ctypes.Structure:
    """A memref descriptor pointing at ``arr``'s data (zero-copy; strides in elements)."""
    desc = descriptor_class(arr.ndim, arr.dtype)()
    ptr = arr.ctypes.data
    desc.allocated = ptr
    desc.aligned = ctypes.cast(ptr, desc._fields_[1][1])
    desc.offset = 0
    if arr.ndim:
        desc.shape[:] = arr.shape
        desc.strides[:] = [s // arr.itemsize for s in arr.strides]
    return desc


def packed_args(arrays: list[np.ndarray]) -> tuple[ctypes.Array, list[object]]:
    """The ``void**`` argument array of an ``_mlir_ciface_`` call, plus the objects to keep alive."""
    keep: list[object] = []
    packed = (ctypes.c_void_p * len(arrays))()
    for i, arr in enumerate(arrays):
        ptr = ctypes.pointer(descriptor(arr))
        pptr = ctypes.pointer(ptr)
        keep += [ptr, pptr]
        packed[i] = ctypes.cast(pptr, ctypes.c_void_p)
    return packed, keep


def view(desc_ptr: ctypes._Pointer, dtype: np.dtype, rank: int) -> np.ndarray:
    """A zero-copy NumPy view of the memref a descriptor pointer describes (offset and strides kept)."""
    desc = desc_ptr[0]
    itemsize = dtype.itemsize
    base = ctypes.cast(desc.aligned, ctypes.c_void_p).value or 0
    base += desc.offset * itemsize
    shape = tuple(desc.shape) if rank else ()
    strides = tuple(s * itemsize for s in desc.strides) if rank else ()
    if any(n == 0 for n in shape):
        return np.empty(shape, dtype=dtype)
    span = 1 + sum((n - 1) * s for n, s in zip(shape, desc.strides)) if rank else 1
    buf = (ctypes.c_char * (span * itemsize)).from_address(base)
    return np.ndarray(shape, dtype=dtype, buffer=buf, strides=strides)
